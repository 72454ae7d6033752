"""POST /v1/run: the structured exception of a python run, from its driver
(docs/PROTOCOL.md, "Run code", "exception"), beside untouched stdout and
stderr."""

import os
import shutil
import subprocess
import tempfile
import unittest

from lib.agentd_test import Daemon


def run(d, body):
    status, obj = d.json("POST", "/v1/run", body, timeout=120)
    assert status == 200, (status, obj)
    return obj


def plain_python(code, cwd):
    """What `python3 -c CODE` itself prints and exits with: the control."""
    p = subprocess.run(["python3", "-c", code], cwd=cwd, capture_output=True, text=True,
                       timeout=60)
    return p.returncode, p.stdout, p.stderr


class RunExceptionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="agentd-exc-")
        with open(os.path.join(cls.work, "ledger.py"), "w") as f:
            f.write("import json\n"
                    "\n"
                    "def total(rows):\n"
                    "    t = 0\n"
                    "    for row in rows:\n"
                    "        t += row[\"amount\"]\n"
                    "    return t\n"
                    "\n"
                    "def parse(text):\n"
                    "    return json.loads(text)\n")
        cls.daemon = Daemon("--workdir", cls.work)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.close()
        shutil.rmtree(cls.work, ignore_errors=True)

    def test_a_key_error_names_line_source_line_and_keys_present(self):
        code = ("rows = [{'tenant': 'a', 'value': 3}]\n"
                "print('before')\n"
                "total = 0\n"
                "for row in rows: total += row[\"amount\"]\n")
        r = run(self.daemon, {"runtime": "python", "code": code})
        e = r["exception"]
        self.assertEqual((e["type"], e["message"], e["line"], e["file"]),
                         ("KeyError", "'amount'", 4, "<string>"))
        self.assertEqual(e["source_line"], "for row in rows: total += row[\"amount\"]")
        self.assertEqual(e["keys_present"], ["tenant", "value"])
        self.assertEqual(e["keys_total"], 2)
        self.assertEqual(e["frames"], [{"file": "<string>", "line": 4, "function": "<module>",
                                        "source_line": e["source_line"]}])
        self.assertRegex(r["summary"], r"^exit 1 in \d+ ms: KeyError: 'amount' at line 4: "
                                       r"for row in rows: total \+= row\[\"amount\"\]$")
        # stdout, stderr and the exit status are python3 -c's own.
        self.assertEqual((r["exit_code"], r["stdout"], r["stderr"]),
                         plain_python(code, self.work))

    def test_a_traceback_through_an_imported_module_lists_the_callers_frames(self):
        code = "import ledger\n\nledger.total([{'amt': 1}])\n"
        r = run(self.daemon, {"runtime": "python", "code": code})
        e = r["exception"]
        self.assertEqual([(f["file"], f["line"], f["function"]) for f in e["frames"]],
                         [("<string>", 3, "<module>"), ("ledger.py", 6, "total")])
        self.assertEqual((e["file"], e["line"], e["source_line"]),
                         ("ledger.py", 6, "t += row[\"amount\"]"))
        self.assertEqual(e["keys_present"], ["amt"])
        self.assertIn("KeyError: 'amount' at ledger.py line 6: t += row[\"amount\"]",
                      r["summary"])
        self.assertEqual((r["exit_code"], r["stdout"], r["stderr"]),
                         plain_python(code, self.work))

    def test_library_frames_are_counted_not_listed(self):
        code = "import ledger\nledger.parse('{bad')\n"
        r = run(self.daemon, {"runtime": "python", "code": code})
        e = r["exception"]
        self.assertEqual(e["type"], "json.decoder.JSONDecodeError")
        self.assertEqual([(f["file"], f["line"]) for f in e["frames"]],
                         [("<string>", 2), ("ledger.py", 10)])
        self.assertGreater(e["omitted_frames"], 0)
        self.assertNotIn("keys_present", e)
        self.assertEqual(r["stderr"], plain_python(code, self.work)[2])

    def test_a_syntax_error_reports_line_and_column(self):
        code = "x = 1\ny = (2,\n"
        r = run(self.daemon, {"runtime": "python", "code": code})
        e = r["exception"]
        self.assertEqual((e["type"], e["line"], e["column"], e["source_line"], e["frames"]),
                         ("SyntaxError", 2, 5, "y = (2,", []))
        self.assertIn("SyntaxError: '(' was never closed at line 2, column 5: y = (2,",
                      r["summary"])
        self.assertEqual((r["exit_code"], r["stdout"], r["stderr"]),
                         plain_python(code, self.work))

    def test_success_and_system_exit_have_no_exception(self):
        r = run(self.daemon, {"runtime": "python", "code": "import sys; print(sys.argv)"})
        self.assertEqual((r["exception"], r["stdout"]), (None, "['-c']\n"))
        r = run(self.daemon, {"runtime": "python", "code": "raise SystemExit(3)"})
        self.assertEqual((r["exit_code"], r["exception"]), (3, None))

    def test_the_code_sees_the_usual_globals_and_descriptors(self):
        code = ("import os\n"
                "print(sorted(k for k in globals() if not k.startswith('__')))\n"
                "print(os.open('/dev/null', os.O_RDONLY))\n")
        r = run(self.daemon, {"runtime": "python", "code": code})
        self.assertEqual(r["stdout"], "['os']\n3\n")

    def test_a_report_the_code_forges_past_the_bound_is_ignored(self):
        # The report descriptor is the code's to misuse: too much is no report.
        code = ("import os\n"
                "for fd in range(64, 256):\n"
                "    try:\n"
                "        os.write(fd, b'x' * 70000); break\n"
                "    except OSError: pass\n"
                "raise ValueError('real')\n")
        r = run(self.daemon, {"runtime": "python", "code": code})
        self.assertEqual(r["exit_code"], 1)
        self.assertIsNone(r["exception"])
        self.assertRegex(r["summary"], r"ValueError: real$")

    def test_the_shell_runtime_reports_no_exception(self):
        r = run(self.daemon, {"runtime": "shell", "code": "echo 'KeyError: x' >&2; exit 1"})
        self.assertIsNone(r["exception"])
        self.assertRegex(r["summary"], r": KeyError: x$")


if __name__ == "__main__":
    unittest.main()
