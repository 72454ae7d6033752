"""Resource faults against the real daemon: a full disk under the output
spool, descriptor exhaustion, 10,000 idle connections, a reader that never
reads its event stream, and a client that trickles its upload. Each ends in
a refusal or a bounded cost, never a crash, and health keeps answering."""

import json
import os
import resource
import shutil
import socket
import tempfile
import time
import unittest

from lib.agentd_test import Daemon, error_code
from lib.exec_util import rss_kib, run, start, wait_exit, wait_until
from lib.fs_helpers import tmpfs, url

MiB = 1 << 20


def health_ok(d, timeout=5):
    try:
        return d.json("GET", "/v1/health", auth=False, timeout=timeout)[0] == 200
    except OSError:
        return False


def open_fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def sockets(pid):
    """The daemon's sockets, by inode ("socket:[N]"): a set, not a count, so
    a connection the daemon closes meanwhile (an earlier request's) cannot
    stand in for one that should have gone."""
    fd_dir = "/proc/%d/fd" % pid
    found = set()
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        if target.startswith("socket:"):
            found.add(target)
    return found


class SpoolDiskFullTest(unittest.TestCase):
    def test_full_state_disk_makes_a_gap_the_exec_runs_on_and_ack_returns_the_space(self):
        if os.geteuid() != 0:
            self.skipTest("mounting a tmpfs needs root")
        with tmpfs(4 * MiB) as fs:
            if fs is None:
                self.skipTest("could not mount a tmpfs")
            with Daemon("--ack-ttl-sec", "0", state_dir=os.path.join(fs, "state")) as d:
                # 16 MiB into 4 MiB: the exec keeps running to its end.
                obj, out, _ = run(d, "flood", {"command": "head -c 16777216 /dev/zero; "
                                               "echo; echo tail-marker"})
                self.assertEqual((obj["exit_code"], obj["stdout_bytes"]),
                                 (0, 16 * MiB + len(b"\ntail-marker\n")))
                self.assertGreater(obj["stdout_retained_from"], 0)
                self.assertTrue(out.endswith(b"tail-marker\n"))
                s, polled = d.json("GET", "/v1/execs/flood?stdout_from=0")
                self.assertEqual(polled["stdout"]["gap"],
                                 {"from": 0, "to": obj["stdout_retained_from"]})
                self.assertTrue(health_ok(d))
                # Fill the disk with output nobody acks, then see the ack free it.
                start(d, "hog", {"command": "head -c 3500000 /dev/urandom; sleep 0.2"})
                wait_exit(d, "hog")
                free_full = shutil.disk_usage(fs).free
                d.json("POST", "/v1/execs/hog/ack")
                d.json("POST", "/v1/execs/flood/ack")
                wait_until(lambda: shutil.disk_usage(fs).free > free_full + 3 * MiB,
                           what="the acked output's space to come back")
                obj, out, _ = run(d, "after", {"argv": ["echo", "fits again"]})
                self.assertEqual((obj["stdout_retained_from"], out), (0, b"fits again\n"))


