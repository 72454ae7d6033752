"""POST /v1/reset ends the tenant's processes by its generation's cgroup
where the daemon has one, and by the subreaper tree where it has none
(docs/PROTOCOL.md, "Reuse")."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__)))
from lib.agentd_test import AGENTD_BIN, Daemon, new_token  # noqa: E402
from lib.exec_util import pid_alive, read_stream, start, wait_exit, wait_until  # noqa: E402

# A grandchild that left the exec's session and process group (setsid,
# then a second fork whose parent exits): prints its pid, then the exec
# exits and the grandchild sleeps on.
DOUBLE_FORK = r"""
import os, time
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(w, b"%d\n" % os.getpid())
        while True:
            time.sleep(1000)
    os._exit(0)
os.close(w)
print(int(os.read(r, 64)), flush=True)
"""


def cgroup2_path(pid):
    """The process's cgroup2 group ("0::/a/b"), or None once it is gone."""
    try:
        with open("/proc/%d/cgroup" % pid) as f:
            for line in f:
                if line.startswith("0::"):
                    return line[3:].strip()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return ""


def cgroup2_mount():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            if fields[sep + 1] == "cgroup2":
                return fields[4]
    return None


def pid_with_cmdline(argv):
    """The pid (in this PID namespace) of a process whose argv is `argv`, or None."""
    want = ("\0".join(argv) + "\0").encode()
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/cmdline" % name, "rb") as f:
                    if f.read() == want:
                        return int(name)
            except OSError:
                pass
    return None


def leave_grandchild(d, exec_id):
    start(d, exec_id, {"argv": ["python3", "-c", DOUBLE_FORK]})
    wait_exit(d, exec_id)
    pid = int(read_stream(d, exec_id))
    assert pid_alive(pid)
    return pid


def reset(d, reset_id):
    nxt = new_token()
    status, report = d.json("POST", "/v1/reset", {"reset_id": reset_id, "next": {"token": nxt}})
    d.token = nxt
    return status, report


def reset_log(d, reset_id):
    """The daemon's "guest reset" log line of `reset_id` (logged before it answers)."""
    def find():
        for line in d.logs():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("msg") == "guest reset" and rec.get("reset_id") == reset_id:
                return rec
        return None
    return wait_until(find, what="the guest reset log line")


