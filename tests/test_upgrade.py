"""Upgrade in place (docs/OPERATIONS.md, "Upgrading"): `agentd --upgrade` and
SIGUSR2 make the daemon execute the binary now on disk under the same PID,
handing over its listener and every running exec; a broken binary leaves
the old daemon serving with nothing lost.

Each test runs its own daemon from a private copy of the binary, so it can
replace that file (with itself, a non-ELF file or a script) the way an
operator replaces the installed one.
"""

import base64
import hashlib
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from agentd_test import AGENTD_BIN, Daemon  # noqa: E402
from echo_server import EchoServer  # noqa: E402
from exec_util import SseEvents, wait_until  # noqa: E402
from sse_reader import SseStream  # noqa: E402

# A retry after a connection the upgrade closed; far more than one upgrade needs.
MAX_RECONNECTS = 50

# A shell run that says it began (opening a FIFO the test reads) and then
# answers with the line the test writes into another.
GATED_RUN = 'echo began > %s; read line < %s; echo "$line"'


HEALTH = b"GET /v1/health HTTP/1.1\r\nHost: agentd\r\n\r\n"


def read_health(sock):
    """One health answer read from a raw socket: (status, upgrades)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed after %r" % data)
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = next(int(line.split(":")[1]) for line in lines
                  if line.lower().startswith("content-length:"))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed in the body")
        body += chunk
    return int(lines[0].split()[1]), json.loads(body[:length])["upgrades"]



def dechunked_prefix(body):
    """The payload of the whole chunks at the start of a chunked body."""
    out, at = bytearray(), 0
    while True:
        eol = body.find(b"\r\n", at)
        if eol < 0:
            return out
        size = int(body[at:eol], 16)
        if size == 0 or len(body) < eol + 4 + size:
            return out
        out.extend(body[eol + 2:eol + 2 + size])
        at = eol + 4 + size

class UpgradeCase(unittest.TestCase):
    FLAGS = ()  # the daemon's flags

    def setUp(self):
        self.bin_dir = os.path.realpath(
            os.path.join(os.environ.get("TMPDIR", "/tmp"), "agentd-upgrade-%d-%s" % (
                os.getpid(), self.id().rsplit(".", 1)[-1])))
        os.makedirs(self.bin_dir, exist_ok=True)
        self.addCleanup(shutil.rmtree, self.bin_dir, True)
        self.binary = os.path.join(self.bin_dir, "agentd")
        self.install(AGENTD_BIN)
        self.daemon = Daemon(*self.FLAGS, binary=self.binary)
        self.addCleanup(self.daemon.close)
        self.pid = self.daemon.proc.pid
        # The bootstrap's connection, closed on our side, until the daemon
        # read its end: left, the first upgrade carries it over and the new
        # binary closes it a moment later, one descriptor the leak checks
        # would count.
        wait_until(lambda: not self.tcp_connections(), what="the bootstrap connection closed")

    def tcp_connections(self):
        """The daemon's TCP sockets that are not listeners (socket inodes
        of its descriptors found in /proc/net/tcp, tcp6 in any state but
        LISTEN)."""
        inodes = set()
        for fd in os.listdir("/proc/%d/fd" % self.pid):
            try:
                target = os.readlink("/proc/%d/fd/%s" % (self.pid, fd))
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
        found = []
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with open(table) as f:
                for line in f.readlines()[1:]:
                    fields = line.split()
                    if fields[9] in inodes and fields[3] != "0A":
                        found.append(fields[9])
        return found

    def install(self, source=None, text=None):
        """Replaces the binary on disk the way a package upgrade does (rename)."""
        tmp = self.binary + ".new"
        if text is not None:
            with open(tmp, "w") as f:
                f.write(text)
        else:
            shutil.copyfile(source, tmp)
        os.chmod(tmp, 0o755)
        os.rename(tmp, self.binary)

    def upgrade(self):
        """`agentd --upgrade` against the test's daemon: (exit status, stdout)."""
        run = subprocess.run([AGENTD_BIN, "--upgrade", "--state-dir", self.daemon.state_dir],
                             capture_output=True, text=True, timeout=120)
        return run.returncode, run.stdout + run.stderr

    def health(self):
        status, body = self.daemon.json("GET", "/v1/health", auth=False)
        self.assertEqual(status, 200, body)
        return body

    def start(self, exec_id, body):
        status, obj = self.daemon.json("PUT", "/v1/execs/" + exec_id, body)
        self.assertEqual(status, 201, obj)
        return obj

    def wait_exit(self, exec_id):
        for _ in range(MAX_RECONNECTS):
            try:
                status, obj = self.daemon.json(
                    "GET", "/v1/execs/%s?wait_ms=60000&until=exit" % exec_id, timeout=120)
            except (ConnectionError, http.client.HTTPException):
                continue  # the upgrade closed this connection: ask again
            self.assertEqual(status, 200, obj)
            if obj["state"] == "exited":
                return obj
        self.fail("exec %s did not exit" % exec_id)

    def stdin(self, exec_id, offset, data, eof=True):
        status, obj = self.daemon.json(
            "POST", "/v1/execs/%s/stdin?offset=%d%s" % (exec_id, offset, "&eof=1" if eof else ""),
            data)
        self.assertEqual(status, 200, obj)

    def fifo(self, name):
        path = os.path.join(self.bin_dir, name + ".fifo")
        os.mkfifo(path)
        return path

    def fd_count(self):
        """The daemon's descriptors, less the directory walk of its start-up
        sweep of dead daemons' tenant cgroups (exec_open.cc: on the blocking
        pool, after the new binary serves, so it can be open when an upgrade
        has returned): a descriptor on a cgroup outside this daemon's own
        tenant group. Its own cgroup descriptors all lie inside that group."""
        own = re.compile(r"/agentd-tenant-%d(-\d+)?(/|$)" % self.pid)
        count = 0
        for fd in os.listdir("/proc/%d/fd" % self.pid):
            try:
                target = os.readlink("/proc/%d/fd/%s" % (self.pid, fd))
            except OSError:
                continue  # closed meanwhile
            if target.startswith("/sys/fs/cgroup") and not own.search(target):
                continue
            count += 1
        return count

    def gated_run(self):
        """Starts a /v1/run that blocks until released; returns a function that
        releases it and checks its answer came whole."""
        began, gate = self.fifo("began"), self.fifo("gate")
        answer = {}

        def run():
            answer["status"], answer["body"] = self.daemon.json(
                "POST", "/v1/run", {"runtime": "shell", "code": GATED_RUN % (began, gate)},
                timeout=120)
        runner = threading.Thread(target=run)
        runner.start()
        with open(began) as f:
            self.assertEqual(f.read(), "began\n")

        def release():
            with open(gate, "w") as f:
                f.write("through\n")
            runner.join()
            self.assertEqual(answer["status"], 200, answer["body"])
            self.assertEqual((answer["body"]["exit_code"], answer["body"]["stdout"]),
                             (0, "through\n"))
        return release


