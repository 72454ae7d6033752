"""The conformance suite passes against a local daemon on loopback (and over
a Unix socket), and reports failures honestly: pointed at a daemon with the
wrong token it fails."""

import os
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


DISK_CHECK = "disk: writes beyond free space are 507 with needed and available, leaving nothing"


class ConformanceLocalTest(GuestConformanceCase):
    def test_every_check_passes_over_tcp(self):
        # A short ack TTL and a small retention cap let the release and gap
        # checks run instead of skipping; a small tmpfs (root only) enables
        # disk pressure.
        small = small_tmpfs()
        if not small:
            self.EXPECTED_SKIPS = {DISK_CHECK: "no small file system without root"}
        try:
            with Daemon(*CONFORMANCE_DAEMON_ARGS) as d:
                with tempfile.NamedTemporaryFile("w") as token:
                    token.write(d.token + "\n")
                    token.flush()
                    extra = ["--small-fs", small] if small else []
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

    def test_a_wrong_token_makes_checks_fail(self):
        with Daemon() as d:
            r, _ = run_suite("http://127.0.0.1:%d" % d.port, "not-the-token", "--filter", "bootstrap")
            self.assertNotEqual(r.returncode, 0)
            self.assertRegex(r.stdout, r"\d+ passed, [1-9]\d* failed")


if __name__ == "__main__":
    unittest.main()