class ResetByCgroupTest(unittest.TestCase):
    def setUp(self):
        self.d = Daemon()
        self.addCleanup(self.d.close)
        status, health = self.d.json("GET", "/v1/health", auth=False)
        self.assertEqual(status, 200, health)
        mode = health["reset_processes"]
        if mode["mode"] != "cgroup":
            # A guest without a writable cgroup2 hierarchy: the fallback
            # class below covers it; say why here.
            self.skipTest("no tenant cgroup here: " + mode.get("cgroup_unavailable", "?"))
        self.mount = cgroup2_mount()

    def in_group(self, pid, generation):
        """Whether `pid` is in the leaf of generation `generation`'s group:
        agentd-tenant-<daemon pid>/g<N>/run, or agentd-<daemon pid>/g<N>/run
        under cgroup2 limits; "-2" and on after the pid where a group of
        that name was left by a dead daemon that had the same pid."""
        path = cgroup2_path(pid) or ""
        return re.search(r"/agentd-(?:tenant-)?%d(?:-\d+)?/g%d/run$"
                         % (self.d.proc.pid, generation), path) is not None

    def test_a_setsid_double_forked_grandchild_runs_in_the_generation_group_and_is_killed_by_it(self):
        d = self.d
        grandchild = leave_grandchild(d, "tenant-a")
        # It left the session and the process group, not the cgroup.
        self.assertTrue(self.in_group(grandchild, 0), cgroup2_path(grandchild))
        group_dir = os.path.dirname(self.mount + cgroup2_path(grandchild))
        status, report = reset(d, "r1")
        self.assertEqual((status, report["clean"]), (200, True), report)
        self.assertGreaterEqual(report["killed_processes"], 1, report)
        self.assertFalse(pid_alive(grandchild))
        # cgroup.kill where the kernel has it (5.14), else freeze and kill.
        has_kill = os.path.exists(os.path.join(os.path.dirname(group_dir), "g1", "cgroup.kill"))
        log = reset_log(d, "r1")
        self.assertEqual(log["processes_by"], "cgroup.kill" if has_kill else "freeze", log)
        # The old generation's group is gone; the next tenant's execs join a new one.
        self.assertFalse(os.path.exists(group_dir))
        start(d, "tenant-b", {"argv": ["python3", "-c", DOUBLE_FORK]})
        wait_exit(d, "tenant-b")
        next_one = int(read_stream(d, "tenant-b"))
        self.addCleanup(os.kill, next_one, signal.SIGKILL)
        self.assertTrue(self.in_group(next_one, 1), cgroup2_path(next_one))

    def test_a_member_of_the_group_outside_the_daemons_process_tree_is_killed(self):
        # Only the kernel's list of the group can find this one: it is the
        # test's child, not beneath the daemon, so no walk of the daemon's
        # process tree reaches it.
        d = self.d
        probe = leave_grandchild(d, "tenant-a")
        leaf = self.mount + cgroup2_path(probe)
        outsider = subprocess.Popen(["sleep", "1000"], start_new_session=True)
        self.addCleanup(outsider.wait)
        self.addCleanup(lambda: outsider.returncode is None and outsider.kill())
        with open(os.path.join(leaf, "cgroup.procs"), "w") as f:
            f.write(str(outsider.pid))
        status, report = reset(d, "r1")
        self.assertEqual((status, report["clean"]), (200, True), report)
        # The reset answered after the group emptied: the outsider has
        # exited, and its real parent (this test) sees SIGKILL.
        self.assertEqual(outsider.poll(), -signal.SIGKILL)
        self.assertFalse(pid_alive(probe))
        self.assertGreaterEqual(report["killed_processes"], 2, report)

    def test_a_crashed_daemons_tenant_group_is_ended_by_its_successors_first_reset(self):
        # After a crash the grandchild is an orphan outside the new daemon's
        # process tree, in the dead daemon's group: only that group finds it.
        # The successor knows the group from its state dir.
        d = self.d
        grandchild = leave_grandchild(d, "tenant-a")
        dead_base = os.path.dirname(os.path.dirname(self.mount + cgroup2_path(grandchild)))
        self.assertIn("agentd-tenant-%d" % d.proc.pid, dead_base)
        d.kill()  # a crash
        d.start()
        status, _ = d.json("POST", "/v1/bootstrap", {"token": d.token}, auth=False)
        self.assertEqual(status, 200)
        self.assertTrue(pid_alive(grandchild))  # the control: the crash did not end it
        status, report = reset(d, "r1")
        self.assertEqual((status, report["clean"]), (200, True), report)
        self.assertGreaterEqual(report["killed_processes"], 1, report)
        self.assertFalse(pid_alive(grandchild))
        self.assertFalse(os.path.exists(dead_base))

    def test_the_report_counts_every_member_the_group_held(self):
        d = self.d
        script = ("i=0; while [ $i -lt 12 ]; do setsid sleep 1000 </dev/null >/dev/null 2>&1 & "
                  "i=$((i+1)); done")
        start(d, "many", {"argv": ["sh", "-c", script]})
        wait_exit(d, "many")
        status, report = reset(d, "r1")
        self.assertEqual((status, report["clean"]), (200, True), report)
        self.assertGreaterEqual(report["killed_processes"], 12, report)
        self.assertIn(reset_log(d, "r1")["processes_by"], ("cgroup.kill", "freeze"))

    def test_limited_and_unlimited_execs_of_a_generation_share_its_group(self):
        d = self.d
        status, health = d.json("GET", "/v1/health", auth=False)
        start(d, "limited", {"argv": ["python3", "-c", DOUBLE_FORK], "pids": 50})
        wait_exit(d, "limited")
        limited = int(read_stream(d, "limited"))
        plain = leave_grandchild(d, "plain")
        if health["limits"]["mechanism"] == "cgroup2":
            # Its own group (pids.max) lies inside the generation's.
            self.assertIn("/g0/e", cgroup2_path(limited))
        else:
            self.assertTrue(self.in_group(limited, 0), cgroup2_path(limited))
        self.assertTrue(self.in_group(plain, 0), cgroup2_path(plain))
        status, report = reset(d, "r1")
        self.assertEqual((status, report["clean"]), (200, True), report)
        self.assertFalse(pid_alive(limited))
        self.assertFalse(pid_alive(plain))

    def test_a_daemon_starting_in_another_pid_namespace_leaves_an_idle_daemons_group_alone(self):
        # Its start-up sweep of dead daemons' groups cannot see this daemon's
        # pid from its namespace; it used to remove the idle generation group,
        # and this daemon's next exec failed to join it (126, ENODEV).
        start(self.d, "before", {"argv": ["true"]})
        self.assertEqual(wait_exit(self.d, "before")["exit_code"], 0)
        if not shutil.which("unshare") or os.geteuid() != 0:
            self.skipTest("needs root and unshare for a PID namespace")
        other = Daemon(wrapper=["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"])
        self.addCleanup(other.close)
        self.addCleanup(other.kill)  # unshare's child goes with it (--kill-child)
        status, _ = other.json("GET", "/v1/health", auth=False)  # its start-up is over
        self.assertEqual(status, 200)
        start(self.d, "after", {"argv": ["true"]})
        obj = wait_exit(self.d, "after")
        self.assertEqual((obj["exit_code"], obj["error"]), (0, None), obj)


