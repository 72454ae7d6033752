"""The conformance suite passes against a local daemon on loopback (and over
a Unix socket), and reports failures honestly: pointed at a daemon with the
wrong token it fails."""

import os
import re
import subprocess
import tempfile
import unittest

from lib.agentd_test import AGENTD_BIN, Daemon

BUILD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(AGENTD_BIN)))
CONFORMANCE = os.path.join(BUILD_DIR, "conformance", "agentd-conformance")


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


class ConformanceLocalTest(unittest.TestCase):
    def test_every_check_passes_over_tcp(self):
        # A short ack TTL and a small retention cap let the release and gap
        # checks run instead of skipping; a small tmpfs enables disk pressure.
        small = small_tmpfs()
        try:
            with Daemon("--ack-ttl-sec", "2", "--retention-stream-bytes", "1048576") as d:
                extra = ["--small-fs", small] if small else []
                r, junit = run_suite("http://127.0.0.1:%d" % d.port, d.token, *extra)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                m = re.search(r"^(\d+) passed, 0 failed(, (\d+) skipped)?$", r.stdout, re.M)
                self.assertIsNotNone(m, r.stdout)
                self.assertGreater(int(m.group(1)), 40)
                if small and os.geteuid() == 0:
                    self.assertIsNone(m.group(3), "nothing is skipped on a local root daemon:\n" +
                                      r.stdout)
                with open(junit) as f:
                    self.assertIn('failures="0"', f.read())
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
