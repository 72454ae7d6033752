"""The conformance suite passes against a local daemon on loopback (and over
a Unix socket), and reports failures honestly: pointed at a daemon with the
wrong token it fails."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

from lib.agentd_test import Daemon
from lib.guests import CONFORMANCE, CONFORMANCE_DAEMON_ARGS, GuestConformanceCase, SuiteRun


def run_suite(url, token, *extra):
    with tempfile.NamedTemporaryFile("w", delete=False) as f:
        f.write(token + "\n")
        token_file = f.name
    junit = token_file + ".xml"
    r = subprocess.run([CONFORMANCE, "--url", url, "--token-file", token_file, "--junit", junit,
                        *extra], capture_output=True, text=True, timeout=600)
    os.unlink(token_file)
    return r, junit


def small_tmpfs():
    """A 4 MiB tmpfs for the disk-pressure checks, or None when not root."""
    path = tempfile.mkdtemp(prefix="agentd-small-fs-")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", path],
                       capture_output=True)
    return path if r.returncode == 0 else None


def can_make_immutable(directory):
    """Root on a file system with the immutable flag (ext4, xfs; not tmpfs)."""
    if not shutil.which("chattr"):
        return False
    probe = os.path.join(directory, ".immutable-probe")
    open(probe, "w").close()
    made = subprocess.run(["chattr", "+i", probe], capture_output=True).returncode == 0
    if made:
        subprocess.run(["chattr", "-i", probe], check=True)
    os.unlink(probe)
    return made


DISK_CHECK = "disk: writes beyond free space are 507 with needed and available, leaving nothing"
ABSENT_RUNTIME_CHECK = "run: a runtime the guest lacks is runtime_unavailable"
TS_CONTEXT_CHECK = "run: a ts context keeps a declaration between two runs"
DISK_LIMIT_CHECK = "limits: a disk limit ends a runaway writer and leaves the guest's disk alone"


class ConformanceLocalTest(GuestConformanceCase):
    def test_every_check_passes_over_tcp(self):
        # A short ack TTL and a small retention cap let the release and gap
        # checks run instead of skipping; a small tmpfs (root only) enables
        # disk pressure. A reset path and a scratch dir let the reuse group
        # run last; as root the daemon has an IPC namespace of its own, so
        # the IPC sweep is checked too without touching the host's objects.
        small = small_tmpfs()
        work = tempfile.mkdtemp(prefix="agentd-reuse-path-")
        scratch = tempfile.mkdtemp(prefix="agentd-reuse-scratch-")
        self.addCleanup(shutil.rmtree, work, True)
        self.addCleanup(shutil.rmtree, scratch, True)
        reuse = ["--reuse-path", work, "--reuse-scratch", scratch]
        # The quarantine check leaves an immutable file in the reset path and
        # the daemon quarantined (it is stopped after the suite anyway).
        if can_make_immutable(work):
            reuse.append("--reuse-quarantine")
            self.addCleanup(subprocess.run, ["chattr", "-R", "-i", work], capture_output=True)
        suite_scratch = tempfile.mkdtemp(prefix="agentd-conformance-scratch-")
        self.addCleanup(shutil.rmtree, suite_scratch, True)
        reuse += ["--scratch-root", suite_scratch]
        daemon_args = list(CONFORMANCE_DAEMON_ARGS) + ["--reset-path", work,
                                                       "--reset-scratch", scratch]
        wrapper = ()
        if os.geteuid() == 0 and shutil.which("unshare") and shutil.which("ipcmk"):
            wrapper = ("unshare", "--ipc")
            daemon_args.append("--reset-ipc")
            reuse.append("--reuse-ipc")
        self.EXPECTED_SKIPS = {}
        if not small:
            self.EXPECTED_SKIPS[DISK_CHECK] = "no small file system without root"
        if not shutil.which("bun"):
            self.EXPECTED_SKIPS[TS_CONTEXT_CHECK] = "no bun here"
        if shutil.which("bun") and shutil.which("python3"):
            # Checked against a daemon that lacks them, below.
            self.EXPECTED_SKIPS[ABSENT_RUNTIME_CHECK] = "every runtime is installed here"
        try:
            with Daemon(*daemon_args, wrapper=wrapper) as d:
                with tempfile.NamedTemporaryFile("w") as token:
                    token.write(d.token + "\n")
                    token.flush()
                    extra = (["--small-fs", small] if small else []) + reuse
                    # The upgrade group: the daemon re-executes its own binary.
                    extra += ["--upgrade-command", "%s --upgrade --state-dir %s" % (
                        d.binary, d.state_dir)]
                    self.assertSuitePasses(
                        SuiteRun("http://127.0.0.1:%d" % d.port, token.name, *extra))
        finally:
            if small:
                subprocess.run(["umount", small])
                os.rmdir(small)

    def test_every_check_passes_over_a_unix_socket(self):
        path = os.path.join(tempfile.mkdtemp(), "agentd.sock")
        with Daemon("--listen", "unix:" + path) as d:
            r, _ = run_suite("unix:" + path, d.token)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_the_absent_runtime_check_passes_where_a_runtime_is_absent(self):
        bindir = tempfile.mkdtemp(prefix="agentd-path-")
        os.symlink("/bin/sh", os.path.join(bindir, "sh"))
        try:
            with Daemon(env=dict(os.environ, PATH=bindir)) as d:
                r, _ = run_suite("http://127.0.0.1:%d" % d.port, d.token,
                                 "--filter", ABSENT_RUNTIME_CHECK)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertRegex(r.stdout, r"(?m)^PASS  %s " % ABSENT_RUNTIME_CHECK)
                self.assertRegex(r.stdout, r"(?m)^1 passed, 0 failed$")
        finally:
            shutil.rmtree(bindir)

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("setpriv"),
                         "needs root and setpriv to start a daemon without CAP_SYS_ADMIN")
    def test_the_disk_limit_check_skips_where_the_daemon_cannot_mount(self):
        # Without CAP_SYS_ADMIN the daemon cannot make a tmpfs: health leaves
        # "disk" out and the check must see the request refused, then skip.
        with Daemon(wrapper=("setpriv", "--bounding-set", "-sys_admin")) as d:
            status, health = d.json("GET", "/v1/health", auth=False)
            self.assertEqual(status, 200)
            self.assertNotIn("disk", health["limits"]["supported"])
            r, _ = run_suite("http://127.0.0.1:%d" % d.port, d.token, "--filter", DISK_LIMIT_CHECK)
            self.assertRegex(r.stdout, r"(?m)^SKIP  %s \(\d+ ms\): the guest cannot bound a run's "
                             r"disk: .*CAP_SYS_ADMIN" % re.escape(DISK_LIMIT_CHECK))
            # Everything skipped is exit status 1 (nothing passed), never a failure.
            self.assertRegex(r.stdout, r"(?m)^0 passed, 0 failed, 1 skipped$")

    def test_a_wrong_token_makes_checks_fail(self):
        with Daemon() as d:
            r, _ = run_suite("http://127.0.0.1:%d" % d.port, "not-the-token", "--filter", "bootstrap")
            self.assertNotEqual(r.returncode, 0)
            self.assertRegex(r.stdout, r"\d+ passed, [1-9]\d* failed")


if __name__ == "__main__":
    unittest.main()