class DescriptorExhaustionTest(unittest.TestCase):
    def test_out_of_descriptors_refuses_then_recovers(self):
        env = None
        if os.environ.get("AGENTD_UNDER_SANITIZER"):
            # UBSan's vptr check needs a pipe, so it cannot run out of
            # descriptors (the file says why); the rest of UBSan and ASan do.
            env = dict(os.environ)
            env["UBSAN_OPTIONS"] = env.get("UBSAN_OPTIONS", "") + ":suppressions=" + os.path.join(
                os.path.dirname(os.path.abspath(__file__)), "..", "scripts",
                "ubsan-out-of-descriptors.supp")
        with Daemon(env=env) as d:
            pid = d.proc.pid
            limit = open_fds(pid) + 40
            resource.prlimit(pid, resource.RLIMIT_NOFILE, (limit, limit))
            held = []
            try:
                for _ in range(limit + 60):  # past the limit: the rest wait in the backlog
                    held.append(socket.create_connection(("127.0.0.1", d.port), timeout=5))
                wait_until(lambda: open_fds(pid) >= limit - 1, what="the daemon to run out")
                # While every connection is held the daemon cannot get below
                # its limit, so it meets EMFILE: wait for its log of that
                # (closing the sockets first could let a slow daemon see the
                # closes before it ever tries the accept that fails).
                wait_until(lambda: any("accept failed" in line for line in d.logs()),
                           what="the daemon to log a failed accept")
                # An exec needs pipes and spool files: it is refused or fails
                # to spawn, and says so; the daemon does not die.
                for s in held[:20]:
                    s.sendall(b"PUT /v1/execs/starved HTTP/1.1\r\nHost: x\r\n"
                              b"Authorization: Bearer test-token\r\nContent-Length: 21\r\n\r\n"
                              b'{"argv": ["true"]}   ')
                self.assertIsNone(d.proc.poll())
            finally:
                for s in held:
                    s.close()
            wait_until(lambda: health_ok(d, timeout=2), timeout=20, what="health after the flood")
            obj, out, _ = run(d, "recovered", {"argv": ["echo", "ok"]})
            self.assertEqual(out, b"ok\n")
            self.assertTrue(any("accept failed" in line for line in d.logs()))


class IdleConnectionsTest(unittest.TestCase):
    COUNT = 10000

    def test_10000_idle_connections_cost_little_and_health_answers(self):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        need = self.COUNT + 1000
        if hard < need:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (need, need))
            except (ValueError, OSError):
                self.skipTest("RLIMIT_NOFILE hard limit %d < %d" % (hard, need))
        else:
            resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, need), hard))
        held = []
        try:
            with Daemon("--max-connections", str(self.COUNT + 100)) as d:
                rss_before = rss_kib(d.proc.pid)
                started = time.monotonic()
                for _ in range(self.COUNT):
                    held.append(socket.create_connection(("127.0.0.1", d.port), timeout=10))
                wait_until(lambda: open_fds(d.proc.pid) >= self.COUNT, timeout=60,
                           what="every connection accepted")
                t0 = time.monotonic()
                self.assertTrue(health_ok(d, timeout=10))
                health_ms = (time.monotonic() - t0) * 1000
                rss_after = rss_kib(d.proc.pid)
                per_conn = (rss_after - rss_before) * 1024 / self.COUNT
                # The bound is the shipped build's (5.4 KiB measured, docs/
                # SECURITY.md). A sanitizer's shadow memory multiplies every
                # byte the daemon touches (ThreadSanitizer gave 19.3 KiB for
                # the same 5.4), so there it measures the sanitizer.
                if not os.environ.get("AGENTD_UNDER_SANITIZER"):
                    self.assertLess(per_conn, 16 * 1024, (rss_before, rss_after))
                print("\n%d idle connections in %.1f s: health %.1f ms, RSS +%d KiB "
                      "(%.1f KiB per connection)" % (self.COUNT, t0 - started, health_ms,
                                                     rss_after - rss_before, per_conn / 1024))
                for s in held:
                    s.close()
                held = []
                wait_until(lambda: open_fds(d.proc.pid) < 100, timeout=30,
                           what="descriptors released")
        finally:
            for s in held:
                s.close()
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


