"""agentctl run against a live daemon: the code's output, the summary and
changed files on stderr, the remote exit code, limits as flags, one JSON
envelope with --json, and an absent runtime as the daemon's refusal."""

import os
import shutil
import tempfile
import unittest

from test_agentctl_exec import AgentctlTestCase


class RunCommandTest(AgentctlTestCase):
    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="agentd-ctl-run-")
        self.addCleanup(shutil.rmtree, self.work, True)

    def test_run_prints_output_then_the_summary_and_changed_files(self):
        r = self.ctl("run", "--runtime", "python", "--cwd", self.work,
                     "print('hi'); open('a.txt', 'w').write('x')")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, b"hi\n")
        self.assertRegex(r.stderr.decode(),
                         r"^agentctl: exit 0 in \d+ ms; 1 file changed\n  added a\.txt\n$")

    def test_run_exits_with_the_remote_code_and_names_the_limit(self):
        r = self.ctl("run", "--cwd", self.work, "echo oops >&2; exit 3")
        self.assertEqual(r.returncode, 3)
        self.assertRegex(r.stderr.decode(), r"^oops\nagentctl: exit 3 in \d+ ms: oops\n$")
        r = self.ctl("run", "--timeout", "1", "--cwd", self.work, "sleep 30")
        self.assertEqual(r.returncode, 124)
        self.assertTrue(r.stderr.endswith(b"agentctl: killed: wall-clock limit 1s exceeded\n"),
                        r.stderr)
        r = self.ctl("run", "--runtime", "python", "--cpu-sec", "1", "--cwd", self.work,
                     "while True: pass")
        self.assertTrue(r.stderr.endswith(b"agentctl: killed: CPU time limit 1s exceeded\n"),
                        r.stderr)
        scratch = tempfile.mkdtemp(prefix="agentd-ctl-disk-")
        self.addCleanup(shutil.rmtree, scratch, True)
        r = self.ctl("run", "--disk-bytes", "1048576", "--disk-path", scratch, "--cwd", self.work,
                     "head -c 2000000 /dev/zero > %s/fill" % scratch)
        if b"limit_unsupported" not in r.stderr:
            self.assertTrue(r.stderr.endswith(b"agentctl: killed: disk limit 1048576 bytes "
                                              b"exceeded\n"), r.stderr)
            self.assertEqual(os.listdir(scratch), [])  # written to the run's own tmpfs

    def test_run_prints_a_python_exception_as_a_trimmed_traceback(self):
        with open(os.path.join(self.work, "ledger.py"), "w") as f:
            f.write("def total(rows):\n    return sum(r['amount'] for r in rows)\n")
        r = self.ctl("run", "--runtime", "python", "--no-scan", "--cwd", self.work,
                     "import ledger\nledger.total([{'amt': 2}])")
        self.assertEqual(r.returncode, 1)
        block = r.stderr.decode().split("agentctl: ", 1)[1]
        self.assertRegex(block,
                         r"^exit 1 in \d+ ms: KeyError: 'amount' at ledger.py line 2: "
                         r"return sum\(r\['amount'\] for r in rows\)\n"
                         r"agentctl: exception KeyError: 'amount'\n"
                         r"  <string> line 2, in <module>\n"
                         r"    ledger.total\(\[\{'amt': 2\}\]\)\n"
                         r"  ledger.py line 2, in total\n"
                         r"    return sum\(r\['amount'\] for r in rows\)\n"
                         r"  ledger.py line 2, in <genexpr>\n"
                         r"    return sum\(r\['amount'\] for r in rows\)\n"
                         r"  keys present: amt\n$")

    def test_run_json_mode_prints_one_envelope_with_the_answer(self):
        r, env = self.envelope("run", "--no-scan", "--cwd", self.work, "echo x > f; echo done")
        self.assertEqual(r.returncode, 0)
        self.assertTrue(env["ok"])
        self.assertEqual(env["result"]["stdout"], "done\n")
        self.assertEqual(env["result"]["changed_files"], [])
        self.assertRegex(env["result"]["summary"], r"^exit 0 in \d+ ms$")

    @unittest.skipUnless(os.geteuid() == 0, "a restricted run switches to nobody (root only)")
    def test_run_profile_restricted_reports_what_was_applied(self):
        r, env = self.envelope("run", "--no-scan", "--profile", "restricted", "id -u")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(env["result"]["stdout"], "65534\n")
        self.assertEqual(env["result"]["profile"], "restricted")
        self.assertEqual(env["result"]["restriction"]["uid"], 65534)

    @unittest.skipUnless(os.geteuid() == 0, "network namespaces need a root daemon")
    def test_run_network_none_cannot_reach_the_daemon(self):
        reach = "exec 3<>/dev/tcp/127.0.0.1/%d && echo reached || echo refused" % self.daemon.port
        r, env = self.envelope("run", "--no-scan", "--runtime", "shell", "--network", "none",
                               "bash -c '%s' 2>/dev/null" % reach)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual((env["result"]["stdout"], env["result"]["network"]), ("refused\n", "none"))
        r, env = self.envelope("run", "--no-scan", "bash -c '%s' 2>/dev/null" % reach)
        self.assertEqual(env["result"]["stdout"], "reached\n")
        self.assertNotIn("network", env["result"])
        self.assertEqual(self.ctl("run", "--network", "some", "true").returncode, 2)

    def test_run_usage_errors_and_refusals(self):
        self.assertEqual(self.ctl("run", "--runtime", "cobol", "1").returncode, 2)
        self.assertEqual(self.ctl("run", "--timeout", "soon", "1").returncode, 2)
        r, env = self.envelope("run", "--cwd", self.work, "--pids", "0", "true")
        self.assertEqual(r.returncode, 65)
        self.assertEqual(env["error"]["code"], "invalid_request")


if __name__ == "__main__":
    unittest.main()