class UpgradeInPlaceTest(UpgradeCase):
    def test_upgrade_keeps_the_pid_listener_and_token_and_counts_itself(self):
        before = self.health()
        self.assertEqual((before["upgrades"], before["upgrade_failures"]), (0, 0))
        code, out = self.upgrade()
        self.assertEqual(code, 0, out)
        self.assertIn('"ok":true', out)
        after = self.health()
        self.assertEqual(after["upgrades"], 1)
        self.assertEqual(after["version"], before["version"])
        self.assertGreaterEqual(after["uptime_ms"], before["uptime_ms"])  # carried over
        self.assertIsNone(self.daemon.proc.poll())
        self.assertEqual(self.daemon.proc.pid, self.pid)
        # Bootstrapped before, bootstrapped after: the token was handed over.
        status, body = self.daemon.json("GET", "/v1/execs")
        self.assertEqual(status, 200, body)
        status, body = self.daemon.json("GET", "/v1/execs", headers={"Authorization": "Bearer x"},
                                        auth=False)
        self.assertEqual(status, 401, body)

    def test_an_idle_upgrade_leaks_no_descriptor(self):
        self.assertEqual(self.upgrade()[0], 0)
        settled = self.fd_count()
        for _ in range(3):
            self.assertEqual(self.upgrade()[0], 0)
        self.assertEqual(self.fd_count(), settled)
        self.assertEqual(self.health()["upgrades"], 4)

    def test_an_idle_keep_alive_connection_is_carried_over_and_answered_by_the_new_binary(self):
        conn = self.daemon.connection(timeout=30)
        self.addCleanup(conn.close)
        # Answered, so accepted: the connection now waits for its next request.
        conn.request("GET", "/v1/health")
        self.assertEqual(json.loads(conn.getresponse().read())["upgrades"], 0)
        self.assertEqual(self.upgrade()[0], 0)
        conn.request("GET", "/v1/health")
        resp = conn.getresponse()
        self.assertEqual((resp.status, json.loads(resp.read())["upgrades"]), (200, 1))

    def test_a_request_head_half_sent_at_the_upgrade_is_completed_and_answered_after(self):
        s = socket.create_connection(("127.0.0.1", self.daemon.port), timeout=30)
        self.addCleanup(s.close)
        # One send: a whole request and half the next head. The first answer
        # shows the daemon read the send; the half head waits in its buffer
        # (or, read later, in the socket: the answer must be the same).
        s.sendall(HEALTH + HEALTH[:20])
        self.assertEqual(read_health(s), (200, 0))
        self.assertEqual(self.upgrade()[0], 0)
        s.sendall(HEALTH[20:])
        self.assertEqual(read_health(s), (200, 1))

    def test_sigusr2_upgrades_too(self):
        status_file = os.path.join(self.daemon.state_dir, "upgrade-status.json")
        os.kill(self.pid, signal.SIGUSR2)
        # The daemon writes the outcome once the new binary serves (what
        # `agentd --upgrade` waits for); a bound only so a miss fails.
        deadline = time.monotonic() + 120
        while not os.path.exists(status_file):
            self.assertLess(time.monotonic(), deadline, "no upgrade outcome was written")
            time.sleep(0.02)
        with open(status_file) as f:
            self.assertTrue(json.load(f)["ok"])
        for _ in range(MAX_RECONNECTS):
            try:
                self.assertEqual(self.health()["upgrades"], 1)
                return
            except (ConnectionError, http.client.HTTPException):
                continue  # a connection the upgrade closed: ask again
        self.fail("health did not answer after the upgrade")

    def test_an_exec_started_after_the_upgrade_runs(self):
        self.assertEqual(self.upgrade()[0], 0)
        self.start("after", {"argv": ["sh", "-c", "echo fresh; exit 3"]})
        obj = self.wait_exit("after")
        self.assertEqual(obj["exit_code"], 3)
        status, _, body = self.daemon.request("GET", "/v1/execs/after/stdout")
        self.assertEqual(body, b"fresh\n")

    def test_many_running_execs_report_their_true_exit_codes(self):
        count = 50
        for i in range(count):
            # Each waits for its stdin, so all of them run across the upgrade.
            self.start("many-%d" % i, {"argv": ["sh", "-c", "read x; echo got $x; exit %d" % i],
                                       "stdin_stream": True})
        code, out = self.upgrade()
        self.assertEqual(code, 0, out)
        for i in range(count):
            self.stdin("many-%d" % i, 0, b"v%d\n" % i)
        for i in range(count):
            obj = self.wait_exit("many-%d" % i)
            self.assertEqual(obj["exit_code"], i, obj)
            self.assertIsNone(obj["killed_by"], obj)
            status, _, body = self.daemon.request("GET", "/v1/execs/many-%d/stdout" % i)
            self.assertEqual(body, b"got v%d\n" % i)

    def test_a_sleep_started_before_can_be_killed_and_timed_out_after(self):
        self.start("to-kill", {"argv": ["sleep", "1000"]})
        self.start("to-time-out", {"argv": ["sleep", "1000"], "timeout_sec": 2})
        # Twice: an exec the first upgrade handed over is handed over again.
        self.assertEqual(self.upgrade()[0], 0)
        self.assertEqual(self.upgrade()[0], 0)
        status, body = self.daemon.json("POST", "/v1/execs/to-kill/kill", {"signal": "KILL"})
        self.assertEqual(status, 200, body)
        killed = self.wait_exit("to-kill")
        self.assertEqual(killed["signal"], "KILL", killed)
        timed = self.wait_exit("to-time-out")
        self.assertEqual((timed["exit_code"], timed["timed_out"], timed["killed_by"]),
                         (124, True, "timeout"), timed)

    def test_a_pty_session_keeps_its_terminal_input_and_resize(self):
        self.start("tty", {"command": "stty size; read x; stty size; echo got $x; exit 5",
                           "pty": {"rows": 24, "cols": 80}})
        self.assertEqual(self.upgrade()[0], 0)
        status, obj = self.daemon.json("POST", "/v1/execs/tty/resize", {"rows": 50, "cols": 132})
        self.assertEqual((status, obj["state"]), (200, "running"), obj)
        self.stdin("tty", 0, b"hi\n", eof=False)
        self.assertEqual(self.wait_exit("tty")["exit_code"], 5)
        status, _, out = self.daemon.request("GET", "/v1/execs/tty/stdout")
        # The terminal echoes the input line ("hi") as it arrives.
        self.assertEqual(out.replace(b"\r", b"").split(b"\n"),
                         [b"24 80", b"hi", b"50 132", b"got hi", b""], out)

    def test_an_exec_fed_its_whole_stdin_is_fed_the_rest_after_the_upgrade(self):
        data = random.Random(24).randbytes(400_000)  # far more than the pipe holds
        gate = self.fifo("fed")
        # Reads one block, then waits for the test: most of the input is
        # still to be given at the upgrade (which refused this before).
        self.start("fed", {
            "command": "{ dd bs=65536 count=1 2>/dev/null; read x < %s; cat; } | sha256sum; "
                       "exit 6" % gate,
            "stdin_b64": base64.b64encode(data).decode()})
        try:
            code, out = self.upgrade()
            self.assertEqual(code, 0, out)
        finally:
            with open(gate, "w") as f:
                f.write("x\n")
        obj = self.wait_exit("fed")
        self.assertEqual((obj["exit_code"], obj["killed_by"]), (6, None), obj)
        status, _, body = self.daemon.request("GET", "/v1/execs/fed/stdout")
        self.assertEqual(body, (hashlib.sha256(data).hexdigest() + "  -\n").encode())

    def test_a_closed_streamed_stdin_still_answers_stdin_closed_after_the_upgrade(self):
        gate = self.fifo("closed")
        # One exited with its input closed, one still running with it closed.
        self.start("in-done", {"command": "cat", "stdin_stream": True})
        self.start("in-open", {"command": "cat; read g < %s" % gate, "stdin_stream": True})
        for exec_id in ("in-done", "in-open"):
            self.stdin(exec_id, 0, b"abc", eof=True)
        self.wait_exit("in-done")

        def late(exec_id):
            status, obj = self.daemon.json("POST", "/v1/execs/%s/stdin?offset=3" % exec_id, b"x")
            return status, obj["error"]["code"], obj["error"].get("next")
        try:
            before = [late(x) for x in ("in-done", "in-open")]
            self.assertEqual(before, [(409, "stdin_closed", 3)] * 2)
            code, out = self.upgrade()
            self.assertEqual(code, 0, out)
            self.assertEqual([late(x) for x in ("in-done", "in-open")], before)
        finally:
            with open(gate, "w") as f:
                f.write("g\n")
        self.assertEqual(self.wait_exit("in-open")["exit_code"], 0)

    def test_execs_under_cgroup_limits_keep_them_after_the_upgrade(self):
        limits = self.health()["limits"]
        if limits["mechanism"] == "rlimit":
            self.skipTest("no usable cgroup here")
        gates = {name: self.fifo(name) for name in ("pids", "mem")}
        # Each waits for the test, then goes over its limit: forks past 4
        # processes, memory past 48 MiB. `sleep` keeps the shell running on,
        # so only the daemon's reading of the group ends the exec.
        self.start("pids", {"command": "read x < %s; for i in 1 2 3 4 5 6 7 8; do sleep 300 & "
                                       "done; sleep 300" % gates["pids"],
                            "pids": 4, "timeout_sec": 600})
        self.start("mem", {"command": "read x < %s; python3 -c 'x = bytearray(400 << 20)'; "
                                      "sleep 300" % gates["mem"],
                           "memory_mb": 48, "timeout_sec": 600})
        try:
            code, out = self.upgrade()
            self.assertEqual(code, 0, out)
        finally:
            for gate in gates.values():
                with open(gate, "w") as f:
                    f.write("x\n")
        pids = self.wait_exit("pids")
        self.assertEqual((pids["killed_by"], pids["limit"]["name"]), ("pids", "pids"), pids)
        mem = self.wait_exit("mem")
        self.assertEqual((mem["killed_by"], mem["limit"]["name"]), ("memory", "memory"), mem)

    def test_a_large_stream_read_by_cursor_across_the_upgrade_is_byte_exact(self):
        # Half the output, then (once stdin says so) the rest: the upgrade
        # comes while the second half pours into the pipe and the reader reads.
        first, total = 400000, 1500000
        self.start("big", {"argv": ["sh", "-c", "seq 1 %d; read x; seq %d %d" % (
            first, first + 1, total)], "stdin_stream": True})
        expected = "".join("%d\n" % i for i in range(1, total + 1)).encode()
        got = bytearray()
        errors = []
        first_half = threading.Event()

        def read():
            reconnects = 0
            while True:
                try:
                    status, obj = self.daemon.json(
                        "GET", "/v1/execs/big?stdout_from=%d&wait_ms=60000&until=output"
                        "&max_bytes=65536" % len(got), timeout=120)
                except (ConnectionError, http.client.HTTPException) as e:
                    reconnects += 1
                    if reconnects > MAX_RECONNECTS:
                        errors.append(repr(e))
                        return
                    continue
                if status != 200:
                    errors.append(obj)
                    return
                chunk = obj["stdout"]
                if chunk["from"] != len(got):
                    errors.append("gap at %d: %r" % (len(got), chunk["from"]))
                    return
                got.extend(base64.b64decode(chunk["data_b64"]))
                if len(got) >= len(expected[:expected.index(b"\n%d\n" % first) + 1]):
                    first_half.set()
                if obj["state"] == "exited" and chunk["next"] == obj["stdout_bytes"]:
                    return

        reader = threading.Thread(target=read)
        reader.start()
        try:
            first_half.wait(120)
            self.assertTrue(first_half.is_set(), errors)
            self.stdin("big", 0, b"go\n")
            code, out = self.upgrade()
            self.assertEqual(code, 0, out)
        finally:
            reader.join(300)
        self.assertEqual(errors, [])
        self.assertEqual(len(got), len(expected))
        self.assertTrue(bytes(got) == expected, "the stream's bytes differ")
        self.assertEqual(self.wait_exit("big")["exit_code"], 0)

    def test_a_raw_follower_fed_by_its_tap_resumes_from_its_count_after_the_upgrade(self):
        # A caught-up raw follower gets new bytes from its tap (a tee of the
        # child's pipe), which is not handed over: the upgrade cuts its
        # stream after whole chunks, and a follow from the bytes it has gets
        # the rest, each byte once. The exec waits for a second line after
        # printing everything, so it still runs when the upgrade comes: on a
        # loaded machine the socket buffers can take all of the rest, and
        # an exec that ended first leaves nothing to cut.
        first, total = 200000, 900000
        self.start("tapped", {"argv": ["sh", "-c", "seq 1 %d; read x; seq %d %d; read y" % (
            first, first + 1, total)], "stdin_stream": True})
        expected = "".join("%d\n" % i for i in range(1, total + 1)).encode()
        half = len(expected[:expected.index(b"\n%d\n" % first) + 1])
        got = bytearray()

        def follow():
            s = socket.create_connection(("127.0.0.1", self.daemon.port), timeout=120)
            s.sendall(("GET /v1/execs/tapped/stdout?from=%d&follow=1 HTTP/1.1\r\nHost: x\r\n"
                       "Authorization: Bearer %s\r\n\r\n" % (len(got), self.daemon.token)).encode())
            return s

        s, raw, reconnects = follow(), b"", 0
        upgraded = False
        while True:
            chunk = s.recv(1 << 16)
            raw += chunk
            head, sep, body = raw.partition(b"\r\n\r\n")
            done = sep and body.endswith(b"0\r\n\r\n")
            if not chunk or done:
                # Whole chunks only: a cut one is asked again from the count.
                got.extend(dechunked_prefix(body))
                s.close()
                if done:
                    break
                reconnects += 1
                self.assertLessEqual(reconnects, MAX_RECONNECTS)
                s, raw = follow(), b""
                continue
            if not upgraded and len(dechunked_prefix(body)) >= half:
                self.stdin("tapped", 0, b"go\n", eof=False)
                code, out = self.upgrade()
                self.assertEqual(code, 0, out)
                upgraded = True
                self.stdin("tapped", 3, b"end\n")  # to the new binary: the exec may end
        self.assertTrue(upgraded)
        self.assertGreaterEqual(reconnects, 1)  # the upgrade cut the follow
        self.assertEqual(len(got), len(expected))
        self.assertTrue(bytes(got) == expected, "the stream's bytes differ")
        self.assertEqual(self.wait_exit("tapped")["exit_code"], 0)

    def test_an_event_stream_resumes_across_the_upgrade_with_last_event_id(self):
        # An SSE reader has the first half when the upgrade closes its
        # connection; it reconnects with the Last-Event-ID it last saw, the
        # exec (its stdin pipe handed over too) prints the rest, and every
        # byte arrives exactly once, without a gap event.
        first, total = 100000, 300000
        self.start("sse", {"argv": ["sh", "-c", "seq 1 %d; read x; seq %d %d" % (
            first, first + 1, total)], "stdin_stream": True})
        expected = "".join("%d\n" % i for i in range(1, total + 1)).encode()
        first_part = len("".join("%d\n" % i for i in range(1, first + 1)))
        got = bytearray()
        last_id = None
        exit_obj = None

        def take(events):
            nonlocal last_id, exit_obj
            for event, data, eid in events:
                payload = json.loads(data)
                self.assertNotEqual(event, "gap", payload)
                if event == "stdout":
                    self.assertEqual(payload["offset"], len(got))
                    got.extend(base64.b64decode(payload["data_b64"]))
                elif event == "exit":
                    exit_obj = payload
                self.assertEqual(eid, "%d:0" % len(got))
                last_id = eid

        stream = SseEvents(self.daemon, "sse", timeout=120)
        self.assertEqual(stream.status, 200)
        while len(got) < first_part:
            events = stream.read_some()
            self.assertFalse(stream.ended, "the stream ended before the first part")
            take(events)
        self.assertEqual(len(got), first_part)  # the exec waits on its stdin now
        code, out = self.upgrade()
        self.assertEqual(code, 0, out)
        while not stream.ended:  # the old daemon closed it: nothing more, nothing torn
            try:
                take(stream.read_some())
            except (ConnectionError, http.client.HTTPException):
                break  # cut mid-chunk, as a dropped connection is
        stream.cut()
        self.stdin("sse", 0, b"go\n")
        for _ in range(MAX_RECONNECTS):
            if exit_obj is not None:
                break
            try:
                stream = SseEvents(self.daemon, "sse", last_event_id=last_id, timeout=120)
            except (ConnectionError, http.client.HTTPException):
                continue
            self.assertEqual(stream.status, 200)
            try:
                while not stream.ended and exit_obj is None:
                    take(stream.read_some())
            except (ConnectionError, http.client.HTTPException):
                pass
            stream.cut()
        self.assertIsNotNone(exit_obj, "no exit event after %d reconnects" % MAX_RECONNECTS)
        self.assertEqual(exit_obj["exit_code"], 0)
        self.assertEqual(len(got), len(expected))
        self.assertTrue(bytes(got) == expected, "the stream's bytes differ")

    def test_a_tunnel_and_a_watch_stream_in_flight_continue_across_the_upgrade(self):
        echo = EchoServer()
        self.addCleanup(echo.server_close)
        self.addCleanup(echo.shutdown)
        watched = os.path.join(self.bin_dir, "watched")
        os.mkdir(watched)
        watch = SseStream(self.daemon, "/v1/fs/watch?path=" + watched, timeout=60)
        self.addCleanup(watch.close)
        self.assertEqual(watch.status, 200)
        tunnel = socket.create_connection(("127.0.0.1", self.daemon.port), timeout=60)
        self.addCleanup(tunnel.close)
        tunnel.sendall(("GET /v1/ports/%d/connect HTTP/1.1\r\nHost: guest\r\nAuthorization: "
                        "Bearer %s\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n"
                        % (echo.port, self.daemon.token)).encode())
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            head += tunnel.recv(1)
        self.assertTrue(head.startswith(b"HTTP/1.1 101 "), head)

        def roundtrip(data):
            tunnel.sendall(data)
            got = b""
            while len(got) < len(data):
                chunk = tunnel.recv(65536)
                self.assertTrue(chunk, "the tunnel ended after %d bytes" % len(got))
                got += chunk
            self.assertTrue(got == data, "the echoed bytes differ")

        # Before: both streams work.
        roundtrip(b"before" * 1000)
        os.mkdir(os.path.join(watched, "a"))
        self.assertEqual(watch.next(timeout=60), ("created", {"path": watched + "/a",
                                                              "type": "dir"}, "1"))
        # During: a megabyte the client sends and does not read yet, so the
        # relay stalls with bytes in every buffer (the daemon's own
        # included) when the upgrade comes; and a change nobody read yet.
        during = bytes(range(256)) * 4096
        sender = threading.Thread(target=tunnel.sendall, args=(during,))
        sender.start()
        os.mkdir(os.path.join(watched, "b"))
        code, out = self.upgrade()
        self.assertEqual(code, 0, out)
        got = b""
        while len(got) < len(during):
            chunk = tunnel.recv(65536)
            self.assertTrue(chunk, "the tunnel ended after %d bytes" % len(got))
            got += chunk
        sender.join()
        self.assertEqual(len(got), len(during))
        self.assertTrue(got == during, "the bytes relayed across the upgrade differ")
        # After: the same connections go on, the watch's ids without a gap.
        roundtrip(b"after" * 1000)
        tunnel.shutdown(socket.SHUT_WR)  # a half-close still reaches the guest
        self.assertEqual(tunnel.recv(16), b"bye")
        os.mkdir(os.path.join(watched, "c"))
        self.assertEqual(watch.next(timeout=60), ("created", {"path": watched + "/b",
                                                              "type": "dir"}, "2"))
        self.assertEqual(watch.next(timeout=60), ("created", {"path": watched + "/c",
                                                              "type": "dir"}, "3"))
        os.rmdir(os.path.join(watched, "a"))
        os.rmdir(os.path.join(watched, "b"))
        os.rmdir(os.path.join(watched, "c"))
        os.rmdir(watched)  # the stream ends whole: the final event, then its last chunk
        self.assertEqual([watch.next(timeout=60)[0] for _ in range(4)], ["removed"] * 4)
        self.assertIsNone(watch.next(timeout=60))
        self.assertEqual(self.health()["upgrades"], 1)


