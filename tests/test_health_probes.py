"""/v1/health as an orchestrator's probe (docs/PROTOCOL.md, "Health"): 200
while the daemon can serve; 503 with the reason while it drains after
SIGTERM (new work refused, reads served, the listener still answering) and
while its state directory takes no write. (Quarantine's 503 is in
test_reuse_reset and test_exec_restricted.) Health keeps part of its answer
serialized between calls (api/health_routes.cc); each input it depends on
still shows on the next call."""

import contextlib
import errno
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

from lib.agentd_test import Daemon, error_code
from lib.exec_util import start, wait_exit
from lib.fs_helpers import tmpfs, url

MiB = 1 << 20


def health(daemon):
    """(status, document, headers) of a health probe on a new connection, as
    a kubelet sends it."""
    conn = daemon.connection()
    try:
        conn.request("GET", "/v1/health")
        r = conn.getresponse()
        return r.status, json.loads(r.read()), dict(r.getheaders())
    finally:
        conn.close()


@contextlib.contextmanager
def state_dir_made_a_file(daemon):
    """The daemon's state directory replaced by a file (writes fail with
    ENOTDIR) for the block, then put back."""
    away = daemon.state_dir + ".away"
    os.rename(daemon.state_dir, away)
    with open(daemon.state_dir, "w") as f:
        f.write("not a directory")
    try:
        yield
    finally:
        os.unlink(daemon.state_dir)
        os.rename(away, daemon.state_dir)


def until_health(daemon, want_status):
    """Probes until health answers `want_status` (the state directory is
    checked at most every 250 ms); the daemon's own change ends the wait."""
    deadline = time.monotonic() + 30  # a ceiling only: the change comes in 250 ms
    while True:
        status, doc, _ = health(daemon)
        if status == want_status or time.monotonic() > deadline:
            return status, doc
        time.sleep(0.05)


class ServingHealthTest(unittest.TestCase):
    def test_health_is_200_ok_without_a_reason_while_the_daemon_can_serve(self):
        with Daemon() as d:
            status, doc, _ = health(d)
            self.assertEqual((status, doc["status"]), (200, "ok"), doc)
            self.assertNotIn("reason", doc)


class KeptAnswerTest(unittest.TestCase):
    def test_each_change_shows_on_the_next_call_of_one_keep_alive_connection(self):
        bindir = tempfile.mkdtemp(prefix="agentd-health-")
        os.symlink("/bin/sh", os.path.join(bindir, "sh"))
        try:
            with Daemon(env={"PATH": bindir}) as d:
                conn = d.connection()

                def now():
                    conn.request("GET", "/v1/health")
                    r = conn.getresponse()
                    self.assertEqual(r.status, 200)
                    return json.loads(r.read())

                def lists(doc):
                    return (doc["runtimes"],
                            sorted(u["runtime"] for u in doc["runtimes_unavailable"]),
                            sorted(t["runtime"] for t in doc["runtime_self_tests"]))

                self.assertEqual(lists(now()), (["shell"], ["python", "ts"], ["shell"]))
                self.assertEqual(lists(now()), (["shell"], ["python", "ts"], ["shell"]))
                # A PATH change alone: an interpreter installed, then removed.
                python = os.path.join(bindir, "python3")
                os.symlink(shutil.which("python3"), python)
                self.assertEqual(lists(now()),
                                 (["shell", "python"], ["ts"], ["python", "shell"]))
                os.unlink(python)
                self.assertEqual(lists(now())[:2], (["shell"], ["python", "ts"]))
                # busy and execs flip with an exec, and back when it ends.
                before = now()
                self.assertEqual((before["busy"], before["execs"]), (False, 0))
                start(d, "kept-1", {"command": "read x", "stdin_stream": True})
                during = now()
                self.assertEqual((during["busy"], during["execs"]), (True, 1))
                d.json("POST", "/v1/execs/kept-1/stdin?offset=0&eof=1", b"")
                wait_exit(d, "kept-1")
                after = now()
                self.assertEqual((after["busy"], after["execs"]), (False, 1))
                # Only uptime_ms moves between calls with no change.
                again = now()
                for doc in (after, again):
                    doc.pop("uptime_ms")
                    for t in doc["runtime_self_tests"]:  # a test may end between
                        t.pop("state")
                        t.pop("duration_ms", None)
                self.assertEqual(again, after)
                conn.close()
        finally:
            shutil.rmtree(bindir)


