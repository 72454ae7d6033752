"""Exec start: idempotence, conflicts, release tombstones, spawn outcomes,
argv and shell mode, bad requests."""

import base64
import json
import os
import shutil
import tempfile
import threading
import time
import unittest

from lib.agentd_test import Daemon, DaemonTestCase, error_code
from lib.exec_util import read_stream, run, start, wait_exit


class IdempotentStartTest(DaemonTestCase):
    def test_retry_with_identical_request_answers_200_and_starts_nothing(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        marker = os.path.join(tmp, "runs")
        body = {"command": "echo run >> %s" % marker, "env": {"A": "1"}}
        s1, first = self.daemon.json("PUT", "/v1/execs/idem-1", body)
        self.assertEqual(s1, 201, first)
        done = wait_exit(self.daemon, "idem-1")
        # Same meaning, other key order and whitespace.
        raw = ('{ "env" : {"A":"1"},\n "command": %s }' % json.dumps(body["command"])).encode()
        s2, again = self.daemon.json("PUT", "/v1/execs/idem-1", raw)
        self.assertEqual(s2, 200, again)
        self.assertEqual(again, done)
        with open(marker) as f:
            self.assertEqual(f.read(), "run\n")

    def test_eight_identical_starts_racing_run_one_process(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        marker = os.path.join(tmp, "runs")
        command = "echo run >> %s; sleep 0.5" % marker
        bodies = [
            json.dumps({"command": command, "timeout_sec": 30}),
            json.dumps({"timeout_sec": 30, "command": command}),
            json.dumps({"command": command, "timeout_sec": 30}, indent=2),
            json.dumps({"command": command, "timeout_sec": 30, "user": None}),
        ] * 2
        barrier = threading.Barrier(8)
        results = [None] * 8

        def worker(i):
            conn = self.daemon.connection()
            conn.connect()  # connected before the barrier: the requests really race
            barrier.wait()
            results[i] = self.daemon.json("PUT", "/v1/execs/race-1", bodies[i].encode(),
                                          conn=conn)
            conn.close()

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        statuses = sorted(s for s, _ in results)
        self.assertEqual(statuses, [200] * 7 + [201], results)
        self.assertEqual(len({b["pid"] for _, b in results}), 1)
        wait_exit(self.daemon, "race-1")
        with open(marker) as f:
            self.assertEqual(f.read(), "run\n")

    def test_same_id_with_a_different_request_is_409(self):
        start(self.daemon, "conflict-1", {"argv": ["true"]})
        for other in ({"argv": ["false"]}, {"argv": ["true"], "timeout_sec": 5},
                      {"command": "true"}, {"argv": ["true"], "env": {"X": None}}):
            s, b = self.daemon.json("PUT", "/v1/execs/conflict-1", other)
            self.assertEqual((s, error_code(b)), (409, "exec_id_conflict"), other)
            self.assertEqual(b["error"]["id"], "conflict-1")


class StartAndWaitTest(DaemonTestCase):
    """PUT with Poll's query: the start's answer is the poll's answer."""

    def test_a_short_command_answers_its_exit_and_output_in_one_request(self):
        body = {"command": "echo out; echo err >&2; exit 3"}
        q = "?stdout_from=0&stderr_from=0&wait_ms=10000&until=exit"
        s, obj = self.daemon.json("PUT", "/v1/execs/sw-1" + q, body)
        self.assertEqual(s, 201, obj)
        self.assertEqual((obj["state"], obj["exit_code"]), ("exited", 3))
        self.assertEqual(base64.b64decode(obj["stdout"]["data_b64"]), b"out\n")
        self.assertEqual(base64.b64decode(obj["stderr"]["data_b64"]), b"err\n")
        self.assertEqual(obj["stdout"]["next"], 4)
        # A retry is the same start: 200, the same poll answer, nothing rerun.
        s, again = self.daemon.json("PUT", "/v1/execs/sw-1" + q, body)
        self.assertEqual(s, 200, again)
        self.assertEqual(again, obj)
        # And a retry without the query is a plain replay.
        s, plain = self.daemon.json("PUT", "/v1/execs/sw-1", body)
        self.assertEqual(s, 200)
        self.assertNotIn("stdout", plain)
        self.assertEqual(plain["exit_code"], 3)

    def test_the_wait_ends_at_wait_ms_with_the_exec_still_running(self):
        t = time.monotonic()
        s, obj = self.daemon.json("PUT", "/v1/execs/sw-2?wait_ms=300&stdout_from=0",
                                  {"command": "echo first; sleep 30"})
        waited = time.monotonic() - t
        self.assertEqual(s, 201, obj)
        # New output ends a wait, as in a long poll: "first" may come first.
        self.assertEqual(obj["state"], "running")
        self.assertLess(waited, 10)
        self.daemon.json("POST", "/v1/execs/sw-2/kill", {"signal": "KILL"})

    def test_a_bad_query_starts_nothing(self):
        for q in ("wait_ms=300001", "stdout_from=-1", "max_bytes=0", "wait_ms=x", "until=done"):
            s, obj = self.daemon.json("PUT", "/v1/execs/sw-bad?" + q, {"argv": ["true"]})
            self.assertEqual((s, error_code(obj)), (400, "invalid_request"), q)
        s, _ = self.daemon.json("GET", "/v1/execs/sw-bad")
        self.assertEqual(s, 404)

    def test_a_cursor_past_the_end_is_refused_after_the_start(self):
        s, obj = self.daemon.json("PUT", "/v1/execs/sw-3?stdout_from=5", {"argv": ["true"]})
        self.assertEqual((s, error_code(obj)), (400, "invalid_request"))
        self.assertEqual(obj["error"]["next"], 0)
        self.assertEqual(wait_exit(self.daemon, "sw-3")["exit_code"], 0)  # it did start


class ReleasedIdTest(unittest.TestCase):
    def test_released_id_answers_410_to_every_route(self):
        with Daemon("--ack-ttl-sec", "0") as d:
            obj, out, _ = run(d, "gone-1", {"argv": ["echo", "x"]})
            self.assertEqual(out, b"x\n")
            s, acked = d.json("POST", "/v1/execs/gone-1/ack")
            self.assertEqual(s, 200, acked)
            self.assertTrue(acked["acked"])

            def released():
                s, b = d.json("GET", "/v1/execs/gone-1")
                return s == 410 and error_code(b) == "exec_released"

            from lib.exec_util import wait_until
            wait_until(released, what="release")
            for method, path, body in [
                    ("PUT", "/v1/execs/gone-1", {"argv": ["echo", "x"]}),
                    ("PUT", "/v1/execs/gone-1", {"argv": ["echo", "different"]}),
                    ("GET", "/v1/execs/gone-1", None),
                    ("GET", "/v1/execs/gone-1/stdout", None),
                    ("GET", "/v1/execs/gone-1/events", None),
                    ("POST", "/v1/execs/gone-1/ack", None),
                    ("POST", "/v1/execs/gone-1/kill", None),
                    ("POST", "/v1/execs/gone-1/stdin?offset=0", b"x")]:
                s, b = d.json(method, path, body)
                self.assertEqual((s, error_code(b)), (410, "exec_released"), (method, path))
            s, lst = d.json("GET", "/v1/execs")
            self.assertEqual(lst["execs"], [])


class CapacityTest(unittest.TestCase):
    def test_max_execs_records_then_503_until_one_is_released(self):
        with Daemon("--max-execs", "2", "--ack-ttl-sec", "0") as d:
            run(d, "cap-1", {"argv": ["true"]})
            start(d, "cap-2", {"argv": ["true"]})
            s, b = d.json("PUT", "/v1/execs/cap-3", {"argv": ["true"]})
            self.assertEqual((s, error_code(b)), (503, "too_many_execs"))
            self.assertEqual(b["error"]["limit"], 2)
            # A retry of an existing one is still answered.
            s, _ = d.json("PUT", "/v1/execs/cap-2", {"argv": ["true"]})
            self.assertEqual(s, 200)
            d.json("POST", "/v1/execs/cap-1/ack")
            from lib.exec_util import wait_until
            wait_until(lambda: d.json("PUT", "/v1/execs/cap-3", {"argv": ["true"]})[0] == 201,
                       what="a slot after release")


class SpawnOutcomeTest(DaemonTestCase):
    def test_argv_mode_passes_arguments_without_a_shell(self):
        obj, out, _ = run(self.daemon, "argv-1", {"argv": ["printf", "%s|", "a b", "$HOME", "*"]})
        self.assertEqual((obj["exit_code"], out), (0, b"a b|$HOME|*|"))

    def test_shell_mode_runs_sh_c_and_a_named_shell(self):
        obj, out, _ = run(self.daemon, "sh-1", {"command": "echo $((1+2)) && exit 7"})
        self.assertEqual((obj["exit_code"], out), (7, b"3\n"))
        obj, out, _ = run(self.daemon, "sh-2", {"command": "echo $0", "shell": "/bin/bash"})
        self.assertEqual(out, b"/bin/bash\n")

    def test_missing_program_exits_127_with_the_reason_on_stderr(self):
        s, obj = self.daemon.json("PUT", "/v1/execs/nf-1", {"argv": ["no-such-program-xyz"]})
        self.assertEqual(s, 201)
        self.assertEqual((obj["state"], obj["exit_code"]), ("exited", 127))
        self.assertIn("no-such-program-xyz", obj["error"])
        self.assertIn(b"No such file or directory", read_stream(self.daemon, "nf-1", "stderr"))
        obj, _, _ = run(self.daemon, "nf-2", {"argv": ["/nonexistent/prog"]})
        self.assertEqual(obj["exit_code"], 127)

    def test_bad_cwd_is_a_spawn_failure(self):
        obj, _, err = run(self.daemon, "cwd-bad", {"argv": ["true"], "cwd": "/nonexistent-dir"})
        self.assertEqual(obj["exit_code"], 127)
        self.assertIn("/nonexistent-dir", obj["error"])
        self.assertIn(b"/nonexistent-dir", err)

    def test_non_executable_file_exits_126(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        path = os.path.join(tmp, "script")
        with open(path, "w") as f:
            f.write("#!/bin/sh\necho hi\n")
        os.chmod(path, 0o644)
        obj, _, err = run(self.daemon, "noexec-1", {"argv": [path]})
        self.assertEqual(obj["exit_code"], 126)
        self.assertIn("Permission denied", obj["error"])
        obj, _, _ = run(self.daemon, "noexec-2", {"argv": [tmp]})  # a directory
        self.assertEqual(obj["exit_code"], 126)

    def test_cwd_is_applied(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        obj, out, _ = run(self.daemon, "cwd-1", {"argv": ["pwd"], "cwd": tmp})
        self.assertEqual(out.decode().strip(), os.path.realpath(tmp))

    def test_death_by_signal_is_128_plus_n_with_the_name(self):
        obj, _, _ = run(self.daemon, "sig-1", {"command": "kill -SEGV $$"})
        self.assertEqual((obj["exit_code"], obj["signal"]), (139, "SEGV"))
        self.assertIsNone(obj["killed_by"])
        obj, _, _ = run(self.daemon, "sig-2", {"command": "kill -USR1 $$"})
        self.assertEqual((obj["exit_code"], obj["signal"]), (138, "USR1"))

    def test_list_shows_every_record_in_start_order(self):
        for i in range(3):
            start(self.daemon, "list-%d" % i, {"argv": ["true"]})
        s, body = self.daemon.json("GET", "/v1/execs")
        ids = [e["id"] for e in body["execs"] if e["id"].startswith("list-")]
        self.assertEqual(ids, ["list-0", "list-1", "list-2"])
        for e in body["execs"]:
            for field in ("state", "pid", "exit_code", "signal", "timed_out", "killed_by",
                          "started_at", "ended_at", "duration_ms", "stdout_bytes", "stderr_bytes",
                          "stdout_retained_from", "stderr_retained_from", "acked"):
                self.assertIn(field, e)


class BadRequestTest(DaemonTestCase):
    def assertRefused(self, method, path, body, status, code, field=None):
        s, b = self.daemon.json(method, path, body)
        self.assertEqual((s, error_code(b)), (status, code), (path, body, b))
        if field:
            self.assertEqual(b["error"].get("field"), field, b)

    def test_bad_start_requests_are_4xx_with_stable_codes(self):
        cases = [
            ("/v1/execs/bad%20id", {"argv": ["true"]}, "id"),
            ("/v1/execs/bad$id", {"argv": ["true"]}, "id"),
            ("/v1/execs/" + "x" * 129, {"argv": ["true"]}, "id"),
            ("/v1/execs/ok-1", {"argv": ["true"], "command": "true"}, None),
            ("/v1/execs/ok-1", {}, None),
            ("/v1/execs/ok-1", {"argv": []}, "argv"),
            ("/v1/execs/ok-1", {"argv": "true"}, "argv"),
            ("/v1/execs/ok-1", {"argv": ["true"], "timeout_sec": -1}, "timeout_sec"),
            ("/v1/execs/ok-1", {"argv": ["true"], "timeout_sec": 0.5}, "timeout_sec"),
            ("/v1/execs/ok-1", {"argv": ["true"], "kill_grace_sec": -5}, "kill_grace_sec"),
            ("/v1/execs/ok-1", {"argv": ["true"], "surprise": 1}, "surprise"),
            ("/v1/execs/ok-1", {"argv": ["true"], "stdin_b64": "%%%"}, "stdin_b64"),
            ("/v1/execs/ok-1", {"argv": ["true"], "stdin": "a", "stdin_b64": "YQ=="}, "stdin"),
            ("/v1/execs/ok-1", {"argv": ["true"], "env": {"A=B": "1"}}, "env"),
            ("/v1/execs/ok-1", {"argv": ["true"], "pty": {"rows": 0, "cols": 80}}, "pty"),
            ("/v1/execs/ok-1", {"argv": ["true"], "pty": {"rows": 24}}, "pty"),
            ("/v1/execs/ok-1", {"argv": ["true"], "pty": {"rows": 24, "cols": 80},
                                "stdin": "x"}, "pty"),
        ]
        for path, body, field in cases:
            self.assertRefused("PUT", path, body, 400, "invalid_request", field)
        self.assertRefused("PUT", "/v1/execs/ok-1", b"{not json", 400, "invalid_json")
        self.assertRefused("PUT", "/v1/execs/ok-1", {"argv": ["true"], "user": "no-such-user-x"},
                           400, "unknown_user", "user")
        self.assertRefused("PUT", "/v1/execs/ok-1", {"argv": ["true"], "group": "no-such-grp"},
                           400, "unknown_group", "group")
        # None of the refusals created a record.
        self.assertRefused("GET", "/v1/execs/ok-1", None, 404, "exec_not_found")

    def test_bad_requests_on_other_routes(self):
        start(self.daemon, "target-1", {"argv": ["sleep", "30"]})
        self.addCleanup(self.daemon.json, "POST", "/v1/execs/target-1/kill", {"signal": "KILL"})
        self.assertRefused("POST", "/v1/execs/target-1/kill", {"signal": "NOPE"}, 400,
                           "invalid_request", "signal")
        self.assertRefused("POST", "/v1/execs/target-1/kill", {"signal": "15"}, 400,
                           "invalid_request", "signal")
        self.assertRefused("POST", "/v1/execs/target-1/kill", {"grace_sec": -1}, 400,
                           "invalid_request", "grace_sec")
        self.assertRefused("POST", "/v1/execs/target-1/kill", b"[", 400, "invalid_json")
        self.assertRefused("GET", "/v1/execs/target-1?wait_ms=-1", None, 400, "invalid_request",
                           "wait_ms")
        self.assertRefused("GET", "/v1/execs/target-1?wait_ms=999999999", None, 400,
                           "invalid_request", "wait_ms")
        self.assertRefused("GET", "/v1/execs/target-1?max_bytes=0", None, 400, "invalid_request",
                           "max_bytes")
        self.assertRefused("GET", "/v1/execs/target-1?stdout_from=abc", None, 400,
                           "invalid_request", "stdout_from")
        self.assertRefused("GET", "/v1/execs/target-1?stdout_from=5", None, 400, "invalid_request",
                           "stdout_from")
        self.assertRefused("GET", "/v1/execs/target-1/stdout?from=99", None, 400,
                           "invalid_request", "from")
        self.assertRefused("GET", "/v1/execs/target-1/stdout?follow=yes", None, 400,
                           "invalid_request", "follow")
        s, _, b = self.daemon.request("GET", "/v1/execs/target-1/events",
                                      headers={"Last-Event-ID": "garbage"})
        self.assertEqual((s, error_code(json.loads(b))), (400, "invalid_request"))
        self.assertRefused("POST", "/v1/execs/target-1/stdin", b"x", 400, "invalid_request",
                           "offset")
        self.assertRefused("POST", "/v1/execs/target-1/ack", None, 409, "exec_running")
        self.assertRefused("POST", "/v1/execs/target-1/resize", {"rows": 1, "cols": 1}, 409,
                           "not_a_pty")
        for method, path in [("GET", "/v1/execs/unknown-1"), ("GET", "/v1/execs/unknown-1/stderr"),
                             ("POST", "/v1/execs/unknown-1/ack"),
                             ("POST", "/v1/execs/unknown-1/kill")]:
            self.assertRefused(method, path, None, 404, "exec_not_found")
        # The daemon is still fine.
        s, h = self.daemon.json("GET", "/v1/health", auth=False)
        self.assertEqual(s, 200)


if __name__ == "__main__":
    unittest.main()