class PidNamespaceNeighboursTest(unittest.TestCase):
    def test_two_daemons_that_are_both_pid_1_in_one_cgroup_reset_only_their_own_tenant(self):
        # Both name their base by their own pid, 1; they shared one base
        # (and one generation group), so one's reset ended the other's execs.
        if not shutil.which("unshare") or os.geteuid() != 0:
            self.skipTest("needs root and unshare for a PID namespace")
        wrapper = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]
        daemons = []
        for _ in range(2):
            d = Daemon(wrapper=wrapper)
            self.addCleanup(d.close)
            self.addCleanup(d.kill)
            status, health = d.json("GET", "/v1/health", auth=False)
            self.assertEqual(status, 200)
            if health["reset_processes"]["mode"] != "cgroup":
                self.skipTest("no tenant cgroup here: " +
                              health["reset_processes"].get("cgroup_unavailable", "?"))
            daemons.append(d)
        first, second = daemons
        marker = "%d.%d" % (os.getpid(), id(self))  # sleep's argument, to find it from here
        start(first, "long", {"argv": ["sleep", marker]})
        host_pid = wait_until(lambda: pid_with_cmdline(["sleep", marker]),
                              what="the first daemon's exec to run")
        status, report = reset(second, "r1")
        self.assertEqual((status, report["clean"]), (200, True), report)
        # The reset's answer comes after its group is empty: the first
        # daemon's exec is dead by now if it was part of it.
        self.assertTrue(pid_alive(host_pid))
        status, obj = first.json("GET", "/v1/execs/long")
        self.assertEqual((status, obj["state"]), (200, "running"), obj)


class ResetWithoutCgroupTest(unittest.TestCase):
    def test_with_the_cgroup_turned_off_the_subreaper_tree_ends_a_double_forked_grandchild(self):
        d = Daemon("--reset-cgroup", "off")
        self.addCleanup(d.close)
        status, health = d.json("GET", "/v1/health", auth=False)
        self.assertEqual(health["reset_processes"],
                         {"mode": "subreaper", "cgroup_unavailable": "--reset-cgroup off"})
        grandchild = leave_grandchild(d, "tenant-a")
        self.assertNotIn("agentd-tenant-", cgroup2_path(grandchild) or "")
        status, report = reset(d, "r1")
        self.assertEqual((status, report["clean"]), (200, True), report)
        self.assertGreaterEqual(report["killed_processes"], 1, report)
        self.assertFalse(pid_alive(grandchild))
        self.assertEqual(reset_log(d, "r1")["processes_by"], "subreaper")

    def test_a_bad_reset_cgroup_value_is_refused_at_start(self):
        run = subprocess.run([AGENTD_BIN, "--reset-cgroup", "sometimes"], stdin=subprocess.DEVNULL,
                             capture_output=True)
        self.assertNotEqual(run.returncode, 0)
        self.assertIn(b"reset-cgroup", run.stderr)
        self.assertIn(b"auto or off", run.stderr)


if __name__ == "__main__":
    unittest.main()
