"""What a child gets: environment layers, identity, session, descriptors,
signal state."""

import grp
import os
import pwd
import shutil
import subprocess
import unittest

from lib.agentd_test import Daemon, DaemonTestCase, error_code
from lib.exec_util import run

TEST_USER = "agentd-test-user"
TEST_GROUP = "agentd-test-grp"


def ensure_test_user():
    """Creates the test user and a supplementary group listing it (root only)."""
    try:
        grp.getgrnam(TEST_GROUP)
    except KeyError:
        subprocess.run(["groupadd", TEST_GROUP], check=True)
    try:
        pwd.getpwnam(TEST_USER)
    except KeyError:
        subprocess.run(["useradd", "-M", "-d", "/home/" + TEST_USER, "-s", "/bin/sh", "-G",
                        TEST_GROUP, TEST_USER], check=True)
    if TEST_USER not in grp.getgrnam(TEST_GROUP).gr_mem:
        subprocess.run(["usermod", "-a", "-G", TEST_GROUP, TEST_USER], check=True)
    return pwd.getpwnam(TEST_USER), grp.getgrnam(TEST_GROUP)


def env_of(output):
    return dict(line.split("=", 1) for line in output.decode().split("\0") if "=" in line)


class EnvironmentTest(unittest.TestCase):
    def test_layers_daemon_minus_agentd_then_launch_then_request(self):
        daemon_env = {"PATH": os.environ["PATH"], "DAEMON_ONLY": "d", "SHARED": "daemon",
                      "KEEP_ME": "k", "AGENTD_TOKEN": "sekrit-token", "AGENTD_OTHER": "x"}
        with Daemon(env=daemon_env, token="sekrit-token", bootstrap=False) as d:
            s, _ = d.json("POST", "/v1/bootstrap",
                          {"token": "sekrit-token",
                           "env": {"SHARED": "launch", "LAUNCH_ONLY": "l", "BOTH": "launch"}},
                          auth=False)
            self.assertEqual(s, 200)
            obj, out, _ = run(d, "env-1", {"argv": ["env", "-0"],
                                           "env": {"BOTH": "request", "KEEP_ME": None,
                                                   "NEW": "n"}})
            env = env_of(out)
            self.assertEqual(env.get("DAEMON_ONLY"), "d")
            self.assertEqual(env.get("SHARED"), "launch")
            self.assertEqual(env.get("LAUNCH_ONLY"), "l")
            self.assertEqual(env.get("BOTH"), "request")
            self.assertEqual(env.get("NEW"), "n")
            self.assertNotIn("KEEP_ME", env)
            self.assertEqual([k for k in env if k.startswith("AGENTD_")], [])
            self.assertNotIn(b"sekrit-token", out)
            # Nor in anything else the child can see of itself.
            obj, out, _ = run(d, "env-2", {"command": "cat /proc/self/environ /proc/$$/cmdline"})
            self.assertNotIn(b"sekrit-token", out)


