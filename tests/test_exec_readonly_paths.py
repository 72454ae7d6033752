"""Read-only paths of restricted execs (docs/SECURITY.md, "Restricted
execs"): the system directories, the daemon's binary and state directory,
and each --readonly-path are bound read-only in a mount namespace of the
exec's own, so even a file its user could write there is refused.

Each refusal has its control: the same user unrestricted writes the same
place. The daemon's own view and unrestricted execs' stay writable. The
CI runs as root; a daemon without CAP_SYS_ADMIN shows the fallback."""

import os
import pwd
import shutil
import subprocess
import tempfile
import unittest

from lib.agentd_test import AGENTD_BIN, Daemon
from lib.exec_util import run

NOBODY = "nobody"


def mount_options(mountinfo, path):
    """The per-mount options of the mount at `path` (the last one listed,
    which is the one a lookup finds), or None when `path` is no mount."""
    found = None
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) > 5 and fields[4] == path:
            found = fields[5].split(",")
    return found


def skip_unless_root():
    if os.geteuid() != 0:
        raise unittest.SkipTest("needs root (the CI runs as root)")


class ReadonlyPathsTest(unittest.TestCase):
    """One daemon with a --readonly-path directory anyone may write."""

    @classmethod
    def setUpClass(cls):
        skip_unless_root()
        cls.tmp = tempfile.mkdtemp(prefix="agentd-readonly-")
        os.chmod(cls.tmp, 0o755)
        cls.ro = os.path.join(cls.tmp, "ro")
        os.mkdir(cls.ro)
        os.chmod(cls.ro, 0o777)  # nobody may write here, as far as permissions go
        cls.daemon = Daemon("--readonly-path", cls.ro)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def sh(self, exec_id, script, **body):
        obj, out, err = run(self.daemon, exec_id, dict(body, argv=["sh", "-c", script]))
        return obj, out.decode(), err.decode()

    def test_a_path_its_user_may_write_is_read_only_for_a_restricted_exec(self):
        # The control: nobody, unrestricted, writes there.
        obj, _, err = self.sh("u-write", "echo x > %s/by-unrestricted" % self.ro, user=NOBODY)
        self.assertEqual(obj["exit_code"], 0, err)
        self.assertTrue(os.path.exists(os.path.join(self.ro, "by-unrestricted")))
        obj, _, err = self.sh("r-write", "echo x > %s/by-restricted" % self.ro,
                              profile="restricted")
        self.assertNotEqual(obj["exit_code"], 0)
        self.assertIn("Read-only file system", err)
        self.assertFalse(os.path.exists(os.path.join(self.ro, "by-restricted")))
        # Nor may it change what is there.
        obj, _, err = self.sh("r-remove", "rm -f %s/by-unrestricted" % self.ro,
                              profile="restricted")
        self.assertIn("Read-only file system", err)
        self.assertTrue(os.path.exists(os.path.join(self.ro, "by-unrestricted")))

    def test_the_exec_object_names_what_was_bound_read_only(self):
        obj, _, _ = self.sh("r-report", "true", profile="restricted")
        paths = obj["restriction"]["readonly_paths"]
        self.assertIn(os.path.realpath(self.ro), paths)
        self.assertIn("/usr", paths)
        self.assertIn("/etc", paths)
        self.assertIn(os.path.realpath(self.daemon.state_dir), paths)
        binary = os.path.realpath(AGENTD_BIN)
        self.assertTrue(any(binary == p or binary.startswith(p + "/") for p in paths), paths)
        self.assertEqual(paths, sorted(paths))

    def test_the_system_directories_are_read_only_mounts_in_the_exec(self):
        obj, out, _ = self.sh("r-mountinfo", "cat /proc/self/mountinfo", profile="restricted")
        for path in obj["restriction"]["readonly_paths"]:
            if os.path.isdir(path):
                self.assertIn("ro", mount_options(out, path) or [], path)
        # The control: an unrestricted exec has no such mounts.
        _, out, _ = self.sh("u-mountinfo", "cat /proc/self/mountinfo")
        self.assertIsNone(mount_options(out, os.path.realpath(self.ro)))

    def test_the_daemon_and_unrestricted_execs_keep_a_writable_view(self):
        self.sh("r-first", "true", profile="restricted")
        with open(os.path.join(self.ro, "by-host"), "w") as f:
            f.write("still writable\n")
        obj, _, err = self.sh("u-after", "echo y > %s/by-root" % self.ro)
        self.assertEqual(obj["exit_code"], 0, err)

    def test_a_relative_write_from_a_working_directory_inside_is_refused(self):
        obj, _, err = self.sh("r-cwd", "echo x > relative", profile="restricted", cwd=self.ro)
        self.assertIn("Read-only file system", err)
        self.assertFalse(os.path.exists(os.path.join(self.ro, "relative")))

    def test_a_restricted_exec_cannot_remount_a_path_writable(self):
        obj, _, err = self.sh("r-remount",
                              "mount -o remount,bind,rw %s; echo x > %s/after-remount"
                              % (self.ro, self.ro), profile="restricted")
        self.assertNotEqual(obj["exit_code"], 0)
        self.assertFalse(os.path.exists(os.path.join(self.ro, "after-remount")))

    def test_health_lists_the_read_only_paths(self):
        s, body = self.daemon.json("GET", "/v1/health", auth=False)
        self.assertEqual(s, 200)
        restricted = body["profiles"]["restricted"]
        self.assertIn(os.path.realpath(self.ro), restricted["readonly_paths"])
        self.assertNotIn("readonly_why", restricted)


