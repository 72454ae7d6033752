"""Timeouts, kill with escalation, and stdin (whole and streamed)."""

import hashlib
import json
import os
import shutil
import tempfile
import unittest

from lib.agentd_test import DaemonTestCase, b64, error_code
from lib.exec_util import pid_alive, read_stream, run, start, wait_exit, wait_until


def first_line_pids(d, exec_id):
    """Waits for the exec's first stdout line and returns the ints on it."""
    def line():
        out = read_stream(d, exec_id)
        return out if b"\n" in out else None
    return [int(x) for x in wait_until(line, what="first line").split(b"\n")[0].split()]


class TimeoutTest(DaemonTestCase):
    def test_timeout_kills_the_group_exits_124_and_keeps_output(self):
        start(self.daemon, "to-1", {
            "command": "sleep 1000 & echo $!; echo before >&2; wait",
            "timeout_sec": 3, "kill_grace_sec": 30})  # 3 s: output first, even under load
        (grandchild,) = first_line_pids(self.daemon, "to-1")
        obj = wait_exit(self.daemon, "to-1")
        self.assertEqual(obj["exit_code"], 124)
        self.assertTrue(obj["timed_out"])
        self.assertEqual(obj["killed_by"], "timeout")
        self.assertEqual(obj["signal"], "TERM")
        self.assertEqual(read_stream(self.daemon, "to-1", "stderr"), b"before\n")
        # The grandchild got the TERM too, and was reaped (no zombie left).
        wait_until(lambda: not os.path.exists("/proc/%d" % grandchild), what="grandchild reaped")

    def test_term_ignoring_group_gets_kill_after_the_grace(self):
        start(self.daemon, "to-2", {
            "command": "trap '' TERM; sh -c 'trap \"\" TERM; echo $$; while :; do sleep 0.05; done' & "
                       "wait; while :; do sleep 0.05; done",
            "timeout_sec": 3, "kill_grace_sec": 1})
        (grandchild,) = first_line_pids(self.daemon, "to-2")
        obj = wait_exit(self.daemon, "to-2")
        self.assertEqual((obj["exit_code"], obj["signal"]), (124, "KILL"))
        self.assertEqual(obj["killed_by"], "timeout")
        wait_until(lambda: not pid_alive(grandchild), what="grandchild killed")

    def test_a_fast_exit_is_not_a_timeout(self):
        obj, out, _ = run(self.daemon, "to-3", {"argv": ["echo", "quick"], "timeout_sec": 30})
        self.assertEqual((obj["exit_code"], obj["timed_out"], obj["killed_by"]), (0, False, None))


class OrphanTest(DaemonTestCase):
    def test_orphaned_grandchildren_are_adopted_and_reaped(self):
        # The middle shell exits at once; its child is orphaned while running.
        obj, out, _ = run(self.daemon, "orphan-1", {
            "command": "sh -c 'sleep 0.5 >/dev/null 2>&1 & echo $!'"})
        orphan = int(out)
        with open("/proc/%d/stat" % orphan) as f:
            ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        self.assertEqual(ppid, self.daemon.proc.pid)  # the daemon is its subreaper
        # Once it exits the daemon reaps it: no zombie stays behind.
        wait_until(lambda: not os.path.exists("/proc/%d" % orphan), what="orphan reaped")


class KillTest(DaemonTestCase):
    def test_kill_sends_the_signal_to_the_whole_group(self):
        start(self.daemon, "kill-1", {"command": "sleep 1000 & echo $!; wait"})
        (grandchild,) = first_line_pids(self.daemon, "kill-1")
        s, obj = self.daemon.json("POST", "/v1/execs/kill-1/kill", {"signal": "INT"})
        self.assertEqual(s, 200)
        self.assertEqual(obj["killed_by"], "kill")
        obj = wait_exit(self.daemon, "kill-1")
        self.assertEqual((obj["exit_code"], obj["signal"], obj["killed_by"]), (130, "INT", "kill"))
        self.assertFalse(obj["timed_out"])
        wait_until(lambda: not pid_alive(grandchild), what="grandchild gone")

    def test_kill_defaults_to_term_and_escalates_after_the_grace(self):
        start(self.daemon, "kill-2", {"command": "trap '' TERM; echo up; while :; do sleep 0.05; done"})
        wait_until(lambda: read_stream(self.daemon, "kill-2") == b"up\n", what="trap set")
        s, obj = self.daemon.json("POST", "/v1/execs/kill-2/kill", {"grace_sec": 1})
        self.assertEqual((s, obj["state"]), (200, "running"))
        obj = wait_exit(self.daemon, "kill-2")
        self.assertEqual((obj["exit_code"], obj["signal"], obj["killed_by"]), (137, "KILL", "kill"))

    def test_kill_is_idempotent_and_harmless_after_exit(self):
        start(self.daemon, "kill-3", {"argv": ["sleep", "1000"]})
        s1, _ = self.daemon.json("POST", "/v1/execs/kill-3/kill", b"")
        s2, _ = self.daemon.json("POST", "/v1/execs/kill-3/kill")
        self.assertEqual((s1, s2), (200, 200))
        obj = wait_exit(self.daemon, "kill-3")
        self.assertEqual((obj["exit_code"], obj["signal"]), (143, "TERM"))
        s3, again = self.daemon.json("POST", "/v1/execs/kill-3/kill", {"signal": "KILL"})
        self.assertEqual((s3, again), (200, obj))
        obj, _, _ = run(self.daemon, "kill-4", {"argv": ["true"]})
        s, after = self.daemon.json("POST", "/v1/execs/kill-4/kill")
        self.assertEqual((s, after["killed_by"], after["exit_code"]), (200, None, 0))