class IdentityTest(DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root")
        cls.user, cls.group = ensure_test_user()
        super().setUpClass()

    def ids(self, exec_id, body):
        script = 'echo "$(id -u) $(id -g) $(id -G)|$HOME|$USER|$LOGNAME"'
        obj, out, err = run(self.daemon, exec_id, dict(body, command=script))
        self.assertEqual(obj["exit_code"], 0, err)
        ids, home, user, logname = out.decode().strip().split("|")
        uid, gid, *groups = [int(x) for x in ids.split()]
        return uid, gid, sorted(groups), home, user, logname

    def test_user_by_name_gets_groups_and_home_from_the_guest_files(self):
        uid, gid, groups, home, user, logname = self.ids("user-1", {"user": TEST_USER})
        self.assertEqual((uid, gid), (self.user.pw_uid, self.user.pw_gid))
        self.assertEqual(groups, sorted({self.user.pw_gid, self.group.gr_gid}))
        self.assertEqual((home, user, logname), (self.user.pw_dir, TEST_USER, TEST_USER))

    def test_user_by_number_and_group_override(self):
        uid, gid, groups, home, user, _ = self.ids(
            "user-2", {"user": str(self.user.pw_uid), "group": TEST_GROUP})
        self.assertEqual((uid, gid), (self.user.pw_uid, self.group.gr_gid))
        self.assertIn(self.group.gr_gid, groups)
        self.assertEqual(user, TEST_USER)

    def test_unknown_number_runs_with_its_own_group_and_root_home(self):
        uid, gid, groups, home, user, _ = self.ids("user-3", {"user": "54321"})
        self.assertEqual((uid, gid, groups, home, user), (54321, 54321, [54321], "/", "54321"))

    def test_group_alone_changes_only_the_group(self):
        uid, gid, groups, home, _, _ = self.ids("group-1", {"group": TEST_GROUP})
        self.assertEqual((uid, gid, groups), (0, self.group.gr_gid, [self.group.gr_gid]))

    def test_request_env_still_wins_over_the_user_home(self):
        obj, out, _ = run(self.daemon, "user-4",
                          {"command": "echo $HOME", "user": TEST_USER, "env": {"HOME": "/x"}})
        self.assertEqual(out, b"/x\n")

    def test_unknown_user_is_400_and_starts_nothing(self):
        s, b = self.daemon.json("PUT", "/v1/execs/user-5", {"argv": ["true"], "user": "nobody-xyz"})
        self.assertEqual((s, error_code(b)), (400, "unknown_user"))
        s, b = self.daemon.json("GET", "/v1/execs/user-5")
        self.assertEqual(s, 404)


class ProcessStateTest(DaemonTestCase):
    def test_child_leads_its_own_session_and_process_group(self):
        obj, out, _ = run(self.daemon, "sess-1", {"argv": [
            "python3", "-c", "import os; p = os.getppid(); print(os.getpid(), os.getpgrp(), "
            "os.getsid(0), p, open('/proc/%d/stat' % p).read().rsplit(')', 1)[1].split()[1])"]})
        pid, pgrp, sid, ppid, grandparent = [int(x) for x in out.split()]
        self.assertEqual(pid, obj["pid"])
        self.assertEqual((pgrp, sid), (pid, pid))
        # Its parent is its holder (docs/OPERATIONS.md, "Surviving a crash"),
        # the daemon's child.
        self.assertNotEqual(ppid, self.daemon.proc.pid)
        self.assertEqual(grandparent, self.daemon.proc.pid)

    def test_child_inherits_no_daemon_descriptor(self):
        # Keep a few streams busy so the daemon holds spool files and pipes.
        for i in range(3):
            self.daemon.json("PUT", "/v1/execs/busy-%d" % i, {"argv": ["sleep", "5"]})
        obj, out, _ = run(self.daemon, "fds-1", {"command": "ls /proc/$$/fd"})
        self.assertEqual(sorted(out.split()), [b"0", b"1", b"2"])
        for i in range(3):
            self.daemon.json("POST", "/v1/execs/busy-%d/kill" % i, {"signal": "KILL"})

    def test_signals_have_default_dispositions_and_an_empty_mask(self):
        obj, out, _ = run(self.daemon, "sigs-1", {"argv": ["grep", "-E", "^Sig(Blk|Ign)",
                                                           "/proc/self/status"]})
        lines = dict(l.split(":") for l in out.decode().splitlines())
        self.assertEqual(int(lines["SigBlk"].strip(), 16), 0, out)
        self.assertEqual(int(lines["SigIgn"].strip(), 16), 0, out)

    def test_stdin_is_empty_without_stdin_fields(self):
        obj, out, _ = run(self.daemon, "null-in", {"command": "wc -c; readlink /proc/self/fd/0"})
        self.assertEqual(out.split()[0], b"0")


if __name__ == "__main__":
    unittest.main()
