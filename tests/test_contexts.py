"""Stateful contexts (docs/PROTOCOL.md, "Contexts"): a persistent python
interpreter created once and run in many times, each run answered exactly
like POST /v1/run, over a real daemon on real sockets."""

import http.client
import json
import os
import shutil
import tempfile
import threading
import time
import unittest

from lib.agentd_test import Daemon, error_code


def create(d, body):
    return d.json("POST", "/v1/contexts", body, timeout=60)


def run_in(d, cid, body, timeout=120):
    return d.json("POST", "/v1/contexts/%s/run" % cid, body, timeout=timeout)


class ContextTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="agentd-ctx-")
        cls.daemon = Daemon("--workdir", cls.work, "--max-contexts", "3")
        status, health = cls.daemon.json("GET", "/v1/health")
        cls.supported = health["limits"]["supported"]

    @classmethod
    def tearDownClass(cls):
        cls.daemon.close()
        shutil.rmtree(cls.work, ignore_errors=True)

    def setUp(self):
        # Each test starts with no contexts (the bound is 3).
        status, listed = self.daemon.json("GET", "/v1/contexts")
        for c in listed["contexts"]:
            self.daemon.json("DELETE", "/v1/contexts/" + c["id"])

    def new(self, cid, **extra):
        body = {"id": cid, "runtime": "python"}
        body.update(extra)
        status, info = create(self.daemon, body)
        self.assertEqual(status, 201, info)
        self.assertEqual((info["id"], info["runtime"], info["state"]), (cid, "python", "ready"))
        return info

    def run_ok(self, cid, code, **extra):
        body = {"code": code}
        body.update(extra)
        status, r = run_in(self.daemon, cid, body)
        self.assertEqual(status, 200, r)
        return r

    def test_variables_and_imports_persist_between_runs(self):
        self.new("keep")
        first = self.run_ok("keep", "import json\ncounter = 41\nprint('set')")
        self.assertEqual((first["exit_code"], first["stdout"], first["success"]), (0, "set\n", True))
        second = self.run_ok("keep", "counter += 1\nprint(json.dumps({'n': counter}))")
        # Each answer carries only its own run's output.
        self.assertEqual(second["stdout"], '{"n": 42}\n')
        self.assertEqual(second["stderr"], "")
        self.assertRegex(second["summary"], r"^exit 0 in \d+ ms")
        # The result marker works as in /v1/run.
        third = self.run_ok("keep", "print('log'); print('__AGENTD_RESULT__' + json.dumps(counter))")
        self.assertEqual((third["stdout"], third["result"]), ("log\n", 42))
        status, info = self.daemon.json("GET", "/v1/contexts/keep")
        self.assertEqual((info["runs"], info["state"]), (3, "ready"))

    def test_an_exception_reports_the_callers_line_and_the_context_lives_on(self):
        self.new("exc")
        self.run_ok("exc", "def total(rows):\n    t = 0\n    for r in rows:\n"
                           "        t += r['amount']\n    return t\n")
        r = self.run_ok("exc", "rows = [{'tenant': 'a'}]\n\ntotal(rows)\n")
        self.assertEqual(r["exit_code"], 1)
        e = r["exception"]
        self.assertEqual((e["type"], e["message"], e["line"], e["source_line"]),
                         ("KeyError", "'amount'", 4, "t += r['amount']"))
        self.assertEqual([(f["line"], f["function"]) for f in e["frames"]],
                         [(3, "<module>"), (4, "total")])
        self.assertEqual(e["keys_present"], ["tenant"])
        self.assertIn("KeyError: 'amount'", r["summary"])
        self.assertIn("KeyError: 'amount'", r["stderr"])
        self.assertEqual(r["stdout"], "")
        syntax = self.run_ok("exc", "x = 1\nif x\n    pass\n")
        self.assertEqual((syntax["exception"]["type"], syntax["exception"]["line"]),
                         ("SyntaxError", 2))
        # The failure ended the run, not the interpreter.
        after = self.run_ok("exc", "print(total([{'amount': 2}, {'amount': 3}]))")
        self.assertEqual((after["exit_code"], after["stdout"], after["exception"]), (0, "5\n", None))
        exited = self.run_ok("exc", "import sys\nprint('bye')\nsys.exit(3)")
        self.assertEqual((exited["exit_code"], exited["stdout"]), (3, "bye\n"))
        self.assertEqual(self.run_ok("exc", "print(total([]))")["stdout"], "0\n")

    def test_a_retried_run_id_replays_the_answer_without_running_twice(self):
        self.new("replay")
        self.run_ok("replay", "hits = 0")
        code = "hits += 1\nprint('hit', hits)"
        first = self.run_ok("replay", code, run_id="step-1")
        again = self.run_ok("replay", code, run_id="step-1")
        self.assertEqual(first, again)
        self.assertEqual(first["stdout"], "hit 1\n")
        # The side effect happened once.
        self.assertEqual(self.run_ok("replay", "print(hits)")["stdout"], "1\n")
        status, err = run_in(self.daemon, "replay", {"code": "hits += 100", "run_id": "step-1"})
        self.assertEqual((status, error_code(err)), (409, "run_id_conflict"))
        self.assertEqual(err["error"]["run_id"], "step-1")
        self.assertEqual(self.run_ok("replay", "print(hits)")["stdout"], "1\n")

    def test_runs_in_one_context_are_serialized(self):
        self.new("serial")
        self.run_ok("serial", "import time\nlog = []")
        answers = {}

        def go(n):
            answers[n] = run_in(self.daemon, "serial", {
                "code": "log.append(('start', %d))\ntime.sleep(0.2)\nlog.append(('end', %d))\n"
                        "print(%d)" % (n, n, n)})

        threads = [threading.Thread(target=go, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for n in range(4):
            self.assertEqual(answers[n][0], 200, answers[n])
            self.assertEqual(answers[n][1]["stdout"], "%d\n" % n)
        log = json.loads(self.run_ok("serial", "import json\nprint(json.dumps(log))")["stdout"])
        # No run started before the one before it ended.
        for i in range(0, len(log), 2):
            self.assertEqual((log[i][0], log[i + 1][0], log[i][1]), ("start", "end", log[i + 1][1]))
        self.assertEqual(len(log), 8)

    def test_a_run_past_its_deadline_ends_the_context_with_the_limit_named(self):
        self.new("slow")
        self.run_ok("slow", "import time\nx = 1")
        r = self.run_ok("slow", "print('before', flush=True)\ntime.sleep(60)", timeout_sec=1)
        self.assertEqual((r["timed_out"], r["killed_by"]), (True, "timeout"))
        self.assertEqual(r["limit"], {"name": "timeout", "value": 1, "unit": "s"})
        self.assertEqual(r["stdout"], "before\n")
        self.assertIn("killed", r["summary"])
        status, err = run_in(self.daemon, "slow", {"code": "print(x)"})
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
        r = self.run_ok("slow", "print('x' in globals())")
        self.assertEqual(r["stdout"], "False\n")

    def test_a_memory_limit_that_kills_the_interpreter_ends_the_context(self):
        if "memory" not in self.supported:
            self.skipTest("memory limits are not supported here: %s" % self.supported)
        self.new("mem", memory_mb=64)
        self.run_ok("mem", "x = 1")
        r = self.run_ok("mem", "y = bytearray(400 << 20)")
        self.assertEqual(r["killed_by"], "memory", r)
        self.assertEqual(r["limit"], {"name": "memory", "value": 64, "unit": "MiB"})
        self.assertEqual(r["summary"], "killed: memory limit 64 MiB exceeded")
        status, err = run_in(self.daemon, "mem", {"code": "print(x)"})
        self.assertEqual((status, error_code(err), err["error"]["killed_by"]),
                         (410, "context_gone", "memory"))

    def test_reset_forgets_state_and_delete_ends_the_context(self):
        info = self.new("life")
        self.run_ok("life", "secret = 7")
        status, again = self.daemon.json("POST", "/v1/contexts/life/reset")
        self.assertEqual(status, 200, again)
        self.assertNotEqual(again["pid"], info["pid"])
        r = self.run_ok("life", "print(secret)")
        self.assertEqual((r["exit_code"], r["exception"]["type"]), (1, "NameError"))
        status, gone = self.daemon.json("DELETE", "/v1/contexts/life")
        self.assertEqual((status, gone["state"], gone["ended_reason"]), (200, "ended", "deleted"))
        status, err = run_in(self.daemon, "life", {"code": "1"})
        self.assertEqual((status, error_code(err)), (404, "context_not_found"))
        status, err = self.daemon.json("DELETE", "/v1/contexts/life")
        self.assertEqual((status, error_code(err)), (404, "context_not_found"))
        # Its interpreter is gone from the guest.
        with self.assertRaises(ProcessLookupError):
            os.kill(info["pid"], 0)

    def test_contexts_are_listed_in_health(self):
        self.new("listed")
        status, health = self.daemon.json("GET", "/v1/health")
        self.assertEqual([c["id"] for c in health["contexts"]], ["listed"])
        status, listed = self.daemon.json("GET", "/v1/contexts")
        self.assertEqual(([c["id"] for c in listed["contexts"]], listed["max_contexts"]),
                         (["listed"], 3))

    def test_a_context_survives_its_client_leaving_mid_run(self):
        self.new("leave")
        self.run_ok("leave", "import time\ncount = 0")
        conn = self.daemon.connection()
        body = json.dumps({"code": "time.sleep(0.5)\ncount += 1\nprint('done')",
                           "run_id": "left"})
        conn.request("POST", "/v1/contexts/leave/run", body=body,
                     headers=self.daemon.headers(extra={"Content-Type": "application/json"}))
        conn.sock.shutdown(2)
        conn.close()
        # The retry gets the answer of the run the client left; it ran once.
        r = self.run_ok("leave", "time.sleep(0.5)\ncount += 1\nprint('done')", run_id="left")
        self.assertEqual(r["stdout"], "done\n")
        self.assertEqual(self.run_ok("leave", "print(count)")["stdout"], "1\n")

    def test_changed_files_are_answered_per_run(self):
        sub = tempfile.mkdtemp(dir=self.work)
        self.new("files", cwd=sub)
        r = self.run_ok("files", "open('made.txt', 'w').write('x')")
        self.assertEqual(r["changed_files"], [{"path": "made.txt", "change": "added",
                                               "type": "file"}])
        self.assertEqual(r["cwd"], sub)
        r = self.run_ok("files", "print(open('made.txt').read())")
        self.assertEqual((r["changed_files"], r["stdout"]), ([], "x\n"))

    def test_bad_input_gets_stable_errors_with_numbers(self):
        status, err = create(self.daemon, {"id": "a", "runtime": "cobol"})
        self.assertEqual((status, error_code(err), err["error"]["field"]),
                         (400, "invalid_request", "runtime"))
        status, err = create(self.daemon, {"id": "a", "runtime": "shell"})
        self.assertEqual((status, error_code(err), err["error"]["field"]),
                         (400, "invalid_request", "runtime"))
        status, err = create(self.daemon, {"id": "a b", "runtime": "python"})
        self.assertEqual((status, error_code(err), err["error"]["field"]), (400, "invalid_request", "id"))
        status, err = create(self.daemon, {"id": "a", "runtime": "python", "code": "1"})
        self.assertEqual((status, error_code(err), err["error"]["field"]), (400, "invalid_request", "code"))
        self.new("dup")
        status, same = create(self.daemon, {"id": "dup", "runtime": "python"})
        self.assertEqual((status, same["id"]), (200, "dup"))
        status, err = create(self.daemon, {"id": "dup", "runtime": "python", "cwd": "/tmp"})
        self.assertEqual((status, error_code(err), err["error"]["id"]), (409, "context_id_conflict", "dup"))
        self.new("two")
        self.new("three")
        status, err = create(self.daemon, {"id": "four", "runtime": "python"})
        self.assertEqual((status, error_code(err), err["error"]["limit"], err["error"]["live"]),
                         (503, "too_many_contexts", 3, 3))
        status, err = run_in(self.daemon, "nope", {"code": "1"})
        self.assertEqual((status, error_code(err)), (404, "context_not_found"))
        status, err = run_in(self.daemon, "dup", {"code": "x" * ((1 << 20) + 1)})
        self.assertEqual((status, error_code(err), err["error"]["limit"]),
                         (413, "payload_too_large", 1 << 20))
        status, err = run_in(self.daemon, "dup", {})
        self.assertEqual((status, error_code(err), err["error"]["field"]), (400, "invalid_request", "code"))
        # None of it hurt the context.
        self.assertEqual(self.run_ok("dup", "print(1)")["stdout"], "1\n")


class ContextResetTest(unittest.TestCase):
    def test_the_guest_reset_ends_every_context(self):
        d = Daemon()
        self.addCleanup(d.close)
        status, info = create(d, {"id": "tenant", "runtime": "python"})
        self.assertEqual(status, 201, info)
        self.assertEqual(run_in(d, "tenant", {"code": "x = 1"})[0], 200)
        nxt = "next-token-%d" % os.getpid()
        status, report = d.json("POST", "/v1/reset", {"reset_id": "r1", "next": {"token": nxt}})
        self.assertEqual(status, 200, report)
        d.token = nxt
        status, listed = d.json("GET", "/v1/contexts")
        self.assertEqual(listed["contexts"], [])
        status, err = run_in(d, "tenant", {"code": "print(x)"})
        self.assertEqual((status, error_code(err)), (404, "context_not_found"))
        self.assertIn("reset", err["error"]["message"])
        with self.assertRaises(ProcessLookupError):
            os.kill(info["pid"], 0)


if __name__ == "__main__":
    unittest.main()