class SlowReaderTest(unittest.TestCase):
    def test_a_reader_that_never_reads_its_stream_does_not_grow_daemon_memory(self):
        with Daemon("--io-timeout-ms", "4000") as d:
            run(d, "warm", {"argv": ["head", "-c", "1000000", "/dev/zero"]})
            before = rss_kib(d.proc.pid)
            before_stream = sockets(d.proc.pid)
            start(d, "fast", {"command": "head -c 268435456 /dev/urandom", "timeout_sec": 60})
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", d.port))
            s.sendall(b"GET /v1/execs/fast/events HTTP/1.1\r\nHost: x\r\n"
                      b"Authorization: Bearer test-token\r\n\r\n")
            peak = before
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:  # the stream is stuck; output keeps coming
                peak = max(peak, rss_kib(d.proc.pid))
                time.sleep(0.1)
            self.assertLess(peak - before, 8 * 1024, (before, peak))
            # The stalled writer is cut at the write deadline (its descriptor
            # goes), and nothing is lost: the whole output waits for the next reader.
            obj = wait_exit(d, "fast")
            wait_until(lambda: sockets(d.proc.pid) <= before_stream, timeout=30,
                       what="the stalled stream to be cut")
            s.close()
            self.assertEqual(obj["stdout_bytes"], 256 * MiB)
            self.assertEqual(obj["stdout_retained_from"], 0)
            print("\nunread SSE stream over 3 s: RSS %d -> %d KiB" % (before, peak))


class TrickleTest(unittest.TestCase):
    def trickle(self, d, head, total, step, pause, limit_s, reply_wait=2):
        """Sends head, then step bytes every pause seconds; answers the time
        taken, the bytes sent, the reply and the longest gap between two of
        this process's sends (a loaded machine can stall it for longer than
        the daemon's window, which makes the daemon's cut legitimate)."""
        s = socket.create_connection(("127.0.0.1", d.port))
        s.settimeout(2)
        s.sendall(head)
        started = last = time.monotonic()
        longest_gap = 0.0
        sent = 0
        try:
            while sent < total and time.monotonic() - started < limit_s:
                s.sendall(b"x" * step)
                now = time.monotonic()
                longest_gap = max(longest_gap, now - last)
                last = now
                sent += step
                if sent < total:
                    time.sleep(pause)
        except (BrokenPipeError, ConnectionResetError):
            pass
        s.settimeout(reply_wait)
        try:
            reply = s.recv(65536)
        except (socket.timeout, ConnectionResetError):
            reply = b""
        s.close()
        return time.monotonic() - started, sent, reply, longest_gap

    def test_a_trickling_uploader_is_cut_off_and_a_slow_real_one_is_not(self):
        with Daemon("--io-timeout-ms", "1000") as d:
            base = tempfile.mkdtemp(prefix="agentd-trickle-")
            try:
                path = os.path.join(base, "f")
                head = ("PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer test-token\r\n"
                        "Content-Length: 100000\r\n\r\n" % url("/v1/fs/file", path=path)).encode()
                # 1 KiB/s, never a one-second stall: cut within a window or two.
                took, sent, reply, _ = self.trickle(d, head, 100000, 100, 0.1, 10)
                self.assertLess(took, 4, "a trickle must be cut near the 1 s window")
                self.assertLess(sent, 100000)
                self.assertFalse(os.path.exists(path))
                if reply:
                    self.assertIn(b" 408 ", reply.split(b"\r\n")[0])
                # Before auth too: a trickled bootstrap body.
                took, _, _, _ = self.trickle(d, b"POST /v1/bootstrap HTTP/1.1\r\nHost: x\r\n"
                                             b"Content-Length: 4000\r\n\r\n", 4000, 10, 0.1, 10)
                self.assertLess(took, 4)
                # 50,000 bytes every 0.4 s is slow but real: it completes, and
                # its answer is waited for as long as it takes. Only when this
                # process itself stalled for a whole window between two sends
                # (seen on a loaded CI machine) may the daemon cut it; then
                # the attempt is made again.
                for _ in range(5):
                    took, sent, reply, gap = self.trickle(d, head, 100000, 50000, 0.4, 10,
                                                          reply_wait=60)
                    if b" 200 " in reply.split(b"\r\n")[0] or gap < 0.9:
                        break
                self.assertIn(b" 200 ", reply.split(b"\r\n")[0],
                              "%r (longest gap between sends %.2f s)" % (reply, gap))
                self.assertEqual(os.path.getsize(path), 100000)
                self.assertTrue(health_ok(d))
            finally:
                shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