class StdinTest(DaemonTestCase):
    def test_whole_stdin_as_text_and_as_binary(self):
        obj, out, _ = run(self.daemon, "in-1", {"argv": ["cat"], "stdin": "hello\nworld"})
        self.assertEqual(out, b"hello\nworld")
        data = os.urandom(300000)  # larger than a pipe buffer
        obj, out, _ = run(self.daemon, "in-2", {"argv": ["cat"], "stdin_b64": b64(data)})
        self.assertEqual(out, data)

    def test_whole_stdin_a_process_never_reads_does_not_hang_its_exit(self):
        obj, out, _ = run(self.daemon, "in-3", {"argv": ["true"], "stdin_b64": b64(b"x" * 500000)})
        self.assertEqual(obj["exit_code"], 0)

    def test_streamed_stdin_skips_retried_bytes_and_refuses_gaps(self):
        start(self.daemon, "in-4", {"argv": ["cat"], "stdin_stream": True})
        post = lambda q, body: self.daemon.json("POST", "/v1/execs/in-4/stdin?" + q, body)
        self.assertEqual(post("offset=0", b"abc"), (200, {"next": 3}))
        # A retry of the same write, and one that overlaps it: nothing twice.
        self.assertEqual(post("offset=0", b"abc"), (200, {"next": 3}))
        self.assertEqual(post("offset=1", b"bcdef"), (200, {"next": 6}))
        s, b = post("offset=9", b"zzz")
        self.assertEqual((s, error_code(b)), (409, "stdin_offset_mismatch"))
        self.assertEqual((b["error"]["expected"], b["error"]["got"]), (6, 9))
        self.assertEqual(post("offset=6", b"\x00\xff"), (200, {"next": 8}))
        self.assertEqual(post("offset=8&eof=1", b""), (200, {"next": 8}))
        # After eof: a retry is still fine, new bytes are refused.
        self.assertEqual(post("offset=6&eof=1", b"\x00\xff"), (200, {"next": 8}))
        s, b = post("offset=8", b"more")
        self.assertEqual((s, error_code(b)), (409, "stdin_closed"))
        obj = wait_exit(self.daemon, "in-4")
        self.assertEqual(obj["exit_code"], 0)
        self.assertEqual(read_stream(self.daemon, "in-4"), b"abcdef\x00\xff")

    def test_streamed_stdin_larger_than_the_pipe_and_chunked(self):
        start(self.daemon, "in-5", {"command": "sha256sum", "stdin_stream": True})
        data = os.urandom(3 << 20)
        offset = 0
        for piece in range(3):
            body = data[piece << 20:(piece + 1) << 20]
            conn = self.daemon.connection()
            headers = self.daemon.headers(extra={"Transfer-Encoding": "chunked"})
            conn.putrequest("POST", "/v1/execs/in-5/stdin?offset=%d&eof=%d" % (offset, piece == 2))
            for k, v in headers.items():
                conn.putheader(k, v)
            conn.endheaders()
            for i in range(0, len(body), 100000):
                chunk = body[i:i + 100000]
                conn.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            conn.send(b"0\r\n\r\n")
            resp = conn.getresponse()
            self.assertEqual(resp.status, 200)
            offset = json.loads(resp.read())["next"]
            conn.close()
        self.assertEqual(offset, len(data))
        wait_exit(self.daemon, "in-5")
        self.assertEqual(read_stream(self.daemon, "in-5").split()[0].decode(),
                         hashlib.sha256(data).hexdigest())

    def test_stdin_routes_refuse_execs_without_streamed_stdin(self):
        start(self.daemon, "in-6", {"argv": ["cat"], "stdin": "x"})
        s, b = self.daemon.json("POST", "/v1/execs/in-6/stdin?offset=0", b"y")
        self.assertEqual((s, error_code(b)), (409, "stdin_not_streamed"))

    def test_stdin_after_exit_is_closed(self):
        start(self.daemon, "in-7", {"argv": ["true"], "stdin_stream": True})
        wait_exit(self.daemon, "in-7")
        s, b = self.daemon.json("POST", "/v1/execs/in-7/stdin?offset=0", b"late")
        self.assertEqual((s, error_code(b)), (409, "stdin_closed"))
        self.assertEqual(b["error"]["next"], 0)


if __name__ == "__main__":
    unittest.main()


class StdinStallTest(unittest.TestCase):
    def test_a_process_that_stops_reading_gets_a_short_next_and_resumes_by_offset(self):
        from lib.agentd_test import Daemon
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        gate = os.path.join(tmp, "gate")
        os.mkfifo(gate)
        with Daemon("--io-timeout-ms", "1000") as d:
            # The child stops reading its stdin until the test opens the gate.
            start(d, "stall-1", {"command": "read go; cat %s; cat" % gate, "stdin_stream": True})
            data = os.urandom(2 << 20)
            s, b = d.json("POST", "/v1/execs/stall-1/stdin?offset=0", b"go\n" + data)
            self.assertEqual(s, 200)
            taken = b["next"]
            self.assertLess(taken, len(data) + 3)  # the pipe filled; the rest was not taken
            with open(gate, "w"):
                pass
            # The writer resends from `next`; cat drains as it reads.
            offset = taken
            while offset < len(data) + 3:
                s, b = d.json("POST", "/v1/execs/stall-1/stdin?offset=%d&eof=1" % offset,
                              (b"go\n" + data)[offset:])
                self.assertEqual(s, 200, b)
                offset = b["next"]
            obj = wait_exit(d, "stall-1")
            self.assertEqual(obj["exit_code"], 0)
            self.assertEqual(read_stream(d, "stall-1"), data)
