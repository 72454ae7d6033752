"""Waiting for output: GET /v1/execs/{id}?until=match&pattern=RE wakes the
moment the pattern matches the exec's output (across chunk boundaries),
answers at once when the exec ends without a match, answers "timeout"
with a cursor to resume from, is read-only, and bounds its waiters."""

import base64
import os
import shutil
import socket
import tempfile
import threading
import time
import unittest
import urllib.parse

from lib.agentd_test import DaemonTestCase, error_code
from lib.exec_util import start, wait_exit


def q(**params):
    return urllib.parse.urlencode(params)


class Background:
    """A request answered on another thread (the test meanwhile acts)."""

    def __init__(self, daemon, path):
        self.result = None
        self.thread = threading.Thread(target=self._run, args=(daemon, path))
        self.thread.start()

    def _run(self, daemon, path):
        self.result = daemon.json("GET", path, timeout=120)

    def join(self):
        self.thread.join(150)
        assert not self.thread.is_alive(), "the wait did not answer"
        return self.result


class WaitForOutputTest(DaemonTestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="agentd-wait-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.marker = os.path.join(self.dir, "go")

    def gated(self, exec_id, before, after, then="sleep 600"):
        """Prints `before`, waits for the marker file, prints `after`."""
        cmd = ("printf '%s'; while [ ! -e %s ]; do sleep 0.01; done; printf '%s'; %s"
               % (before, self.marker, after, then))
        start(self.daemon, exec_id, {"command": cmd})
        self.addCleanup(self.daemon.json, "POST", "/v1/execs/%s/kill" % exec_id,
                        {"signal": "KILL"})
        if not before:
            return
        # The first part is in the log before the marker exists.
        status, body = self.daemon.json(
            "GET", "/v1/execs/%s?stdout_from=0&wait_ms=60000" % exec_id)
        self.assertEqual(status, 200, body)
        self.assertEqual(base64.b64decode(body["stdout"]["data_b64"]),
                         before.replace("\\n", "\n").encode())

    def test_a_match_split_across_two_output_chunks_is_found(self):
        self.gated("split", "booting\\nrea", "dy\\n")
        base = "/v1/execs/split?until=match&" + q(pattern="ready\n")
        # Half of the match is there: no match yet, and the cursor to
        # resume from is where the begun match starts.
        status, body = self.daemon.json("GET", base + "&wait_ms=0")
        self.assertEqual(status, 200, body)
        self.assertEqual(body["match"], {"stream": "stdout", "matched": False,
                                         "reason": "timeout", "next": 8})
        waiting = Background(self.daemon, base + "&wait_ms=120000")
        open(self.marker, "w").close()
        status, body = waiting.join()
        self.assertEqual(status, 200, body)
        self.assertEqual(body["match"]["text"], "ready\n")
        self.assertEqual(base64.b64decode(body["match"]["text_b64"]), b"ready\n")
        self.assertEqual((body["match"]["offset"], body["match"]["end"]), (8, 14))
        self.assertEqual(body["match"]["next"], 14)

    def test_a_wait_wakes_on_the_match_not_at_its_deadline(self):
        # The exec keeps running after the match: only the match can end
        # this wait before its 120 s deadline, and the answer says which.
        self.gated("wake", "", "server listening on port 8123\\n")
        waiting = Background(self.daemon, "/v1/execs/wake?until=match&wait_ms=120000&"
                             + q(pattern=r"listening on port (\d+)\n"))
        open(self.marker, "w").close()
        status, body = waiting.join()
        self.assertEqual(status, 200, body)
        self.assertTrue(body["match"]["matched"], body)
        self.assertEqual(body["match"]["text"], "listening on port 8123\n")
        self.assertEqual(body["state"], "running")

    def test_an_exec_that_ends_without_a_match_answers_at_once(self):
        self.gated("ends", "partial", "", then="exit 3")
        waiting = Background(self.daemon, "/v1/execs/ends?until=match&wait_ms=300000&"
                             + q(pattern="never"))
        open(self.marker, "w").close()
        status, body = waiting.join()
        self.assertEqual(status, 200, body)
        self.assertEqual(body["match"], {"stream": "stdout", "matched": False,
                                         "reason": "exited", "next": 7})
        self.assertEqual((body["state"], body["exit_code"]), ("exited", 3))
        # Already exited: the same answer without waiting.
        status, again = self.daemon.json("GET", "/v1/execs/ends?until=match&wait_ms=300000&"
                                         + q(pattern="never"))
        self.assertEqual(again["match"]["reason"], "exited")

    def test_the_end_of_the_output_counts_once_the_exec_exited(self):
        # `\d+` at the very end could still grow while the exec runs; at
        # its exit the end is final and the pattern matches there.
        start(self.daemon, "tail", {"command": "printf 'code 42'"})
        wait_exit(self.daemon, "tail")
        status, body = self.daemon.json("GET", "/v1/execs/tail?until=match&"
                                        + q(pattern=r"code \d+$"))
        self.assertEqual(body["match"]["text"], "code 42", body)

    def test_a_timeout_says_so_and_a_wait_resumes_from_its_cursor(self):
        self.gated("resume", "one ab", "c two abc\\n")
        base = "/v1/execs/resume?until=match&" + q(pattern="abc")
        status, body = self.daemon.json("GET", base + "&wait_ms=1")
        self.assertEqual(body["match"], {"stream": "stdout", "matched": False,
                                         "reason": "timeout", "next": 4})
        open(self.marker, "w").close()
        status, body = self.daemon.json("GET", base + "&wait_ms=120000&cursor=%d"
                                        % body["match"]["next"])
        self.assertEqual((body["match"]["offset"], body["match"]["text"]), (4, "abc"), body)
        # Resuming after that match finds the next one.
        status, body = self.daemon.json("GET", base + "&wait_ms=120000&cursor=%d"
                                        % body["match"]["next"])
        self.assertEqual(body["match"]["offset"], 12, body)

    def test_stderr_is_matched_from_the_given_cursor(self):
        start(self.daemon, "err", {"command": "printf 'ok 1\\nok 2\\n' >&2"})
        wait_exit(self.daemon, "err")
        status, body = self.daemon.json(
            "GET", "/v1/execs/err?until=match&stream=stderr&cursor=3&" + q(pattern=r"ok \d"))
        self.assertEqual(status, 200, body)
        self.assertEqual(body["match"]["stream"], "stderr")
        self.assertEqual((body["match"]["offset"], body["match"]["text"]), (5, "ok 2"))
        status, body = self.daemon.json("GET", "/v1/execs/err?until=match&" + q(pattern="ok"))
        self.assertEqual(body["match"]["reason"], "exited", body)

    def test_a_match_wait_carries_the_usual_poll_answer_and_never_acks(self):
        start(self.daemon, "ro", {"command": "echo hello world"})
        wait_exit(self.daemon, "ro")
        path = "/v1/execs/ro?until=match&stdout_from=0&" + q(pattern="wor.d")
        first = self.daemon.request("GET", path)
        second = self.daemon.request("GET", path)
        self.assertEqual(first[2], second[2])
        status, body = self.daemon.json("GET", path)
        self.assertEqual(base64.b64decode(body["stdout"]["data_b64"]), b"hello world\n")
        self.assertEqual(body["match"]["offset"], 6)
        self.assertFalse(body["acked"])

    def test_bad_wait_parameters_are_refused_naming_the_field(self):
        start(self.daemon, "bad", {"command": "echo x"})
        wait_exit(self.daemon, "bad")
        cases = [
            ("until=match&pattern=%28", "pattern"),     # "(" does not compile
            ("until=match", "pattern"),                 # required
            ("pattern=x", "pattern"),                   # needs until=match
            ("until=output&stream=stdout", "stream"),
            ("until=match&pattern=x&cursor=99", "cursor"),
            ("until=match&pattern=x&stream=both", "stream"),
            ("until=match&pattern=x&wait_ms=300001", "wait_ms"),
            ("until=match&pattern=x&patern=y", "patern"),
        ]
        for query, field in cases:
            status, body = self.daemon.json("GET", "/v1/execs/bad?" + query)
            self.assertError(status, body, 400, "invalid_request")
            self.assertEqual(body["error"]["field"], field, query)
        # A start that waits does not take until=match.
        status, body = self.daemon.json("PUT", "/v1/execs/bad2?until=match&pattern=x",
                                        {"command": "true"})
        self.assertError(status, body, 400, "invalid_request")


class WaitLimitTest(DaemonTestCase):
    def raw_wait(self, path):
        s = socket.create_connection(("127.0.0.1", self.daemon.port))
        s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n"
                   % (path, self.daemon.token)).encode())
        return s

    def test_waits_beyond_the_limit_are_refused_and_a_closed_client_frees_its_slot(self):
        start(self.daemon, "idle", {"command": "sleep 600"})
        self.addCleanup(self.daemon.json, "POST", "/v1/execs/idle/kill", {"signal": "KILL"})
        path = "/v1/execs/idle?until=match&pattern=never&wait_ms=300000"
        held = [self.raw_wait(path) for _ in range(256)]
        try:
            # The 257th is refused, naming the limit. (Each held wait is
            # known to the daemon once a refusal comes back: requests are
            # served in order of arrival on one io thread.)
            def refused():
                status, body = self.daemon.json("GET", path.replace("300000", "0"))
                return status == 503 and body
            body = None
            deadline = time.monotonic() + 30
            while not body and time.monotonic() < deadline:
                body = refused()
            self.assertTrue(body, "the 257th wait was never refused")
            self.assertEqual(error_code(body), "too_many_waits")
            self.assertEqual(body["error"]["limit"], 256)
            # A client that goes away frees its slot: the daemon learns it
            # from the socket, not at the 300 s deadline.
            held.pop().close()
            deadline = time.monotonic() + 30
            status = 503
            while status == 503 and time.monotonic() < deadline:
                status, body = self.daemon.json("GET", path.replace("300000", "0"))
            self.assertEqual(status, 200, body)
            self.assertEqual(body["match"]["reason"], "timeout")
        finally:
            for s in held:
                s.close()


if __name__ == "__main__":
    unittest.main()