class WaitingConnectionUpgradeTest(UpgradeCase):
    """A daemon on a Unix socket and TCP: connections waiting for a request
    on either are carried over every upgrade."""

    def setUp(self):
        sock_dir = tempfile.mkdtemp(prefix="agentd-u")
        self.addCleanup(shutil.rmtree, sock_dir, True)
        self.sock_path = os.path.join(sock_dir, "a.sock")
        self.FLAGS = ("--listen", "unix:" + self.sock_path)
        super().setUp()

    def unix_connection(self):
        s = socket.socket(socket.AF_UNIX)
        self.addCleanup(s.close)
        s.settimeout(30)
        s.connect(self.sock_path)
        return s

    def tcp_connection(self):
        s = socket.create_connection(("127.0.0.1", self.daemon.port), timeout=30)
        self.addCleanup(s.close)
        return s

    def test_waiting_connections_on_both_listeners_are_carried_over_with_no_descriptor_leak(self):
        kept = [self.unix_connection(), self.tcp_connection()]
        for s in kept:  # answered: accepted and idle
            s.sendall(HEALTH)
            self.assertEqual(read_health(s), (200, 0))
        self.assertEqual(self.upgrade()[0], 0)
        settled = self.fd_count()
        # Connected, nothing sent: accepted by the old binary or not, answered.
        fresh = [self.unix_connection(), self.tcp_connection()]
        for upgrades in (2, 3):
            for s in kept + fresh:
                s.sendall(HEALTH)
                self.assertEqual(read_health(s), (200, upgrades - 1))
            self.assertEqual(self.upgrade()[0], 0)
        # Counted as `settled` was, right after an upgrade (health's probes
        # open descriptors of their own later): only the fresh ones added.
        self.assertEqual(self.fd_count(), settled + len(fresh))
        for s in kept + fresh:
            s.sendall(HEALTH)
            self.assertEqual(read_health(s), (200, 3))


