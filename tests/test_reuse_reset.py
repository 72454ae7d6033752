"""POST /v1/reset: a guest returned to a clean state between tenants,
proven by a fresh look, or quarantined (docs/PROTOCOL.md, "Reuse")."""

import os
import secrets
import socket
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__)))
from lib.agentd_test import Daemon, error_code, new_token  # noqa: E402
from lib.exec_util import pid_alive, read_stream, start, wait_exit, wait_until  # noqa: E402

# Prints the pids of a setsid'd sleeper and a double-forked listener (the
# listener's port too), then exits: both leave the exec's process group.
TENANT_LEFTOVERS = r"""
import os, socket, subprocess, sys, time
sleeper = subprocess.Popen(["sleep", "1000"], start_new_session=True)
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen()
        os.write(w, b"%d %d\n" % (os.getpid(), s.getsockname()[1]))
        while True:
            time.sleep(1000)
    os._exit(0)
listener, port = os.read(r, 64).split()
print(sleeper.pid, int(listener), int(port), flush=True)
"""

# A setsid'd loop that keeps double-forking sleepers (each one is handed to
# the daemon, the subreaper, as soon as its parent exits); prints the
# loop's pid once the first sleeper exists, then exits.
ORPHAN_FACTORY = r"""
import os, time
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    os.close(r)
    first = True
    while True:
        if os.fork() == 0:
            if os.fork() == 0:
                os.execvp("sleep", ["sleep", "1000"])
            os._exit(0)
        os.wait()
        if first:
            os.write(w, b"%d\n" % os.getpid())
            first = False
        time.sleep(0.001)
os.close(w)
print(int(os.read(r, 64)), flush=True)
"""


def leave_processes_behind(d, exec_id):
    start(d, exec_id, {"argv": ["python3", "-c", TENANT_LEFTOVERS]})
    wait_exit(d, exec_id)
    sleeper, listener, port = map(int, read_stream(d, exec_id).split())
    assert pid_alive(sleeper) and pid_alive(listener)
    return sleeper, listener, port


def reset(d, body, token=None):
    headers = {"Authorization": "Bearer " + token} if token else None
    return d.json("POST", "/v1/reset", body, auth=token is None, headers=headers)


