"""agentctl's exec commands against a live daemon: output, exit codes, JSON
envelopes, the manifest's exit-code table, and Ctrl-C forwarding."""

import json
import os
import signal
import subprocess
import tempfile
import time
import unittest

from lib.agentd_test import AGENTD_BIN, Daemon

BUILD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(AGENTD_BIN)))
AGENTCTL = os.path.join(BUILD_DIR, "cli", "agentctl")


class AgentctlTestCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()
        cls.env = dict(os.environ, AGENTD_URL="http://127.0.0.1:%d" % cls.daemon.port,
                       AGENTD_TOKEN=cls.daemon.token, NO_COLOR="1")

    @classmethod
    def tearDownClass(cls):
        cls.daemon.close()

    def ctl(self, *args, input=None, timeout=60):
        return subprocess.run([AGENTCTL, *args], capture_output=True, env=self.env, input=input,
                              timeout=timeout)

    def envelope(self, *args, **kw):
        r = self.ctl("--json", *args, **kw)
        lines = r.stdout.decode().splitlines()
        self.assertEqual(len(lines), 1, "exactly one JSON line on stdout: %r" % r.stdout)
        return r, json.loads(lines[0])


class ExecCommandTest(AgentctlTestCase):
    def test_exec_streams_both_streams_and_exits_with_the_remote_code(self):
        r = self.ctl("exec", "--", "sh", "-c", "echo out; echo err >&2; exit 7")
        self.assertEqual(r.returncode, 7)
        self.assertEqual(r.stdout, b"out\n")
        self.assertEqual(r.stderr, b"err\n")

    def test_exec_reports_a_signal_as_128_plus_n_and_a_timeout_as_124(self):
        self.assertEqual(self.ctl("exec", "--shell", "kill -KILL $$").returncode, 137)
        r = self.ctl("exec", "--timeout", "1", "--", "sleep", "30")
        self.assertEqual(r.returncode, 124)

    def test_exec_passes_env_cwd_and_stdin(self):
        r = self.ctl("exec", "--env", "GREETING=hi", "--cwd", "/tmp", "--stdin", "-", "--shell",
                     'echo "$GREETING $(pwd) $(cat)"', input=b"from-stdin")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, b"hi /tmp from-stdin\n")

    def test_exec_json_mode_prints_one_envelope_with_output(self):
        r, env = self.envelope("exec", "--", "sh", "-c", "echo hello; exit 3")
        self.assertEqual(r.returncode, 3)
        self.assertTrue(env["ok"])
        self.assertEqual(env["result"]["exit_code"], 3)
        self.assertEqual(env["result"]["stdout"], "hello\n")
        self.assertTrue(env["result"]["acked"])

    @unittest.skipUnless(os.geteuid() == 0, "a restricted exec switches to nobody (root only)")
    def test_exec_profile_restricted_runs_as_nobody_and_reports_it(self):
        r, env = self.envelope("exec", "--profile", "restricted", "--", "sh", "-c",
                               "id -u; grep Seccomp: /proc/self/status")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(env["result"]["stdout"].split()[0], "65534")
        self.assertIn("Seccomp:\t2", env["result"]["stdout"])
        self.assertEqual(env["result"]["profile"], "restricted")
        self.assertEqual(env["result"]["restriction"]["capabilities"], "none")
        bad = self.ctl("exec", "--profile", "sandboxed", "--", "true")
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertIn(b"--profile", bad.stderr)

    def test_exec_with_a_given_id_runs_once_when_repeated(self):
        marker = tempfile.mktemp()
        cmd = ["exec", "--id", "ctl-fixed-id", "--shell", "echo run >> %s; echo ran" % marker]
        self.assertEqual(self.ctl(*cmd).stdout, b"ran\n")
        # A repeat (a retry after a lost terminal, say) answers the same exec.
        self.assertEqual(self.ctl(*cmd).stdout, b"ran\n")
        with open(marker) as f:
            self.assertEqual(f.read(), "run\n")

    def test_ctrl_c_kills_the_remote_process_group_and_reports_the_end(self):
        pidfile = tempfile.mktemp()
        proc = subprocess.Popen([AGENTCTL, "exec", "--shell",
                                 "sleep 300 & echo $! > %s; echo started; wait" % pidfile],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env)
        self.assertEqual(proc.stdout.readline(), b"started\n")
        with open(pidfile) as f:
            child = int(f.read())
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 128 + signal.SIGTERM, err)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(child, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            self.fail("the remote background child survived Ctrl-C")


class DetachedCommandsTest(AgentctlTestCase):
    def test_start_poll_logs_wait_ack(self):
        r = self.ctl("start", "--", "sh", "-c", "echo one; echo two >&2; sleep 0.3; echo three")
        self.assertEqual(r.returncode, 0, r.stderr)
        exec_id = r.stdout.decode().strip()
        follow = self.ctl("logs", "--follow", exec_id)
        self.assertEqual(follow.stdout, b"one\nthree\n")
        self.assertEqual(follow.stderr, b"two\n")
        self.assertEqual(self.ctl("wait", exec_id).returncode, 0)
        r, env = self.envelope("poll", "--stdout-from", "0", exec_id)
        self.assertEqual(env["result"]["stdout"]["next"], 10)
        logs = self.ctl("logs", exec_id)
        self.assertEqual(logs.stdout, b"one\nthree\n")
        r, env = self.envelope("ack", exec_id)
        self.assertTrue(env["result"]["acked"])

    def test_kill_signals_the_group(self):
        exec_id = self.ctl("start", "--", "sleep", "300").stdout.decode().strip()
        r, env = self.envelope("kill", "--signal", "KILL", exec_id)
        self.assertEqual(env["result"]["killed_by"], "kill")
        self.assertEqual(self.ctl("wait", exec_id).returncode, 137)

    def test_stdin_by_offset(self):
        exec_id = self.ctl("start", "--stdin-stream", "--", "cat").stdout.decode().strip()
        self.assertEqual(self.ctl("stdin", "--offset", "0", exec_id, "-", input=b"abc").returncode, 0)
        r, env = self.envelope("stdin", "--offset", "0", "--eof", exec_id, "-", input=b"abcdef")
        self.assertEqual(env["result"]["next"], 6)
        self.assertEqual(self.ctl("logs", "--follow", exec_id).stdout, b"abcdef")

    def test_ps_lists_records_in_a_table(self):
        exec_id = self.ctl("start", "--", "true").stdout.decode().strip()
        self.ctl("wait", exec_id)
        r = self.ctl("ps")
        self.assertEqual(r.returncode, 0)
        header = r.stdout.decode().splitlines()[0].split()
        self.assertEqual(header[:3], ["ID", "STATE", "PID"])
        self.assertIn(exec_id, r.stdout.decode())


class ErrorsAndManifestTest(AgentctlTestCase):
    def manifest(self):
        r = self.ctl("manifest")
        self.assertEqual(r.returncode, 0)
        return json.loads(r.stdout)

    def test_manifest_lists_every_command_and_the_exit_code_table(self):
        m = self.manifest()
        names = {c["name"] for c in m["commands"]}
        for cmd in ["health", "bootstrap", "exec", "start", "poll", "logs", "wait", "ack", "kill",
                    "ps", "stdin", "watch", "ports", "forward", "manifest", "version"]:
            self.assertIn(cmd, names)
        codes = {e["name"]: e["code"] for e in m["exit_codes"]}
        self.assertEqual(codes["usage"], 2)
        self.assertIn("exec_id_conflict", {e["code"] for e in m["error_codes"]})

    def test_exit_codes_match_the_manifest(self):
        codes = {e["name"]: e["code"] for e in self.manifest()["exit_codes"]}
        self.assertEqual(self.ctl("exec").returncode, codes["usage"])
        self.assertEqual(self.ctl("poll", "no-such-exec").returncode, codes["not_found"])
        self.assertEqual(self.ctl("--token", "wrong", "ps").returncode, codes["auth"])
        r = subprocess.run([AGENTCTL, "--url", "http://127.0.0.1:1", "ps"], capture_output=True,
                           env=self.env, timeout=60)
        self.assertEqual(r.returncode, codes["unreachable"])
        exec_id = self.ctl("start", "--", "sleep", "5").stdout.decode().strip()
        self.assertEqual(self.ctl("ack", exec_id).returncode, codes["conflict"])
        self.ctl("kill", exec_id)

    def test_bad_usage_is_one_line_naming_the_flag_and_exit_2(self):
        r = self.ctl("exec", "--frobnicate", "--", "true")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout, b"")
        lines = r.stderr.decode().splitlines()
        self.assertEqual(len(lines), 1)
        self.assertIn("--frobnicate", lines[0])
        self.assertIn("--help", lines[0])

    def test_json_errors_are_one_envelope(self):
        r, env = self.envelope("poll", "no-such-exec")
        self.assertFalse(env["ok"])
        self.assertEqual(env["error"]["code"], "exec_not_found")
        self.assertEqual(env["exit_code"], r.returncode)

    def test_health_and_version(self):
        r, env = self.envelope("health")
        self.assertEqual(env["result"]["status"], "ok")
        r = self.ctl("version")
        self.assertIn(b"agentctl", r.stdout)
        self.assertIn(b"agentd", r.stdout)


class BootstrapCommandTest(unittest.TestCase):
    def test_bootstrap_sets_token_and_env(self):
        with Daemon(bootstrap=False) as d:
            env = dict(os.environ, AGENTD_URL="http://127.0.0.1:%d" % d.port)
            r = subprocess.run([AGENTCTL, "--token", "ctl-tok", "bootstrap", "--env", "LAUNCH=yes"],
                               capture_output=True, env=env, timeout=30)
            self.assertEqual(r.returncode, 0, r.stderr)
            r = subprocess.run([AGENTCTL, "--token", "ctl-tok", "exec", "--shell", "echo $LAUNCH"],
                               capture_output=True, env=env, timeout=30)
            self.assertEqual(r.stdout, b"yes\n")


if __name__ == "__main__":
    unittest.main()
