"""PTY execs: a controlling terminal, one merged output stream, input by
the stdin route, resize with SIGWINCH."""

import unittest

from lib.agentd_test import DaemonTestCase, error_code
from lib.exec_util import read_stream, run, start, wait_exit, wait_until

PTY = {"rows": 24, "cols": 80}


class PtyTest(DaemonTestCase):
    def test_the_child_runs_on_a_terminal_with_its_size_and_term(self):
        obj, out, err = run(self.daemon, "pty-1", {
            "command": "tty; stty size; echo $TERM; echo to-stderr >&2; test -t 0 && echo tty-in",
            "pty": PTY})
        self.assertEqual(obj["exit_code"], 0)
        lines = out.decode().split("\r\n")
        self.assertTrue(lines[0].startswith("/dev/pts/"), lines)
        self.assertEqual(lines[1:5], ["24 80", "xterm-256color", "to-stderr", "tty-in"])
        self.assertEqual((err, obj["stderr_bytes"]), (b"", 0))

    def test_term_from_the_request_and_env_wins(self):
        obj, out, _ = run(self.daemon, "pty-2", {"command": "echo $TERM",
                                                  "pty": dict(PTY, term="vt100")})
        self.assertEqual(out, b"vt100\r\n")
        obj, out, _ = run(self.daemon, "pty-3", {"command": "echo $TERM", "pty": PTY,
                                                  "env": {"TERM": "dumb"}})
        self.assertEqual(out, b"dumb\r\n")

    def test_input_goes_through_the_stdin_route(self):
        start(self.daemon, "pty-4", {"command": "read line; echo got:$line", "pty": PTY})
        s, b = self.daemon.json("POST", "/v1/execs/pty-4/stdin?offset=0", b"hello\n")
        self.assertEqual((s, b), (200, {"next": 6}))
        obj = wait_exit(self.daemon, "pty-4")
        self.assertEqual(obj["exit_code"], 0)
        self.assertIn(b"got:hello\r\n", read_stream(self.daemon, "pty-4"))

    def test_resize_sets_the_size_and_signals_winch(self):
        start(self.daemon, "pty-5", {"command": "trap 'echo size:$(stty size)' WINCH; echo ready; "
                                                "while :; do sleep 0.05; done", "pty": PTY})
        self.addCleanup(self.daemon.json, "POST", "/v1/execs/pty-5/kill", {"signal": "KILL"})
        wait_until(lambda: b"ready" in read_stream(self.daemon, "pty-5"), what="ready")
        s, obj = self.daemon.json("POST", "/v1/execs/pty-5/resize", {"rows": 50, "cols": 132})
        self.assertEqual((s, obj["state"]), (200, "running"))
        wait_until(lambda: b"size:50 132" in read_stream(self.daemon, "pty-5"), what="SIGWINCH")
        s, b = self.daemon.json("POST", "/v1/execs/pty-5/resize", {"rows": 0, "cols": 1})
        self.assertEqual((s, error_code(b)), (400, "invalid_request"))

    def test_kill_reaches_the_terminal_session(self):
        start(self.daemon, "pty-6", {"command": "echo up; sleep 1000", "pty": PTY})
        wait_until(lambda: b"up" in read_stream(self.daemon, "pty-6"), what="up")
        self.daemon.json("POST", "/v1/execs/pty-6/kill", {"signal": "HUP"})
        obj = wait_exit(self.daemon, "pty-6")
        self.assertEqual((obj["signal"], obj["killed_by"]), ("HUP", "kill"))


if __name__ == "__main__":
    unittest.main()
