"""Stateful TypeScript contexts (docs/PROTOCOL.md, "Contexts"): a persistent
bun interpreter whose cells keep their declarations and imports, each run
answered exactly like a ts POST /v1/run, over a real daemon on real
sockets. Skipped only where bun is not installed."""

import json
import os
import shutil
import tempfile
import threading
import unittest

from lib.agentd_test import Daemon, error_code

BUN = shutil.which("bun")


def create(d, body):
    return d.json("POST", "/v1/contexts", body, timeout=60)


def run_in(d, cid, body, timeout=120):
    return d.json("POST", "/v1/contexts/%s/run" % cid, body, timeout=timeout)


@unittest.skipIf(BUN is None, "bun is not installed here (scripts/install-deps installs it)")
class TsContextTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="agentd-tsctx-")
        os.chmod(cls.work, 0o755)
        with open(os.path.join(cls.work, "ledger.ts"), "w") as f:
            f.write("export function total(rows: any[]): number {\n"
                    "  let t = 0;\n"
                    "  for (const row of rows) t += row.amount.value;\n"
                    "  return t;\n"
                    "}\n")
        cls.daemon = Daemon("--workdir", cls.work, "--max-contexts", "3")
        status, health = cls.daemon.json("GET", "/v1/health")
        cls.supported = health["limits"]["supported"]

    @classmethod
    def tearDownClass(cls):
        cls.daemon.close()
        shutil.rmtree(cls.work, ignore_errors=True)

    def setUp(self):
        status, listed = self.daemon.json("GET", "/v1/contexts")
        for c in listed["contexts"]:
            self.daemon.json("DELETE", "/v1/contexts/" + c["id"])

    def new(self, cid, **extra):
        body = {"id": cid, "runtime": "ts", "env": {"NO_COLOR": "1"}}
        body.update(extra)
        status, info = create(self.daemon, body)
        self.assertEqual(status, 201, info)
        self.assertEqual((info["id"], info["runtime"], info["state"]), (cid, "ts", "ready"))
        return info

    def run_ok(self, cid, code, **extra):
        body = {"code": code}
        body.update(extra)
        status, r = run_in(self.daemon, cid, body)
        self.assertEqual(status, 200, r)
        return r

    def out(self, cid, code):
        r = self.run_ok(cid, code)
        self.assertEqual((r["exit_code"], r["exception"]), (0, None), r)
        return r["stdout"]

    def test_declarations_and_imports_persist_between_runs(self):
        self.new("keep")
        first = self.run_ok("keep", 'import { total } from "./ledger";\n'
                                    'import * as path from "node:path";\n'
                                    "let count: number = 0;\n"
                                    "const LIMIT = 5;\n"
                                    "function bump(by: number): number { count += by; return count; }\n"
                                    "class Box { constructor(public n: number) {} }\n"
                                    "enum Color { Red, Green }\n"
                                    "const { a, b: [b0] } = { a: 1, b: [2] };\n"
                                    'console.log("set");\n')
        self.assertEqual((first["exit_code"], first["stdout"], first["stderr"], first["success"]),
                         (0, "set\n", "", True), first)
        # Each answer carries only its own run's output.
        self.assertEqual(self.out("keep", "bump(2);\nconsole.log(count, LIMIT, new Box(3).n, Color.Green, a, b0)"),
                         "2 5 3 1 1 2\n")
        self.assertEqual(self.out("keep", 'console.log(total([{amount: {value: 4}}]), path.join("x", "y"))'),
                         "4 x/y\n")
        # An assignment in a later cell reaches the binding the earlier cell's
        # function reads; a constant stays constant.
        self.assertEqual(self.out("keep", "count = 40;\nbump(2);\nconsole.log(count)"), "42\n")
        r = self.run_ok("keep", "LIMIT = 6;")
        self.assertEqual((r["exit_code"], r["exception"]["type"]), (1, "TypeError"), r)
        self.assertEqual(self.out("keep", "const x = await Promise.resolve(LIMIT * 2);"), "")
        self.assertEqual(self.out("keep", "console.log(x)"), "10\n")
        status, info = self.daemon.json("GET", "/v1/contexts/keep")
        self.assertEqual((info["runs"], info["state"], info["runtime"]), (7, "ready", "ts"))

    def test_an_exception_reports_the_callers_lines_across_cells(self):
        self.new("exc")
        self.run_ok("exc", "interface Row { amount?: number }\n"
                           "\n"
                           "function sum(rows: Row[]): number {\n"
                           "  let t = 0;\n"
                           "  for (const r of rows) t += r.amount!.valueOf();\n"
                           "  return t;\n"
                           "}\n")
        r = self.run_ok("exc", "const rows: Row[] = [{}];\n\nsum(rows);\n")
        self.assertEqual(r["exit_code"], 1)
        e = r["exception"]
        self.assertEqual((e["type"], e["file"], e["line"], e["source_line"]),
                         ("TypeError", "<cell 1>", 5, "for (const r of rows) t += r.amount!.valueOf();"))
        self.assertEqual([(f["file"], f["line"], f["function"], f["source_line"]) for f in e["frames"]],
                         [("<cell 2>", 3, "<module>", "sum(rows);"),
                          ("<cell 1>", 5, "sum", "for (const r of rows) t += r.amount!.valueOf();")])
        self.assertRegex(r["summary"], r"TypeError: .* at <cell 1> line 5, column \d+: for ")
        self.assertIn("TypeError", r["stderr"])
        self.assertEqual(r["stdout"], "")
        # The failed cell kept what it declared before the throw.
        self.assertEqual(self.out("exc", "console.log(rows.length)"), "1\n")
        # Through an imported module: its file and line.
        r = self.run_ok("exc", 'import { total } from "./ledger";\nconsole.log("before");\ntotal([{}]);\n')
        e = r["exception"]
        self.assertEqual((e["file"], e["line"], e["source_line"]),
                         ("ledger.ts", 3, "for (const row of rows) t += row.amount.value;"))
        self.assertEqual([(f["file"], f["line"]) for f in e["frames"]], [("<cell 4>", 3), ("ledger.ts", 3)])
        self.assertEqual(r["stdout"], "before\n")
        syntax = self.run_ok("exc", "const ok = 1;\nconst b: number = ;\n")
        self.assertEqual((syntax["exit_code"], syntax["exception"]["type"], syntax["exception"]["file"],
                          syntax["exception"]["line"], syntax["exception"]["column"],
                          syntax["exception"]["source_line"]),
                         (1, "SyntaxError", "<cell 5>", 2, 19, "const b: number = ;"))
        thrown = self.run_ok("exc", "class LedgerError extends Error {}\n\nthrow new LedgerError('negative')\n")
        self.assertEqual((thrown["exception"]["type"], thrown["exception"]["message"],
                          thrown["exception"]["line"]), ("LedgerError", "negative", 3))
        # The failures ended runs, not the interpreter.
        self.assertEqual(self.out("exc", "console.log(sum([{amount: 2}, {amount: 3}]))"), "5\n")

    def test_the_result_marker_and_artifacts_work_as_in_a_run(self):
        sub = tempfile.mkdtemp(dir=self.work)
        self.new("res", cwd=sub)
        r = self.run_ok("res", 'const data = {total: 42};\nconsole.log("log");\n'
                               'console.log("__AGENTD_RESULT__ " + JSON.stringify(data));\n')
        self.assertEqual((r["stdout"], r["result"]), ("log\n", {"total": 42}))
        r = self.run_ok("res", 'require("fs").mkdirSync("out");\n'
                               'require("fs").writeFileSync("out/a.json", JSON.stringify(data));\n',
                        artifacts_dir="out")
        self.assertEqual([(a["path"], a["media_type"], a["bytes"]) for a in r["artifacts"]],
                         [("out/a.json", "application/json", 12)])
        self.assertIn({"path": "out/a.json", "change": "added", "type": "file"}, r["changed_files"])
        self.assertEqual(r["cwd"], sub)
        r = self.run_ok("res", 'console.log(require("fs").readFileSync("out/a.json", "utf8"))')
        self.assertEqual((r["changed_files"], r["stdout"]), ([], '{"total":42}\n'))

    def test_each_answer_has_only_its_own_runs_output_under_heavy_output(self):
        self.new("loud")
        r = self.run_ok("loud", "for (let i = 0; i < 20000; i++) {\n"
                                '  console.log("line", i);\n'
                                '  if (i % 7 == 0) process.stdout.write("w" + i + "\\n");\n'
                                "}\n"
                                'console.error("E".repeat(100000));\n')
        want = (sum(len("line %d\n" % i) for i in range(20000)) +
                sum(len("w%d\n" % i) for i in range(0, 20000, 7)))
        self.assertEqual((r["exit_code"], r["stdout_bytes"], r["stderr_bytes"]), (0, want, 100001),
                         r["summary"])
        after = self.run_ok("loud", 'console.log("after")')
        self.assertEqual((after["stdout"], after["stderr"], after["stdout_bytes"]), ("after\n", "", 6))

    def test_a_run_past_its_deadline_ends_the_context_with_the_limit_named(self):
        self.new("slow")
        self.out("slow", "let x = 1;")
        r = self.run_ok("slow", 'console.log("before");\nawait new Promise((r) => setTimeout(r, 60000));',
                        timeout_sec=1)
        self.assertEqual((r["timed_out"], r["killed_by"]), (True, "timeout"), r)
        self.assertEqual(r["limit"], {"name": "timeout", "value": 1, "unit": "s"})
        self.assertEqual(r["stdout"], "before\n")
        self.assertIn("killed", r["summary"])
        status, err = run_in(self.daemon, "slow", {"code": "console.log(x)"})
        self.assertEqual((status, error_code(err)), (410, "context_gone"))
        gone = err["error"]
        self.assertEqual((gone["killed_by"], gone["limit"]["name"], gone["ended_reason"]),
                         ("timeout", "timeout", "limit"))
        status, info = self.daemon.json("GET", "/v1/contexts/slow")
        self.assertEqual((info["state"], info["killed_by"], info["ended_reason"]),
                         ("ended", "timeout", "limit"))
        # A reset brings it back, empty.
        status, info = self.daemon.json("POST", "/v1/contexts/slow/reset")
        self.assertEqual((status, info["state"]), (200, "ready"), info)
        self.assertEqual(self.out("slow", "console.log(typeof x)"), "undefined\n")

    def test_a_memory_limit_that_kills_the_interpreter_ends_the_context(self):
        if "memory" not in self.supported:
            self.skipTest("memory limits are not supported here: %s" % self.supported)
        self.new("mem", memory_mb=128)
        self.out("mem", "let x = 1;")
        r = self.run_ok("mem", "const hog: Uint8Array[] = [];\n"
                               "for (;;) hog.push(new Uint8Array(16 << 20).fill(1));\n")
        self.assertEqual(r["killed_by"], "memory", r)
        self.assertEqual(r["limit"], {"name": "memory", "value": 128, "unit": "MiB"})
        self.assertEqual(r["summary"], "killed: memory limit 128 MiB exceeded")
        status, err = run_in(self.daemon, "mem", {"code": "console.log(x)"})
        self.assertEqual((status, error_code(err), err["error"]["killed_by"]),
                         (410, "context_gone", "memory"))

    def test_process_exit_ends_the_context_with_its_code(self):
        self.new("bye")
        r = self.run_ok("bye", 'console.log("bye");\nprocess.exit(3);')
        self.assertEqual((r["exit_code"], r["stdout"]), (3, "bye\n"), r)
        status, err = run_in(self.daemon, "bye", {"code": "1"})
        self.assertEqual((status, error_code(err), err["error"]["ended_reason"]),
                         (410, "context_gone", "exited"))

    def test_a_retried_run_id_replays_the_answer_without_running_twice(self):
        self.new("replay")
        self.out("replay", "let hits = 0;")
        code = 'hits += 1;\nconsole.log("hit", hits);'
        first = self.run_ok("replay", code, run_id="step-1")
        again = self.run_ok("replay", code, run_id="step-1")
        self.assertEqual(first, again)
        self.assertEqual(first["stdout"], "hit 1\n")
        self.assertEqual(self.out("replay", "console.log(hits)"), "1\n")
        status, err = run_in(self.daemon, "replay", {"code": "hits += 100;", "run_id": "step-1"})
        self.assertEqual((status, error_code(err), err["error"]["run_id"]),
                         (409, "run_id_conflict", "step-1"))
        self.assertEqual(self.out("replay", "console.log(hits)"), "1\n")

    def test_runs_in_one_context_are_serialized(self):
        self.new("serial")
        self.out("serial", "const log: [string, number][] = [];\n"
                           "const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));")
        answers = {}

        def go(n):
            answers[n] = run_in(self.daemon, "serial", {
                "code": "log.push(['start', %d]);\nawait pause(200);\nlog.push(['end', %d]);\n"
                        "console.log(%d)" % (n, n, n)})

        threads = [threading.Thread(target=go, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for n in range(4):
            self.assertEqual(answers[n][0], 200, answers[n])
            self.assertEqual(answers[n][1]["stdout"], "%d\n" % n)
        log = json.loads(self.out("serial", "console.log(JSON.stringify(log))"))
        # No run started before the one before it ended.
        self.assertEqual(len(log), 8)
        for i in range(0, len(log), 2):
            self.assertEqual((log[i][0], log[i + 1][0], log[i][1]), ("start", "end", log[i + 1][1]))

    def test_a_context_survives_its_client_leaving_mid_run(self):
        self.new("leave")
        self.out("leave", "let count = 0;\nconst pause = (ms: number) => new Promise((r) => setTimeout(r, ms));")
        code = 'await pause(500);\ncount += 1;\nconsole.log("done");'
        conn = self.daemon.connection()
        conn.request("POST", "/v1/contexts/leave/run", body=json.dumps({"code": code, "run_id": "left"}),
                     headers=self.daemon.headers(extra={"Content-Type": "application/json"}))
        conn.sock.shutdown(2)
        conn.close()
        # The retry gets the answer of the run the client left; it ran once.
        r = self.run_ok("leave", code, run_id="left")
        self.assertEqual(r["stdout"], "done\n")
        self.assertEqual(self.out("leave", "console.log(count)"), "1\n")

    def test_reset_forgets_names_and_delete_ends_the_interpreter(self):
        info = self.new("life")
        self.out("life", "const secret = 7;")
        status, again = self.daemon.json("POST", "/v1/contexts/life/reset")
        self.assertEqual(status, 200, again)
        self.assertNotEqual(again["pid"], info["pid"])
        r = self.run_ok("life", "console.log(secret)")
        self.assertEqual((r["exit_code"], r["exception"]["type"]), (1, "ReferenceError"))
        status, gone = self.daemon.json("DELETE", "/v1/contexts/life")
        self.assertEqual((status, gone["state"], gone["ended_reason"]), (200, "ended", "deleted"))
        status, err = run_in(self.daemon, "life", {"code": "1"})
        self.assertEqual((status, error_code(err)), (404, "context_not_found"))
        with self.assertRaises(ProcessLookupError):
            os.kill(again["pid"], 0)

    def test_the_channel_does_not_reach_the_codes_children(self):
        self.new("fds")
        listing = self.out("fds", 'import { execSync } from "child_process";\n'
                                  'process.stdout.write(execSync("ls -l /proc/self/fd/").toString());')
        self.assertIn("->", listing)  # the control: the listing names descriptors
        self.assertNotIn("socket:", "\n".join(l for l in listing.splitlines()
                                             if not l.split("->")[0].rstrip().endswith((" 1", " 2"))))


@unittest.skipIf(BUN is None, "bun is not installed here (scripts/install-deps installs it)")
class TsContextGuestResetTest(unittest.TestCase):
    def test_the_guest_reset_ends_a_ts_context(self):
        d = Daemon()
        self.addCleanup(d.close)
        status, info = create(d, {"id": "tenant", "runtime": "ts"})
        self.assertEqual(status, 201, info)
        self.assertEqual(run_in(d, "tenant", {"code": "let x = 1;"})[0], 200)
        nxt = "next-token-%d" % os.getpid()
        status, report = d.json("POST", "/v1/reset", {"reset_id": "r1", "next": {"token": nxt}})
        self.assertEqual(status, 200, report)
        d.token = nxt
        status, listed = d.json("GET", "/v1/contexts")
        self.assertEqual(listed["contexts"], [])
        status, err = run_in(d, "tenant", {"code": "console.log(x)"})
        self.assertEqual((status, error_code(err)), (404, "context_not_found"))
        self.assertIn("reset", err["error"]["message"])
        with self.assertRaises(ProcessLookupError):
            os.kill(info["pid"], 0)


if __name__ == "__main__":
    unittest.main()
