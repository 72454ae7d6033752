"""A hostile workload, run as an exec under a non-root user, against a
daemon started as root the way docs/SECURITY.md recommends (token in a
root-only file, --fs-root): every attempt on the token, the daemon, its
state, another exec and the file root is denied or contained (needs root
to switch users; skipped otherwise)."""

import json
import os
import pwd
import shutil
import signal
import stat
import tempfile
import threading
import time
import unittest

from lib.agentd_test import Daemon, error_code
from lib.exec_util import read_stream, run, start, wait_exit, wait_until
from lib.fs_helpers import member, tar_bytes, url

PROBE = os.path.join(os.path.dirname(__file__), "lib", "hostile_probe.py")
USER = "nobody"


def processes_in_group(pgid):
    """Live (non-zombie) processes whose process group is pgid."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(name))
    return out


def holders_of(path):
    """Pids holding a descriptor on path (also once it is deleted)."""
    out = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            for fd in os.listdir("/proc/%s/fd" % name):
                if os.readlink("/proc/%s/fd/%s" % (name, fd)).startswith(path):
                    out.add(int(name))
        except OSError:
            continue
    return out


class HostileCase(unittest.TestCase):
    """A world-traversable base directory, so the daemon's own modes are
    the only thing between the workload and the state dir and token."""

    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("switching to a non-root exec user needs root")
        cls.user = pwd.getpwnam(USER)
        cls.base = tempfile.mkdtemp(prefix="agentd-hostile-")
        os.chmod(cls.base, 0o755)
        cls.token = "hostile-probe-token-" + os.urandom(8).hex()
        cls.token_file = os.path.join(cls.base, "token")
        fd = os.open(cls.token_file, os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, cls.token.encode() + b"\n")
        os.close(fd)
        cls.root = os.path.join(cls.base, "root")
        cls.outside = os.path.join(cls.base, "outside")
        os.makedirs(cls.root)
        os.makedirs(cls.outside)
        os.chown(cls.root, cls.user.pw_uid, cls.user.pw_gid)
        with open(os.path.join(cls.outside, "secret"), "w") as f:
            f.write("outside-secret")
        cls.probe = os.path.join(cls.base, "probe.py")
        shutil.copy(PROBE, cls.probe)
        os.chmod(cls.probe, 0o644)
        env = dict(os.environ, AGENTD_TOKEN=cls.token)
        cls.daemon = Daemon("--token-file", cls.token_file, "--fs-root", cls.root,
                            "--ack-ttl-sec", "0", token=cls.token, bootstrap=False, env=env,
                            state_dir=os.path.join(cls.base, "state"))

    @classmethod
    def tearDownClass(cls):
        cls.daemon.close()
        shutil.rmtree(cls.base, ignore_errors=True)

    def as_user(self, exec_id, body):
        return run(self.daemon, exec_id, dict(body, user=USER))


class TokenAndDaemonTest(HostileCase):
    def test_every_attempt_on_token_daemon_state_and_other_execs_is_denied(self):
        d = self.daemon
        start(d, "victim", {"command": "echo victim-secret; exec sleep 1000"})
        wait_until(lambda: read_stream(d, "victim") == b"victim-secret\n", what="victim output")
        victim_pid = d.json("GET", "/v1/execs/victim")[1]["pid"]
        spool = os.path.join(d.state_dir, "execs", "exec-victim")
        targets = {"token_reversed": self.token[::-1], "daemon_pid": d.proc.pid, "victim_pid": victim_pid,
                   "token_file": self.token_file, "state_dir": d.state_dir,
                   "victim_spool": os.path.join(spool, "stdout"),
                   "victim_meta": os.path.join(spool, "meta.json"), "port": d.port}
        obj, out, err = self.as_user("probe", {"argv": ["python3", self.probe,
                                                         json.dumps(targets)]})
        self.assertEqual(obj["exit_code"], 0, err)
        report = json.loads(out)
        self.assertEqual(report.pop("uid"), self.user.pw_uid)
        # Under the default --exec-holder on, a holder (the daemon's clone) is
        # the parent, and every attempt on it is denied like those on the daemon.
        self.assertIn(report.pop("parent"), ("daemon", "holder"))
        want = {k: "denied" for k in report}
        for k in ("inherited_fds", "token_in_env", "agentd_vars_in_env", "token_in_argv",
                  "daemon_cmdline"):
            want[k] = "absent"
        self.assertEqual(report, want)
        # The daemon and the victim are untouched, and so is the victim's output.
        self.assertEqual(d.json("GET", "/v1/health", auth=False)[0], 200)
        self.assertEqual(d.json("GET", "/v1/execs/victim")[1]["state"], "running")
        self.assertEqual(read_stream(d, "victim"), b"victim-secret\n")
        d.json("POST", "/v1/execs/victim/kill", {"signal": "KILL"})
        wait_exit(d, "victim")

    def test_state_dir_token_and_spool_modes_are_private(self):
        d = self.daemon
        run(d, "modes", {"argv": ["echo", "x"]})
        st = os.stat(d.state_dir)
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o700)
        exec_dir = os.path.join(d.state_dir, "execs", "exec-modes")
        for path, mode in ((os.path.join(d.state_dir, "execs"), 0o700), (exec_dir, 0o700),
                           (os.path.join(exec_dir, "stdout"), 0o600),
                           (os.path.join(exec_dir, "meta.json"), 0o600)):
            self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), mode, path)
        for name in os.listdir(d.state_dir):
            self.assertEqual(os.stat(os.path.join(d.state_dir, name)).st_uid, 0, name)


class ProcessContainmentTest(HostileCase):
    def test_killed_exec_leaves_no_process_of_its_group(self):
        d = self.daemon
        start(d, "spread", {"user": USER, "command":
                            "sleep 1000 & (sleep 1000 &); sh -c 'sleep 1000 & wait' & "
                            "echo started; wait"})
        wait_until(lambda: read_stream(d, "spread") == b"started\n", what="children")
        pid = d.json("GET", "/v1/execs/spread")[1]["pid"]
        wait_until(lambda: len(processes_in_group(pid)) >= 5, what="the group to fork")
        d.json("POST", "/v1/execs/spread/kill", {"signal": "TERM", "grace_sec": 1})
        wait_exit(d, "spread")
        wait_until(lambda: processes_in_group(pid) == [], timeout=10, what="the group to die")

    def test_acked_exec_leaves_no_background_process(self):
        # Regression: a background process that let go of the output streams
        # outlived its exec's ack (the exec was exited, nothing killed it).
        d = self.daemon
        obj, out, _ = self.as_user("bg", {"command":
                                          "nohup sleep 1000 >/dev/null 2>&1 & echo $!"})
        self.assertEqual(obj["exit_code"], 0)
        background = int(out)
        self.assertIn(background, processes_in_group(obj["pid"]))
        s, acked = d.json("POST", "/v1/execs/bg/ack")
        self.assertEqual((s, acked["acked"]), (200, True))
        wait_until(lambda: processes_in_group(obj["pid"]) == [], timeout=10,
                   what="the background process to die at the ack")

    def test_released_spool_file_is_not_held_by_a_leftover_process(self):
        # As root the workload can open its own spool file; the ack's kill of
        # its group closes that descriptor, so the space comes back.
        d = self.daemon
        spool = os.path.join(d.state_dir, "execs", "exec-holder", "stdout")
        obj, out, _ = run(d, "holder", {"command":
                                        "head -c 4000000 /dev/zero; "
                                        "(exec 3<%s; exec sleep 1000) >/dev/null 2>&1 &" % spool})
        self.assertEqual(obj["stdout_bytes"], 4000000)
        wait_until(lambda: holders_of(spool), what="the workload to open the spool")
        d.json("POST", "/v1/execs/holder/ack")
        wait_until(lambda: d.json("GET", "/v1/execs/holder")[0] == 410, what="release")
        wait_until(lambda: not holders_of(spool), timeout=10, what="the spool to be let go")
        # The record's directory goes once the group is gone (not before the
        # release answers 410, and not necessarily with it).
        wait_until(lambda: not os.path.exists(os.path.dirname(spool)), timeout=10,
                   what="the released exec's directory to be removed")

    def test_a_non_root_workload_cannot_open_its_own_spool(self):
        spool = os.path.join(self.daemon.state_dir, "execs", "exec-own", "stdout")
        obj, out, err = self.as_user("own", {"command": "cat %s; echo rc=$?" % spool})
        self.assertIn(b"Permission denied", err)
        self.assertTrue(out.endswith(b"rc=1\n"), out)


class FsRootEscapeTest(HostileCase):
    """The workload plants links and races renames inside --fs-root; the
    file API run by the harness never reaches outside."""

    planted = 0

    def setUp(self):
        script = ("cd %s && ln -s / abs && ln -s .. up && ln -s ../outside out && "
                  "ln -s /proc/self/root magic && ln -s ../outside/secret secret-link && "
                  "mkdir -p d && ln -s ../../outside d/deep && "
                  "(ln %s/secret hard 2>/dev/null || echo refused)" % (self.root, self.outside))
        FsRootEscapeTest.planted += 1
        obj, out, err = self.as_user("plant-%d" % self.planted, {"command": script})
        self.assertEqual(obj["exit_code"], 0, err)
        self.hardlink_refused = out == b"refused\n"

    def tearDown(self):
        self.assertEqual(sorted(os.listdir(self.outside)), ["secret"])
        with open(os.path.join(self.outside, "secret")) as f:
            self.assertEqual(f.read(), "outside-secret")
        for name in os.listdir(self.root):
            path = os.path.join(self.root, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)

    def p(self, *parts):
        return os.path.join(self.root, *parts)

    def test_planted_links_do_not_lead_out_for_reads_writes_or_trees(self):
        d = self.daemon
        for path in (self.p("abs", "etc", "passwd"), self.p("up", "outside", "secret"),
                     self.p("out", "secret"), self.p("magic", "etc", "passwd"),
                     self.p("secret-link"), self.p("d", "deep", "secret")):
            s, _, body = d.request("GET", url("/v1/fs/file", path=path))
            self.assertEqual((s, error_code(json.loads(body))), (400, "unsafe_path"), path)
            s, _, body = d.request("PUT", url("/v1/fs/file", path=path), b"overwritten")
            self.assertEqual((s, error_code(json.loads(body))), (400, "unsafe_path"), path)
        for path in (self.p("out"), self.p("d", "deep"), self.p("up")):
            s, b = d.json("PUT", url("/v1/fs/tar", path=path),
                          tar_bytes([(member("planted"), b"x")]))
            self.assertEqual((s, error_code(b)), (400, "unsafe_path"), path)
            s, _, body = d.request("GET", url("/v1/fs/tar", path=path))
            self.assertNotEqual(s, 200, path)
        s, _, archive = d.request("GET", url("/v1/fs/tar", path=self.root))
        self.assertEqual(s, 200)
        self.assertNotIn(b"outside-secret", archive)
        self.assertTrue(self.hardlink_refused, "fs.protected_hardlinks is off: a workload "
                        "can hard-link files it cannot write into the root")

    def test_racing_a_directory_against_a_symlink_never_reaches_outside(self):
        d = self.daemon
        os.makedirs(self.p("race"))
        with open(self.p("race", "secret"), "w") as f:
            f.write("inside")
        os.chown(self.p("race"), self.user.pw_uid, self.user.pw_gid)
        start(d, "racer", {"user": USER, "timeout_sec": 60, "command":
                           "cd %s; while :; do mv race real; ln -s ../outside race; "
                           "rm race; mv real race; done" % self.root})
        seen = {"inside": 0, "refused": 0}
        try:
            end = time.monotonic() + 3
            while time.monotonic() < end:
                s, _, body = d.request("GET", url("/v1/fs/file", path=self.p("race", "secret")))
                if s == 200:
                    self.assertEqual(body, b"inside")
                    seen["inside"] += 1
                else:
                    self.assertIn(s, (400, 404), body)
                    seen["refused"] += 1
                s, _, body = d.request("PUT", url("/v1/fs/file", path=self.p("race", "new")),
                                       b"planted")
                self.assertIn(s, (200, 400, 404), body)
        finally:
            d.json("POST", "/v1/execs/racer/kill", {"signal": "KILL"})
            wait_exit(d, "racer")
        self.assertGreater(sum(seen.values()), 20, seen)


if __name__ == "__main__":
    unittest.main()