class ReadonlyPathsAtStartTest(unittest.TestCase):
    """The start-up probes run together (docs/ARCHITECTURE.md, "Start-up"),
    and each verdict is in before the daemon listens: the first request,
    sent the moment the daemon says it listens, already gets what health
    reports."""

    def test_the_first_restricted_exec_after_start_is_bound_read_only_as_health_says(self):
        skip_unless_root()
        tmp = tempfile.mkdtemp(prefix="agentd-readonly-start-")
        self.addCleanup(shutil.rmtree, tmp, True)
        os.chmod(tmp, 0o755)
        ro = os.path.join(tmp, "ro")
        os.mkdir(ro)
        os.chmod(ro, 0o777)
        with Daemon("--readonly-path", ro) as d:
            # Before anything else: were the verdict settled after the
            # listen, this exec would run with no read-only bind at all.
            obj, _, err = run(d, "first", {
                "argv": ["sh", "-c", "echo x > %s/first" % ro],
                "profile": "restricted"})
            self.assertIn("Read-only file system", err.decode())
            self.assertFalse(os.path.exists(os.path.join(ro, "first")))
            status, health = d.json("GET", "/v1/health")
            self.assertEqual(status, 200)
            real = os.path.realpath(ro)
            self.assertIn(real, health["profiles"]["restricted"]["readonly_paths"])
            self.assertEqual(obj["restriction"]["readonly_paths"],
                             health["profiles"]["restricted"]["readonly_paths"])


class ReadonlyPathsFlagsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_root()
        cls.nobody = pwd.getpwnam(NOBODY)

    def test_a_named_path_that_does_not_exist_stops_the_daemon_at_start(self):
        missing = "/nonexistent/agentd-readonly-%d" % os.getpid()
        p = subprocess.run([AGENTD_BIN, "--readonly-path", missing, "--listen", "127.0.0.1:0"],
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(missing, p.stderr)
        self.assertIn("No such file or directory", p.stderr)

    def test_without_the_defaults_only_the_named_paths_are_bound(self):
        tmp = tempfile.mkdtemp(prefix="agentd-readonly-")
        try:
            with Daemon("--no-default-readonly-paths", "--readonly-path", tmp) as d:
                obj, _, _ = run(d, "r", {"argv": ["true"], "profile": "restricted"})
                self.assertEqual(obj["restriction"]["readonly_paths"], [os.path.realpath(tmp)])
            with Daemon("--no-default-readonly-paths") as d:
                obj, _, _ = run(d, "r", {"argv": ["true"], "profile": "restricted"})
                self.assertEqual(obj["restriction"]["readonly_paths"], [])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_a_daemon_that_cannot_mount_says_why_and_binds_nothing(self):
        # Root without CAP_SYS_ADMIN (the default Docker profile's case).
        drop = ["setpriv", "--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin", "--"]
        with Daemon(wrapper=drop) as d:
            s, body = d.json("GET", "/v1/health", auth=False)
            restricted = body["profiles"]["restricted"]
            self.assertEqual(restricted["readonly_paths"], [])
            self.assertIn("cannot bind paths read-only", restricted["readonly_why"])
            # Restricted execs still run, and say that nothing was bound.
            obj, out, _ = run(d, "r", {"argv": ["id", "-u"], "profile": "restricted"})
            self.assertEqual(out.strip(), str(self.nobody.pw_uid).encode())
            self.assertEqual(obj["restriction"]["readonly_paths"], [])
        # A path the operator named is not silently dropped: no start.
        p = subprocess.run(drop + [AGENTD_BIN, "--readonly-path", "/usr",
                                   "--listen", "127.0.0.1:0"],
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--readonly-path /usr", p.stderr)
        self.assertIn("CAP_SYS_ADMIN", p.stderr)


if __name__ == "__main__":
    unittest.main()