def port_listens(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        return True
    except ConnectionRefusedError:
        return False


class ResetTest(unittest.TestCase):
    def setUp(self):
        self.d = Daemon()
        self.addCleanup(self.d.close)

    def test_reset_ends_a_setsid_child_and_a_double_forked_listener(self):
        d = self.d
        sleeper, listener, port = leave_processes_behind(d, "tenant-a")
        self.assertTrue(port_listens(port))
        nxt = new_token()
        status, report = reset(d, {"reset_id": "r1", "next": {"token": nxt}})
        self.assertEqual(status, 200, report)
        self.assertTrue(report["clean"], report)
        self.assertEqual(report["remaining"], [])
        self.assertEqual(report["generation"], 1)
        self.assertGreaterEqual(report["killed_processes"], 2)
        # The answer comes after the verification: nothing is left to wait for.
        self.assertFalse(pid_alive(sleeper))
        self.assertFalse(pid_alive(listener))
        self.assertFalse(port_listens(port))

    def test_reset_ends_a_loop_that_keeps_forking_orphans_while_it_is_swept(self):
        d = self.d
        start(d, "factory", {"argv": ["python3", "-c", ORPHAN_FACTORY]})
        wait_exit(d, "factory")
        factory = int(read_stream(d, "factory"))
        # More orphans than the first walk can have seen.
        wait_until(lambda: len(_descendants(d.proc.pid)) >= 20, what="orphans to pile up")
        status, report = reset(d, {"reset_id": "r1", "next": {"token": new_token()}})
        self.assertEqual((status, report["clean"]), (200, True), report)
        self.assertGreaterEqual(report["killed_processes"], 20, report)
        self.assertFalse(pid_alive(factory))
        # Our own walk of /proc, not the daemon's word.
        self.assertEqual(_descendants(d.proc.pid), [])

    def test_the_next_tenant_finds_no_record_of_the_last(self):
        d = self.d
        start(d, "tenant-a-exec", {"argv": ["echo", "secret-of-a"]})
        wait_exit(d, "tenant-a-exec")
        status, before = d.json("GET", "/v1/health", auth=False)
        nxt = new_token()
        status, report = reset(d, {"reset_id": "r1", "next": {"token": nxt, "env": {"T": "b"}}})
        self.assertEqual((status, report["clean"]), (200, True), report)
        old = d.token
        d.token = nxt
        status, body = d.json("GET", "/v1/execs/tenant-a-exec")
        self.assertEqual((status, error_code(body)), (404, "exec_not_found"), body)
        self.assertEqual(body["error"]["generation"], 1, body)
        status, body = d.json("GET", "/v1/execs")
        self.assertEqual(status, 200, body)
        self.assertEqual(body["execs"], [], body)
        # The next tenant's launch env is in force; the old token is not.
        start(d, "tenant-b-exec", {"argv": ["sh", "-c", "echo $T"]})
        wait_exit(d, "tenant-b-exec")
        self.assertEqual(read_stream(d, "tenant-b-exec"), b"b\n")
        d.token = old
        status, body = d.json("GET", "/v1/execs")
        self.assertEqual((status, error_code(body)), (401, "unauthorized"), body)
        status, after = d.json("GET", "/v1/health", auth=False)
        self.assertEqual((after["generation"], before["generation"]), (1, 0))
        self.assertEqual(after["boot_id"], before["boot_id"])
        self.assertEqual(len(after["boot_id"]), 32)
        self.assertEqual(after["state"], "ready")

    def test_a_retried_reset_answers_the_recorded_report(self):
        d = self.d
        old = d.token
        nxt = new_token()
        status, first = reset(d, {"reset_id": "lost-answer", "next": {"token": nxt}})
        self.assertEqual(status, 200, first)
        self.assertFalse(first["replayed"])
        # The allocator lost the answer and retries with the token it had.
        status, again = reset(d, {"reset_id": "lost-answer", "next": {"token": nxt}}, token=old)
        self.assertEqual(status, 200, again)
        self.assertTrue(again["replayed"])
        for key in ("clean", "generation", "killed_processes", "removed", "remaining"):
            self.assertEqual(again[key], first[key], key)
        # No second reset happened: the next tenant's exec survives a retry.
        d.token = nxt
        start(d, "tenant-b", {"argv": ["sleep", "1000"]})
        status, again = reset(d, {"reset_id": "lost-answer"}, token=old)
        self.assertEqual((status, again["generation"]), (200, 1), again)
        status, body = d.json("GET", "/v1/execs/tenant-b")
        self.assertEqual((status, body["state"]), (200, "running"), body)
        d.json("POST", "/v1/execs/tenant-b/kill", {"signal": "KILL"})

    def test_a_retired_token_can_do_nothing_but_read_its_own_report(self):
        d = self.d
        old = d.token
        nxt = new_token()
        self.assertEqual(reset(d, {"reset_id": "mine", "next": {"token": nxt}})[0], 200)
        status, body = reset(d, {"reset_id": "another", "next": {"token": old}}, token=old)
        self.assertEqual((status, error_code(body)), (401, "unauthorized"), body)
        status, body = reset(d, {"reset_id": "mine"}, token=new_token())
        self.assertEqual((status, error_code(body)), (401, "unauthorized"), body)
        status, body = d.json("GET", "/v1/execs", headers={"Authorization": "Bearer " + old},
                              auth=False)
        self.assertEqual((status, error_code(body)), (401, "unauthorized"), body)
        status, body = d.json("POST", "/v1/reset", {"reset_id": "nobody"}, auth=False)
        self.assertEqual((status, error_code(body)), (401, "unauthorized"), body)

    def test_a_reset_without_next_reopens_bootstrap(self):
        d = self.d
        status, report = reset(d, {"reset_id": "r1"})
        self.assertEqual((status, report["clean"]), (200, True), report)
        status, health = d.json("GET", "/v1/health", auth=False)
        self.assertFalse(health["bootstrapped"])
        d.token = new_token()
        status, body = d.json("POST", "/v1/bootstrap", {"token": d.token}, auth=False)
        self.assertEqual(status, 200, body)
        self.assertEqual(d.json("GET", "/v1/execs")[0], 200)

    def test_a_malformed_reset_is_refused_before_anything_changes(self):
        d = self.d
        start(d, "keep", {"argv": ["true"]})
        for body, field in (({}, "reset_id"), ({"reset_id": ""}, "reset_id"),
                            ({"reset_id": "a b"}, "reset_id"),
                            ({"reset_id": "r", "next": {"env": {}}}, "next"),
                            ({"reset_id": "r", "next": "tok"}, "next")):
            status, err = reset(d, body)
            self.assertEqual((status, error_code(err)), (400, "invalid_request"), (body, err))
        self.assertEqual(d.json("GET", "/v1/execs/keep")[0], 200)

    def test_a_guest_that_cannot_be_cleaned_is_quarantined(self):
        d = self.d
        freezer = "/sys/fs/cgroup/freezer"
        if not os.access(os.path.join(freezer, "cgroup.procs"), os.W_OK):
            self.skipTest("needs a writable cgroup v1 freezer (a frozen process ignores SIGKILL)")
        group = os.path.join(freezer, "agentd-test-" + secrets.token_hex(4))
        # The tenant freezes its own child: SIGKILL cannot end it.
        script = ("sleep 1000 & echo $! > %s/cgroup.procs && echo FROZEN > %s/freezer.state "
                  "&& echo $!" % (group, group))
        os.mkdir(group)

        def thaw():
            with open(os.path.join(group, "freezer.state"), "w") as f:
                f.write("THAWED")
            wait_until(lambda: not open(os.path.join(group, "cgroup.procs")).read().strip(),
                       what="the frozen process to end")
            os.rmdir(group)
        self.addCleanup(thaw)
        start(d, "freeze", {"command": script})
        wait_exit(d, "freeze")
        frozen = int(read_stream(d, "freeze"))
        status, report = reset(d, {"reset_id": "q", "next": {"token": new_token()}})
        self.assertEqual(status, 200, report)
        self.assertFalse(report["clean"], report)
        names = [r["name"] for r in report["remaining"]]
        # Frozen between fork and exec it is still "sh": the pid is what counts.
        frozen_item = [n for n in names if n.startswith("pid %d (" % frozen)]
        self.assertEqual(len(frozen_item), 1, report)
        self.assertEqual(report["remaining"][0]["kind"], "process")
        status, health = d.json("GET", "/v1/health", auth=False)
        self.assertEqual((status, health["state"]), (503, "quarantined"), health)
        self.assertIn(frozen_item[0], [r["name"] for r in health["remaining"]])
        for method, path, body in (("GET", "/v1/execs", None),
                                   ("POST", "/v1/bootstrap", {"token": new_token()}),
                                   ("GET", "/v1/fs/list?path=/", None)):
            status, err = d.json(method, path, body)
            self.assertEqual((status, error_code(err)), (503, "quarantined"), (path, err))
        status, _, _ = d.request("GET", "/v1/metrics")
        self.assertEqual(status, 200)
        # Nor can another reset hand the guest on.
        status, err = reset(d, {"reset_id": "q2", "next": {"token": new_token()}})
        self.assertEqual((status, error_code(err)), (503, "quarantined"), err)
        status, again = reset(d, {"reset_id": "q"})
        self.assertEqual((status, again["clean"], again["replayed"]), (200, False, True), again)


class ResetInitModeTest(unittest.TestCase):
    def test_a_reset_spares_the_init_workload(self):
        d = Daemon("--init", "--", "sleep", "1000")
        self.addCleanup(d.close)
        # The workload by its command: the daemon has other children too (its
        # interpreters' self-tests, which end by themselves).
        workload = wait_until(lambda: [p for p in os.listdir("/proc") if p.isdigit() and
                                       _parent(int(p)) == d.proc.pid and
                                       _cmdline(int(p)) == b"sleep\x001000\x00"],
                              what="the workload")
        leave_processes_behind(d, "tenant-a")
        status, report = reset(d, {"reset_id": "r1", "next": {"token": new_token()}})
        self.assertEqual((status, report["clean"]), (200, True), report)
        for pid in workload:
            self.assertTrue(pid_alive(int(pid)), "the --init workload was killed")


def _descendants(root):
    """Every live process beneath `root` now, from our own walk of /proc."""
    children = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            children.setdefault(_parent(int(p)), []).append(int(p))
    out, pending = [], [root]
    while pending:
        for child in children.get(pending.pop(), []):
            out.append(child)
            pending.append(child)
    return out


def _cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read()
    except (FileNotFoundError, ProcessLookupError):
        return b""


def _parent(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
        return None


class ResetTokenFileTest(unittest.TestCase):
    def setUp(self):
        self.dir = os.path.join(os.environ.get("TMPDIR", "/tmp"), "agentd-tf-" + secrets.token_hex(4))
        os.mkdir(self.dir, 0o700)
        self.path = os.path.join(self.dir, "token")
        with open(self.path, "w") as f:
            f.write("first-token\n")
        os.chmod(self.path, 0o600)
        self.d = Daemon("--token-file", self.path, token="first-token", bootstrap=False)
        self.addCleanup(self.d.close)

    def tearDown(self):
        import shutil
        if os.path.isfile(self.dir):
            os.unlink(self.dir)
        shutil.rmtree(self.dir, ignore_errors=True)
        shutil.rmtree(self.dir + ".moved", ignore_errors=True)

    def test_the_next_token_replaces_the_token_file_so_a_restart_keeps_it(self):
        nxt = new_token()
        status, report = reset(self.d, {"reset_id": "r1", "next": {"token": nxt}})
        self.assertEqual((status, report["clean"]), (200, True), report)
        with open(self.path) as f:
            self.assertEqual(f.read().strip(), nxt)
        self.assertEqual(os.stat(self.path).st_mode & 0o077, 0)
        self.d.restart()
        self.d.token = "first-token"
        self.assertEqual(self.d.json("GET", "/v1/execs")[0], 401)
        self.d.token = nxt
        self.assertEqual(self.d.json("GET", "/v1/execs")[0], 200)

    def test_a_reset_without_next_is_refused_with_a_token_file(self):
        status, err = reset(self.d, {"reset_id": "r1"})
        self.assertEqual((status, error_code(err)), (400, "invalid_request"), err)
        self.assertEqual(err["error"]["field"], "next")

    def test_next_is_refused_when_the_token_file_cannot_be_written(self):
        start(self.d, "keep", {"argv": ["true"]})
        os.rename(self.dir, self.dir + ".moved")
        with open(self.dir, "w") as f:  # the file's directory is now a file
            f.write("")
        status, err = reset(self.d, {"reset_id": "r1", "next": {"token": new_token()}})
        self.assertEqual((status, error_code(err)), (500, "io_error"), err)
        self.assertIn(self.path, err["error"]["message"])
        # Nothing changed: the old token and its exec are still there.
        self.assertEqual(self.d.json("GET", "/v1/execs/keep")[0], 200)

    def test_a_token_that_cannot_be_put_in_place_stops_the_reset_after_the_kill(self):
        # The token is staged beside the file before anything changes, and
        # put in place while the processes die. Here both places take the
        # staged temporary but neither can be renamed over (a directory
        # stands at each): the reset stops with only the processes ended.
        start(self.d, "keep", {"argv": ["sleep", "1000"]})
        os.unlink(self.path)
        os.mkdir(self.path)
        record = os.path.join(self.d.state_dir, "rotated-token")
        os.mkdir(record)
        status, err = reset(self.d, {"reset_id": "r1", "next": {"token": new_token()}})
        self.assertEqual((status, error_code(err)), (500, "io_error"), err)
        self.assertIn("stopped after ending the generation's processes", err["error"]["message"])
        self.assertEqual(err["error"]["path"], self.path)
        # The old token is in force, the record is still there, ended by
        # the reset; no temporary is left beside either place.
        status, kept = self.d.json("GET", "/v1/execs/keep")
        self.assertEqual((status, kept["state"], kept.get("killed_by")), (200, "exited", "reset"), kept)
        self.assertEqual(sorted(os.listdir(self.dir)), ["token"])
        self.assertFalse(os.path.exists(record + ".tmp"))
        # Not remembered: the same reset_id is a new attempt once the file
        # can take the token.
        os.rmdir(self.path)
        os.rmdir(record)
        nxt = new_token()
        status, report = reset(self.d, {"reset_id": "r1", "next": {"token": nxt}})
        self.assertEqual((status, report["clean"], report.get("replayed", False)),
                         (200, True, False), report)
        with open(self.path) as f:
            self.assertEqual(f.read().strip(), nxt)


if __name__ == "__main__":
    unittest.main()