class DrainTest(unittest.TestCase):
    def test_after_sigterm_health_is_503_draining_new_work_refused_then_exit(self):
        # A long grace: only the request in flight, which the test ends,
        # holds the drain open.
        d = Daemon("--shutdown-grace-ms", "600000")
        try:
            target = os.path.join(d.tmp, "upload")
            status, body = d.json("PUT", "/v1/execs/before",
                                  {"argv": ["sleep", "600"]})
            self.assertIn(status, (200, 201), body)
            # An upload in flight: the daemon answered 100 Continue, so its
            # handler waits for the body.
            upload = socket.create_connection(("127.0.0.1", d.port))
            upload.settimeout(30)
            upload.sendall(("PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                            "Content-Length: 8\r\nExpect: 100-continue\r\n\r\n" %
                            (url("/v1/fs/file", path=target), d.token)).encode())
            self.assertEqual(upload.recv(100), b"HTTP/1.1 100 Continue\r\n\r\n")

            d.proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 30
            while not any('"shutting down"' in line for line in d.logs()):
                self.assertLess(time.monotonic(), deadline, "no shutdown log line")
                time.sleep(0.02)

            status, doc, headers = health(d)
            self.assertEqual((status, doc["status"]), (503, "draining"), doc)
            self.assertIn("SIGTERM", doc["reason"])
            self.assertEqual(headers.get("Connection"), "close")
            for method, path, req in (("PUT", "/v1/execs/after", {"argv": ["true"]}),
                                      ("POST", "/v1/run", {"code": "true"})):
                status, body = d.json(method, path, req)
                self.assertEqual((status, error_code(body)), (503, "shutting_down"), body)
                self.assertIn("SIGTERM", body["error"]["message"])
            # Reads still answer: the exec started before is there (killed).
            status, body = d.json("GET", "/v1/execs/before")
            self.assertEqual(status, 200, body)
            status, body = d.json("GET", "/v1/execs/after")
            self.assertEqual(status, 404, body)
            self.assertIsNone(d.proc.poll(), "the daemon left before its drain ended")

            upload.sendall(b"12345678")
            reply = upload.recv(4096)
            self.assertTrue(reply.startswith(b"HTTP/1.1 20"), reply)
            upload.close()
            self.assertEqual(d.proc.wait(30), 0)
            with open(target, "rb") as f:
                self.assertEqual(f.read(), b"12345678")
            # The exec was ended as the protocol says, recorded before exit.
            self.assertTrue(any('"killed on shutdown"' in line and '"before"' in line
                                for line in d.logs()), d.logs())
        finally:
            d.close()