class ContextUpgradeTest(UpgradeCase):
    def context_run(self, cid, body):
        status, r = self.daemon.json("POST", "/v1/contexts/%s/run" % cid, body, timeout=120)
        self.assertEqual(status, 200, r)
        return r

    def context(self, cid):
        status, info = self.daemon.json("GET", "/v1/contexts/" + cid)
        self.assertEqual(status, 200, info)
        return info

    def test_an_idle_context_keeps_its_interpreter_and_state_across_the_upgrade(self):
        status, made = self.daemon.json("POST", "/v1/contexts", {"id": "py", "runtime": "python"},
                                        timeout=60)
        self.assertEqual(status, 201, made)
        self.context_run("py", {"code": "x = 41\nn = 0"})
        counted = self.context_run("py", {"code": "n += 1\nprint(n)", "run_id": "once"})
        self.assertEqual(counted["stdout"], "1\n")
        before = self.context("py")
        code, out = self.upgrade()
        self.assertEqual(code, 0, out)
        self.assertEqual(self.health()["upgrades"], 1)
        after = self.context("py")
        self.assertEqual(after, before)  # same interpreter (pid), runs, created_at, cwd
        r = self.context_run("py", {"code": "print(x + 1)"})
        self.assertEqual((r["exit_code"], r["stdout"], r["stderr"]), (0, "42\n", ""))
        # A retried run_id replays its answer: the code does not run again.
        again = self.context_run("py", {"code": "n += 1\nprint(n)", "run_id": "once"})
        self.assertEqual(again["stdout"], "1\n")
        self.assertEqual(self.context_run("py", {"code": "print(n)"})["stdout"], "1\n")
        self.assertEqual(self.context("py")["runs"], 4)
        # And it ends as any context does.
        status, gone = self.daemon.json("DELETE", "/v1/contexts/py")
        self.assertEqual((status, gone["state"]), (200, "ended"), gone)

    def test_a_context_run_in_progress_is_waited_for_and_answers_whole(self):
        status, made = self.daemon.json("POST", "/v1/contexts", {"id": "busy", "runtime": "python"},
                                        timeout=60)
        self.assertEqual(status, 201, made)
        self.context_run("busy", {"code": "kept = 'state'"})
        gate = self.fifo("gate")
        answer = {}
        runner = threading.Thread(target=lambda: answer.update(self.context_run(
            "busy", {"code": "print(open(%r).read().strip())" % gate})))
        runner.start()
        while self.context("busy")["state"] != "running":
            pass  # the run is queued ahead of the state read; a few requests at most
        upgrade = PendingUpgrade(self)
        self.assertIn('context "busy" has a run in progress', upgrade.waiting_for)
        self.assertEqual(self.health()["upgrades"], 0)
        with open(gate, "w") as f:
            f.write("through\n")
        runner.join()
        self.assertEqual(answer["stdout"], "through\n")
        self.assertEqual(upgrade.finish(), 0)
        self.assertEqual(self.health()["upgrades"], 1)
        r = self.context_run("busy", {"code": "print(kept)"})
        self.assertEqual(r["stdout"], "state\n")


