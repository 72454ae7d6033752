"""cmake --install installs the commands users run, not only the client
libraries: agentctl and agentd-conformance in bin/, each with a man page
made from its --help in share/man/man1/ (help2man, installed by
scripts/install-deps)."""

import os
import shutil
import subprocess
import tempfile
import unittest

from lib.agentd_test import AGENTD_BIN

BUILD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(AGENTD_BIN)))


class InstalledCommandsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="agentd-install-")
        cls.prefix = os.path.join(cls.tmp, "prefix")
        subprocess.run(["cmake", "--install", BUILD_DIR, "--prefix", cls.prefix],
                       check=True, capture_output=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_installed(self, name, *args):
        return subprocess.run([os.path.join(self.prefix, "bin", name), *args],
                              capture_output=True, text=True, timeout=60)

    def test_agentctl_is_installed_and_runs(self):
        r = self.run_installed("agentctl", "--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("commands:", r.stdout)

    def test_the_conformance_tool_is_installed_and_lists_its_checks(self):
        r = self.run_installed("agentd-conformance", "--list")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("exec: ", r.stdout)
        self.assertEqual(self.run_installed("agentd-conformance", "--no-such-flag").returncode, 2)

    @unittest.skipUnless(shutil.which("help2man"), "help2man makes the man pages")
    def test_each_command_has_a_man_page_made_from_its_help(self):
        for name, expected in (("agentctl", "grep"), ("agentd-conformance", "--small-fs")):
            page = os.path.join(self.prefix, "share", "man", "man1", name + ".1")
            self.assertTrue(os.path.isfile(page), page)
            text = open(page, encoding="utf-8").read()
            self.assertIn(".SH NAME", text)
            self.assertIn(expected.replace("-", "\\-"), text)


if __name__ == "__main__":
    unittest.main()
