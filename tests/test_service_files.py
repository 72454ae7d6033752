"""packaging/agentd.service (with agentd.default) and packaging/agentd.openrc
(with agentd.confd): valid for their init system, and the command line each
builds is one the daemon accepts. (Neither init runs here: systemd is
checked with systemd-analyze verify, OpenRC by sourcing the script as
openrc-run would.)"""

import os
import re
import shlex
import shutil
import subprocess
import tempfile
import unittest

from lib.agentd_test import AGENTD_BIN

PACKAGING = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "packaging")


def read(name):
    with open(os.path.join(PACKAGING, name)) as f:
        return f.read()


def accepted(args):
    """agentd parses every flag before acting on --version."""
    return subprocess.run([AGENTD_BIN] + args + ["--version"], capture_output=True, text=True)


class SystemdUnitTest(unittest.TestCase):
    def unit_argv(self):
        unit = read("agentd.service")
        opts = re.search(r"^AGENTD_OPTS=\"(.*)\"$", read("agentd.default"), re.M).group(1)
        exec_start = re.search(r"^ExecStart=(.*)$", unit, re.M).group(1)
        return shlex.split(exec_start.replace("$AGENTD_OPTS", opts))

    def test_the_units_command_line_is_accepted_by_agentd(self):
        argv = self.unit_argv()
        self.assertEqual(argv[0], "/usr/sbin/agentd")
        r = accepted(argv[1:])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--listen=127.0.0.1:7700", argv)

    @unittest.skipUnless(shutil.which("systemd-analyze"), "no systemd-analyze")
    def test_systemd_analyze_verify_accepts_the_unit(self):
        tmp = tempfile.mkdtemp(prefix="agentd-unit-")
        try:
            path = os.path.join(tmp, "agentd.service")
            with open(path, "w") as f:
                f.write(read("agentd.service").replace("/usr/sbin/agentd",
                                                       os.path.abspath(AGENTD_BIN)))
            r = subprocess.run(["systemd-analyze", "verify", path], capture_output=True,
                               text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertNotIn("agentd.service:", r.stdout + r.stderr)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class OpenRcScriptTest(unittest.TestCase):
    def test_the_script_is_valid_shell(self):
        r = subprocess.run(["sh", "-n", os.path.join(PACKAGING, "agentd.openrc")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(read("agentd.openrc").startswith("#!/sbin/openrc-run\n"))

    def test_its_command_line_with_conf_d_is_accepted_by_agentd(self):
        # openrc-run sources /etc/conf.d/$RC_SVCNAME, then the script.
        script = ('RC_SVCNAME=agentd; . "$1"; . "$2"; '
                  'printf "%s\\n" "$command" "$command_args" "$pidfile" "$command_background"')
        r = subprocess.run(["sh", "-c", script, "sh", os.path.join(PACKAGING, "agentd.confd"),
                            os.path.join(PACKAGING, "agentd.openrc")],
                           capture_output=True, text=True, check=True,
                           env={"PATH": os.environ["PATH"]})  # as clean as openrc-run's
        command, args, pidfile, background = r.stdout.splitlines()
        self.assertEqual(command, "/usr/local/bin/agentd")
        self.assertEqual((pidfile, background), ("/run/agentd.pid", "yes"))
        r = accepted(shlex.split(args))
        self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main()