class PendingUpgrade:
    """`agentd --upgrade` left running while the daemon waits for work in
    progress: returns once the command said what the upgrade waits for."""

    def __init__(self, case):
        self.proc = subprocess.Popen(
            [AGENTD_BIN, "--upgrade", "--state-dir", case.daemon.state_dir],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        case.addCleanup(self.proc.communicate)  # after the kill below: reaps, closes pipes
        case.addCleanup(self.proc.kill)
        line = self.proc.stderr.readline()
        prefix = "agentd --upgrade: pending, waiting for "
        if not line.startswith(prefix):  # the outcome came at once: say which
            case.fail(line + self.proc.stderr.read() + self.proc.stdout.read())
        self.waiting_for = line[len(prefix):]

    def finish(self):
        """The command's exit status once the upgrade has its outcome."""
        self.proc.communicate(timeout=120)
        return self.proc.returncode


class WaitingUpgradeTest(UpgradeCase):
    """An upgrade requested while work it cannot hand over midway is in
    progress waits for it (--upgrade-wait-ms), holding new such work."""

    def test_an_upgrade_during_a_run_takes_effect_after_its_answer_and_holds_new_runs(self):
        release = self.gated_run()
        upgrade = PendingUpgrade(self)
        self.assertIn("the request POST /v1/run", upgrade.waiting_for)
        state = self.health()["upgrade"]
        self.assertTrue(state["pending"], state)
        self.assertIn("POST /v1/run", state["waiting_for"])
        with open(os.path.join(self.daemon.state_dir, "upgrade-status.json")) as f:
            self.assertTrue(json.load(f)["pending"])
        # A run asked for meanwhile waits behind the upgrade (else a stream
        # of short runs would keep it from ever finding its moment): it has
        # not started when the upgrade takes effect, and its connection ends.
        marker = os.path.join(self.bin_dir, "late-ran")
        late = {}

        def late_run():
            try:
                late["answer"] = self.daemon.json(
                    "POST", "/v1/run", {"runtime": "shell", "code": "touch %s" % marker},
                    timeout=120)
            except (ConnectionError, http.client.HTTPException) as e:
                late["cut"] = e
        waiter = threading.Thread(target=late_run)
        waiter.start()
        while self.health()["upgrade"]["held_requests"] != 1:
            pass  # the request reaches the hold after a few health reads at most
        release()
        self.assertEqual(upgrade.finish(), 0)
        waiter.join()
        self.assertIn("cut", late, late)
        self.assertFalse(os.path.exists(marker))
        health = self.health()
        self.assertEqual((health["upgrades"], health["upgrade_failures"]), (1, 0))
        self.assertEqual(health["upgrade"]["pending"], False)
        self.assertEqual(self.daemon.proc.pid, self.pid)
        # Asked again, it runs on the new binary.
        status, r = self.daemon.json("POST", "/v1/run",
                                     {"runtime": "shell", "code": "touch %s" % marker})
        self.assertEqual((status, r["exit_code"]), (200, 0), r)
        self.assertTrue(os.path.exists(marker))


class BoundedWaitUpgradeTest(UpgradeCase):
    FLAGS = ("--upgrade-wait-ms", "300")

    def test_a_run_outlasting_the_wait_refuses_the_upgrade_naming_it(self):
        release = self.gated_run()
        code, out = self.upgrade()
        self.assertEqual(code, 1, out)
        self.assertIn("POST /v1/run", out)
        self.assertIn("--upgrade-wait-ms 300", out)
        health = self.health()
        self.assertEqual((health["upgrades"], health["upgrade_failures"]), (0, 1))
        self.assertEqual(health["upgrade"]["pending"], False)
        release()  # the run answers whole on the old daemon


# A connect the "public" egress policy refuses at once (EPERM): no packet leaves.
PRIVATE = ("10.0.0.1", 8080)
CONNECT = """
import errno, socket
refused = 0
for _ in range(%d):
    s = socket.socket()
    s.settimeout(5)
    try:
        s.connect(%r)
    except OSError as e:
        refused += e.errno == errno.EPERM
    finally:
        s.close()
print(refused)
"""


class EgressUpgradeTest(UpgradeCase):
    """Egress policy across the upgrade: the programs stay attached to the
    exec's cgroup in the kernel and the next binary takes their maps over,
    so the policy holds and its counts go on (CI runs as root; elsewhere
    skipped with the daemon's reason)."""
    FLAGS = ("--ack-ttl-sec", "0")

    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root (the CI runs as root)")
        super().setUp()
        if not self.health()["limits"]["egress_modes"]:
            self.skipTest("no egress mode works here: " +
                          self.health()["limits"].get("egress_why", ""))

    def refused(self, private):
        status, report = self.daemon.json("GET", "/v1/execs/egress-1/egress")
        self.assertEqual(status, 200, report)
        dest = [(x["port"], x["verdict"], x["count"]) for x in report["destinations"]
                if x["address"] == PRIVATE[0]]
        self.assertEqual((report["refused"], dest), (private, [(PRIVATE[1], "refused", private)]),
                         report)

    def test_an_exec_under_an_egress_policy_stays_refused_and_counted_after_the_upgrade(self):
        # An exec released before: the daemon's exec numbers run ahead of its records.
        self.start("gone", {"argv": ["true"]})
        self.wait_exit("gone")
        self.assertEqual(self.daemon.json("POST", "/v1/execs/gone/ack")[0], 200)
        go, ready = self.fifo("go"), self.fifo("ready")
        # Two refused connects, then (told by the test) three more.
        script = ("import errno, socket\n"
                  "def run(n):\n"
                  "    refused = 0\n"
                  "    for _ in range(n):\n"
                  "        s = socket.socket()\n"
                  "        try:\n"
                  "            s.connect(%r)\n"
                  "        except OSError as e:\n"
                  "            refused += e.errno == errno.EPERM\n"
                  "        s.close()\n"
                  "    print(refused, flush=True)\n"
                  "run(2)\n"
                  "open(%r, 'w').close()\n"
                  "open(%r).read()\n"
                  "run(3)\n") % (PRIVATE, ready, go)
        self.start("egress-1", {"argv": [sys.executable, "-c", script],
                                "egress": {"mode": "public"}})
        with open(ready):
            pass  # its first two connects are done
        self.refused(2)
        code, out = self.upgrade()
        self.assertEqual(code, 0, out)
        self.refused(2)
        # A policy for an exec started after it gets a directory of its own.
        self.start("later", {"argv": ["true"], "egress": {"mode": "public"}})
        self.assertEqual(self.wait_exit("later")["exit_code"], 0)
        with open(go, "w") as f:
            f.write("go\n")
        obj = self.wait_exit("egress-1")
        self.assertEqual((obj["exit_code"], obj["killed_by"]), (0, None), obj)
        _, _, body = self.daemon.request("GET", "/v1/execs/egress-1/stdout")
        self.assertEqual(body, b"2\n3\n")  # every connect refused, before and after
        self.refused(5)
        _, _, data = self.daemon.request("GET", "/v1/metrics")
        self.assertIn('agentd_egress_attempts_total{verdict="refused"} 5', data.decode())

    def test_a_context_under_an_egress_policy_is_kept_and_its_runs_counted_after_the_upgrade(self):
        status, made = self.daemon.json(
            "POST", "/v1/contexts", {"id": "net", "runtime": "python",
                                     "egress": {"mode": "public"}}, timeout=60)
        self.assertEqual(status, 201, made)

        def run(n):
            status, r = self.daemon.json(
                "POST", "/v1/contexts/net/run",
                {"code": CONNECT % (n, PRIVATE)}, timeout=120)
            self.assertEqual(status, 200, r)
            self.assertEqual(r["stdout"], "%d\n" % n, r)
            return (r["egress"]["refused"], r["egress"]["attempts"])
        self.assertEqual(run(2), (2, 2))
        status, before = self.daemon.json("GET", "/v1/contexts/net")
        code, out = self.upgrade()
        self.assertEqual(code, 0, out)
        status, after = self.daemon.json("GET", "/v1/contexts/net")
        self.assertEqual(after, before)  # the same interpreter
        self.assertEqual(run(3), (3, 3))  # still refused, and counted in this run only
        status, gone = self.daemon.json("DELETE", "/v1/contexts/net")
        self.assertEqual(status, 200, gone)
        while self.health()["busy"]:
            pass  # its interpreter is being ended: a few requests at most
        # At its end the interpreter's counts (runs before and after) go to metrics.
        _, _, data = self.daemon.request("GET", "/v1/metrics")
        self.assertIn('agentd_egress_attempts_total{verdict="refused"} 5', data.decode())


class NoDaemonTest(unittest.TestCase):
    def run_upgrade(self, state_dir):
        return subprocess.run([AGENTD_BIN, "--upgrade", "--state-dir", state_dir],
                              capture_output=True, text=True, timeout=60)

    def test_upgrade_without_a_daemon_exits_2(self):
        empty = tempfile.mkdtemp(prefix="agentd-upgrade-none-")
        self.addCleanup(shutil.rmtree, empty, True)
        run = self.run_upgrade(empty)
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertIn("no running daemon found", run.stderr)
        # A pid file whose process is gone (or whose pid now names another
        # process, with another start time) is never signalled.
        with open(os.path.join(empty, "agentd.pid"), "w") as f:
            f.write("%d 1\n" % os.getpid())
        run = self.run_upgrade(empty)
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertIn("no longer running", run.stderr)


class BrokenUpgradeTest(UpgradeCase):
    def check_refused(self, why):
        self.start("survivor", {"argv": ["sh", "-c", "read x; exit 42"], "stdin_stream": True})
        code, out = self.upgrade()
        self.assertEqual(code, 1, out)
        self.assertIn(why, out)
        health = self.health()
        self.assertEqual((health["upgrades"], health["upgrade_failures"]), (0, 1))
        self.assertEqual(self.daemon.proc.pid, self.pid)
        self.assertIsNone(self.daemon.proc.poll())
        # Written before the refusal's report; the test's log reader may lag.
        self.daemon.wait_log('"upgrade failed')
        # Nothing lost: the exec runs on under the old daemon and ends right.
        self.stdin("survivor", 0, b"x\n")
        self.assertEqual(self.wait_exit("survivor")["exit_code"], 42)
        # And the old daemon can still upgrade once the binary is good.
        self.install(AGENTD_BIN)
        self.assertEqual(self.upgrade()[0], 0)
        self.assertEqual(self.health()["upgrades"], 1)
        self.assertEqual(self.health()["upgrade_failures"], 1)

    def test_a_non_elf_file_leaves_the_old_daemon_serving(self):
        self.install(text="this is not a program\n")
        self.check_refused("cannot run")

    def test_a_binary_refusing_the_state_leaves_the_old_daemon_serving(self):
        self.install(text="#!/bin/sh\nexit 1\n")
        self.check_refused("check exit code 1")

    def test_a_binary_dying_in_its_check_leaves_the_old_daemon_serving(self):
        self.install(text="#!/bin/sh\nkill -SEGV $$\n")
        self.check_refused("died of SEGV")


if __name__ == "__main__":
    unittest.main()