class StateDirTest(unittest.TestCase):
    def assertUnwritable(self, doc, errno_name):
        self.assertEqual(doc["status"], "state_dir_unwritable", doc)
        self.assertEqual(doc["errno"], errno_name, doc)
        self.assertIn(".write-probe", doc["reason"])

    def test_a_state_dir_replaced_by_a_file_is_503_enotdir_until_restored(self):
        with Daemon() as d:
            with state_dir_made_a_file(d):
                status, doc = until_health(d, 503)
                self.assertEqual(status, 503, doc)
                self.assertUnwritable(doc, "ENOTDIR")
                self.assertIn("Not a directory", doc["reason"])
            status, doc = until_health(d, 200)
            self.assertEqual((status, doc["status"]), (200, "ok"), doc)

    def mounted_state_dir(self):
        if os.geteuid() != 0:
            self.skipTest("mounting a tmpfs needs root")
        mount = tmpfs(2 * MiB)
        path = mount.__enter__()
        self.addCleanup(mount.__exit__, None, None, None)
        if path is None:
            self.skipTest("could not mount a tmpfs")
        return path

    def test_a_full_state_dir_is_503_enospc_until_space_is_freed(self):
        fs = self.mounted_state_dir()
        with Daemon(state_dir=os.path.join(fs, "state")) as d:
            filler = os.path.join(fs, "filler")
            fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                while os.write(fd, b"x" * 65536):
                    pass
            except OSError as e:
                self.assertEqual(e.errno, errno.ENOSPC)
            finally:
                os.close(fd)
            try:
                status, doc = until_health(d, 503)
                self.assertEqual(status, 503, doc)
                self.assertUnwritable(doc, "ENOSPC")
                self.assertIn("No space left on device", doc["reason"])
            finally:
                os.unlink(filler)
            status, doc = until_health(d, 200)
            self.assertEqual((status, doc["status"]), (200, "ok"), doc)

    def test_a_read_only_state_dir_is_503_erofs(self):
        if os.geteuid() != 0:
            self.skipTest("mounting needs root")
        with Daemon() as d:
            # A read-only file system over the state directory's path (a
            # remount would be refused while the daemon has files open).
            if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs",
                               d.state_dir]).returncode != 0:
                self.skipTest("could not mount a tmpfs")
            try:
                status, doc = until_health(d, 503)
                self.assertEqual(status, 503, doc)
                self.assertUnwritable(doc, "EROFS")
                self.assertIn("Read-only file system", doc["reason"])
            finally:
                subprocess.run(["umount", "-l", d.state_dir], check=True)
            status, doc = until_health(d, 200)
            self.assertEqual((status, doc["status"]), (200, "ok"), doc)


class RequestLogTest(unittest.TestCase):
    """A probe's 200 is logged at debug: probes poll every few seconds per
    guest and a line each buried the log. Anything else health answers (a
    503 a probe acts on) still logs at info, like every other request."""

    def request_lines(self, daemon, marker):
        """The request lines logged up to `marker`'s (a 404 asked for last:
        lines are written in order on one thread, so any earlier line is
        there once the marker's is)."""
        conn = daemon.connection()
        try:
            conn.request("GET", marker, headers={"Authorization": "Bearer " + daemon.token})
            conn.getresponse().read()
        finally:
            conn.close()
        daemon.wait_log('"route":"%s"' % marker)
        lines = []
        for line in daemon.logs():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("msg") == "request":
                lines.append(entry)
        return lines

    def test_a_200_health_is_not_logged_at_info(self):
        with Daemon() as d:
            for _ in range(3):
                self.assertEqual(health(d)[0], 200)
            lines = self.request_lines(d, "/v1/no-such-route")
            self.assertEqual([l for l in lines if l["route"] == "/v1/health"], [], lines)
            self.assertIn(404, [l["status"] for l in lines])

    def test_a_200_health_is_logged_at_debug(self):
        with Daemon(log_level="debug") as d:
            self.assertEqual(health(d)[0], 200)
            lines = self.request_lines(d, "/v1/no-such-route")
            self.assertIn((200, "debug"), [(l["status"], l["level"]) for l in lines
                                           if l["route"] == "/v1/health"], lines)

    def test_a_503_health_is_logged_at_info(self):
        with Daemon() as d:
            with state_dir_made_a_file(d):
                self.assertEqual(until_health(d, 503)[0], 503)
            lines = self.request_lines(d, "/v1/no-such-route")
            self.assertIn((503, "info"), [(l["status"], l["level"]) for l in lines
                                          if l["route"] == "/v1/health"], lines)


if __name__ == "__main__":
    unittest.main()
