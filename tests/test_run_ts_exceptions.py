"""POST /v1/run: the structured exception of a TypeScript run, from its
preload driver (docs/PROTOCOL.md, "Run code", "exception"), with stdout,
stderr and the exit status exactly those of `bun -e CODE`."""

import hashlib
import os
import shutil
import subprocess
import tempfile
import unittest

from lib.agentd_test import Daemon

BUN = shutil.which("bun")


def run(d, body):
    status, obj = d.json("POST", "/v1/run", body, timeout=120)
    assert status == 200, (status, obj)
    return obj


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def plain_bun(code, cwd):
    """What `bun -e CODE` itself prints and exits with: the control."""
    p = subprocess.run([BUN, "-e", code], cwd=cwd, capture_output=True, text=True, timeout=60,
                       env={"PATH": os.environ["PATH"], "NO_COLOR": "1"})
    return p.returncode, p.stdout, p.stderr


@unittest.skipIf(BUN is None, "bun is not installed here (scripts/install-deps installs it)")
class TsRunExceptionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="agentd-tsexc-")
        os.chmod(cls.work, 0o755)
        with open(os.path.join(cls.work, "ledger.ts"), "w") as f:
            f.write("export function total(rows: any[]): number {\n"
                    "  let t = 0;\n"
                    "  for (const row of rows) t += row.amount.value;\n"
                    "  return t;\n"
                    "}\n")
        cls.drivers = tempfile.mkdtemp(prefix="agentd-drivers-")
        os.chmod(cls.drivers, 0o755)
        # A driver directory of its own: the tampering test must not reach
        # other daemons' runs on this machine.
        cls.daemon = Daemon("--workdir", cls.work, "--run-driver-dir", cls.drivers + "/d")

    @classmethod
    def tearDownClass(cls):
        cls.daemon.close()
        shutil.rmtree(cls.work, ignore_errors=True)
        shutil.rmtree(cls.drivers, ignore_errors=True)

    def run_ts(self, code, **extra):
        return run(self.daemon, {"runtime": "ts", "code": code, "env": {"NO_COLOR": "1"}, **extra})

    def test_an_error_through_an_imported_module_lists_the_callers_frames(self):
        code = ('import { total } from "./ledger";\n'
                "interface Row { amount?: { value: number } }\n"
                "console.log(\"before\");\n"
                "const rows: Row[] = [{}];\n"
                "total(rows);\n")
        r = self.run_ts(code)
        e = r["exception"]
        self.assertEqual((e["type"], e["file"], e["line"], e["source_line"]),
                         ("TypeError", "ledger.ts", 3, "for (const row of rows) t += row.amount.value;"))
        self.assertEqual([(f["file"], f["line"], f["function"]) for f in e["frames"]],
                         [("[eval]", 5, "<module>"), ("ledger.ts", 3, "total")])
        self.assertEqual(e["frames"][0]["source_line"], "total(rows);")
        self.assertRegex(r["summary"], r"TypeError: .* at ledger\.ts line 3, column \d+: for ")
        self.assertEqual((r["exit_code"], r["stdout"], r["stderr"]), plain_bun(code, self.work))

    def test_an_error_after_await_in_the_code_names_its_line(self):
        code = "const x: number = await Promise.resolve(1);\nconst o: any = JSON.parse('null');\no.field;\n"
        r = self.run_ts(code)
        e = r["exception"]
        self.assertEqual((e["type"], e["file"], e["line"], e["source_line"]),
                         ("TypeError", "[eval]", 3, "o.field;"))
        self.assertRegex(r["summary"], r"TypeError: .* at line 3, column \d+: o\.field;$")
        self.assertEqual((r["exit_code"], r["stdout"], r["stderr"]), plain_bun(code, self.work))

    def test_a_syntax_error_reports_line_and_column(self):
        code = "const a = 1;\nconst b: number = ;\n"
        r = self.run_ts(code)
        e = r["exception"]
        self.assertEqual((e["type"], e["file"], e["line"], e["column"], e["source_line"],
                          e["frames"]), ("SyntaxError", "[eval]", 2, 19, "const b: number = ;", []))
        self.assertEqual((r["exit_code"], r["stdout"], r["stderr"]), plain_bun(code, self.work))

    def test_a_thrown_class_of_the_code_keeps_its_name(self):
        code = ("class LedgerError extends Error {}\n"
                "function check(n: number) { if (n < 0) throw new LedgerError(`negative: ${n}`) }\n"
                "check(-2)\n")
        r = self.run_ts(code)
        e = r["exception"]
        self.assertEqual((e["type"], e["message"], e["line"]), ("LedgerError", "negative: -2", 2))
        self.assertEqual([f["function"] for f in e["frames"]], ["<module>", "check"])

    def test_success_has_no_exception_and_bun_e_semantics(self):
        # The code sees what `bun -e` gives it: argv, module globals.
        code = ("console.log(process.argv.length, typeof require, typeof module, "
                "process.execArgv.includes('--preload'))")
        r = self.run_ts(code)
        self.assertIsNone(r["exception"])
        self.assertEqual((r["exit_code"], r["stdout"]), (0, "1 function object true\n"))
        self.assertEqual(plain_bun(code, self.work)[1], "1 function object false\n")

    def test_the_report_descriptor_does_not_reach_the_codes_children(self):
        code = ('import { execSync } from "child_process";\n'
                'process.stdout.write(execSync("ls -l /proc/self/fd/").toString())\n')
        r = self.run_ts(code)
        self.assertEqual(r["exit_code"], 0, r)
        self.assertNotIn("agentd-run-report", r["stdout"])
        self.assertIn("->", r["stdout"])  # the control: the listing names descriptors

    def test_a_run_as_another_user_reads_the_shared_driver(self):
        code = "const who: string = require('os').userInfo().username;\nthrow new Error(who)\n"
        r = self.run_ts(code, user="nobody", cwd="/tmp")
        self.assertEqual(r["exit_code"], 1, r)
        self.assertEqual((r["exception"]["type"], r["exception"]["message"]), ("Error", "nobody"))

    def test_a_driver_changed_on_disk_is_replaced_before_the_next_run(self):
        self.run_ts("1")
        d = self.drivers + "/d"
        names = [n for n in os.listdir(d) if n.startswith("ts-run-")]
        self.assertEqual(len(names), 1)
        self.assertEqual(os.stat(d).st_mode & 0o777, 0o755)
        paths = [os.path.join(d, n) for n in names]
        before = {p: digest(p) for p in paths}
        for p in paths:
            with open(p, "w") as f:
                f.write("console.log('tampered');\n")
        r = self.run_ts("throw new Error('x')")
        self.assertNotIn("tampered", r["stdout"])
        self.assertEqual(r["exception"]["message"], "x")
        replaced = [p for p in paths if digest(p) == before[p]]
        self.assertTrue(replaced)


if __name__ == "__main__":
    unittest.main()
