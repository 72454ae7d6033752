"""The Python client (client/python) against the real daemon: bootstrap,
health, typed errors, retry-safe starts, polls, streams that survive cut
connections byte for byte, reattach from persisted ids, run, kill, ack,
stdin by offset, the Unix socket endpoint and the asyncio face."""

import asyncio
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from lib import pyclient  # noqa: F401  (puts client/python on sys.path)
from lib.agentd_test import Daemon
from lib.cutting_proxy import CuttingProxy
from lib.exec_util import wait_until
from lib.pyclient_case import DaemonPerClassCase

import agentd_client as ac
from agentd_client.aio import AsyncClient

# A child that writes `n` seeded random bytes to stdout and to stderr, interleaved.
NOISY = r"""
import os, random, sys
n, seed = int(sys.argv[1]), int(sys.argv[2])
r = random.Random(seed)
out = r.randbytes(n); err = r.randbytes(n // 3)
step = 65536
for k, i in enumerate(range(0, n, step)):
    os.write(1, out[i:i + step])
    os.write(2, err[k * (step // 3):(k + 1) * (step // 3)])
os.write(2, err[(k + 1) * (step // 3):])
"""


def noisy_expected(n, seed):
    r = random.Random(seed)
    out = r.randbytes(n)
    err = r.randbytes(n // 3)
    return out, err


def noisy_argv(n, seed):
    return ["python3", "-c", NOISY, str(n), str(seed)]


class PyClientExecTest(DaemonPerClassCase):

    def client(self, **kw):
        kw.setdefault("token", "test-token")
        return ac.Client(kw.pop("url", self.url), **kw)

    # -- health, bootstrap, errors -------------------------------------------

    def test_health_answers_without_a_token(self):
        h = ac.Client(self.url).health()
        self.assertEqual((h.status, h.protocol, h.bootstrapped), ("ok", 1, True))
        self.assertIsInstance(h.runtimes, list)
        self.assertEqual(h.ack_ttl_sec, 60)
        self.assertEqual(h.retention, {"stream_bytes": 256 << 20, "total_bytes": 1 << 30})
        # The interpreters' self-tests, decoded: the shell's ends, passed.
        shell = wait_until(lambda: [t for t in ac.Client(self.url).health().runtime_self_tests
                                    if t.runtime == "shell" and t.state != "pending"],
                           timeout=120, what="the shell's self-test")[0]
        self.assertEqual(shell.state, "passed")
        self.assertTrue(shell.program.startswith("/") and shell.duration_ms is not None, shell)

    def test_bootstrap_replays_the_same_token_and_refuses_another_with_a_typed_error(self):
        c = ac.Client(self.url)
        self.assertEqual(c.bootstrap("test-token"), ac.BootstrapResult(True, True))
        with self.assertRaises(ac.AlreadyBootstrapped) as cm:
            c.bootstrap("other-token")
        self.assertEqual((cm.exception.code, cm.exception.status), ("already_bootstrapped", 409))

    def test_first_bootstrap_sets_the_token_and_the_launch_env(self):
        with Daemon(bootstrap=False) as d:
            c = ac.Client("http://127.0.0.1:%d" % d.port)
            self.assertFalse(c.health().bootstrapped)
            with self.assertRaises(ac.NotBootstrapped):
                c.list_execs()
            self.assertEqual(c.bootstrap("fresh-token", {"GREETING": "hi"}),
                             ac.BootstrapResult(True, False))
            r = c.run("printf %s \"$GREETING\"")
            self.assertEqual(r.stdout, b"hi")

    def test_a_wrong_token_is_unauthorized_with_status_and_message(self):
        with self.assertRaises(ac.Unauthorized) as cm:
            self.client(token="wrong").list_execs()
        e = cm.exception
        self.assertEqual((e.code, e.status), ("unauthorized", 401))
        self.assertTrue(e.message)
        self.assertIsInstance(e, ac.AgentdError)

    def test_error_details_carry_the_real_numbers(self):
        c = self.client()
        with self.assertRaises(ac.InvalidRequest) as cm:
            c.start_exec("bad-field", ["true"], timeout_sec=0)
        self.assertEqual(cm.exception.details.get("field"), "timeout_sec")

    @unittest.skipUnless(os.geteuid() == 0, "a restricted exec switches to nobody (root only)")
    def test_restricted_profile_on_start_and_run_code_reports_what_was_applied(self):
        c = self.client()
        info = c.start_exec("py-restricted", ["id", "-u"], profile="restricted")
        self.assertEqual(info.profile, "restricted")
        self.assertEqual(info.restriction["capabilities"], "none")
        # This kernel loads the filter, and the dict says so.
        self.assertEqual((info.restriction["seccomp"], info.restriction.get("seccomp_why")),
                         (True, None))
        r = c.run_code("shell", "id -u", profile="restricted")
        self.assertEqual((r.stdout, r.profile, r.restriction["uid"]), ("65534\n", "restricted",
                                                                        65534))
        self.assertEqual(c.run_code("shell", "true").profile, "unrestricted")
        with self.assertRaises(ac.InvalidRequest) as cm:
            c.start_exec("py-bad-profile", ["true"], profile="sandboxed")
        self.assertEqual(cm.exception.details.get("field"), "profile")

    def test_every_stable_error_code_of_protocol_md_has_its_exception_class(self):
        with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                               "docs", "PROTOCOL.md"), encoding="utf-8") as f:
            codes = re.findall(r"^\| `([a-z_]+)` \| \d{3} \|", f.read(), re.M)
        self.assertGreater(len(codes), 30)
        missing = [c for c in codes if c not in ac.ERROR_CLASSES]
        self.assertEqual(missing, [])
        self.assertIsInstance(ac.error_for("not_found", "x", 404), ac.NotFound)

    def test_an_invalid_exec_id_is_refused_before_sending(self):
        with self.assertRaises(ac.InvalidRequest) as cm:
            self.client(url="http://127.0.0.1:1").poll_exec("no spaces")
        self.assertEqual(cm.exception.details["field"], "id")

    def test_a_refused_connection_is_a_transport_error_after_retries(self):
        c = ac.Client("http://127.0.0.1:1", token="t", max_attempts=3, backoff_initial=0.01)
        t0 = time.monotonic()
        with self.assertRaises(ac.TransportError) as cm:
            c.health()
        self.assertEqual(cm.exception.status, 0)
        self.assertLess(time.monotonic() - t0, 5)

    # -- start, poll, wait ----------------------------------------------------

    def test_minted_ids_are_valid_distinct_and_sorted_by_time(self):
        a = ac.mint_exec_id("job")
        time.sleep(0.002)
        b = ac.mint_exec_id("job")
        self.assertNotEqual(a, b)
        self.assertLess(a[:16], b[:16] + "~")
        self.assertRegex(a, r"^job-[0-9a-f]{11}-[0-9a-f]{16}$")

    def test_a_repeated_start_answers_the_same_exec_and_a_different_one_conflicts(self):
        c = self.client()
        exec_id = ac.mint_exec_id()
        first = c.start_exec(exec_id, ["sh", "-c", "echo once"])
        again = c.start_exec(exec_id, ["sh", "-c", "echo once"])
        self.assertEqual((first.id, first.pid), (again.id, again.pid))
        with self.assertRaises(ac.ExecIdConflict) as cm:
            c.start_exec(exec_id, ["sh", "-c", "echo twice"])
        self.assertEqual((cm.exception.status, cm.exception.details.get("id")), (409, exec_id))
        self.assertEqual(c.wait_exec(exec_id, 30).exit_code, 0)

    def test_a_start_retried_after_its_answer_was_lost_runs_the_command_once(self):
        marker = tempfile.mktemp(prefix="pyclient-once-")
        proxy = CuttingProxy(self.daemon.port, drop_answers=1)
        try:
            c = self.client(url=proxy.url, backoff_initial=0.01)
            exec_id = ac.mint_exec_id()
            info = c.start_exec(exec_id, command="echo ran >> %s" % marker)
            self.assertGreaterEqual(proxy.connections, 2)  # the first answer was swallowed
            self.assertEqual(c.wait_exec(info.id, 30).exit_code, 0)
            with open(marker) as f:
                self.assertEqual(f.read(), "ran\n")
        finally:
            proxy.close()
            if os.path.exists(marker):
                os.unlink(marker)

    def test_poll_reads_from_cursors_and_never_changes_state(self):
        c = self.client()
        exec_id = ac.mint_exec_id()
        c.start_exec(exec_id, command="printf hello; printf oops >&2")
        c.wait_exec(exec_id, 30)
        a = c.poll_exec(exec_id, stdout_from=1, stderr_from=0)
        b = c.poll_exec(exec_id, stdout_from=1, stderr_from=0)
        self.assertEqual((a.stdout.data, a.stdout.start, a.stdout.next), (b"ello", 1, 5))
        self.assertEqual(a.stderr.data, b"oops")
        self.assertEqual((a.stdout.data, a.stderr.data), (b.stdout.data, b.stderr.data))
        self.assertIsNone(c.poll_exec(exec_id).stdout)
        self.assertEqual(c.poll_exec(exec_id, stdout_from=0, max_bytes=2).stdout.data, b"he")

    def test_a_long_poll_answers_as_soon_as_output_arrives(self):
        c = self.client()
        exec_id = ac.mint_exec_id()
        c.start_exec(exec_id, command="sleep 0.5; echo late; sleep 5")
        t0 = time.monotonic()
        r = c.poll_exec(exec_id, stdout_from=0, wait_ms=20000)
        self.assertLess(time.monotonic() - t0, 10)
        self.assertEqual(r.stdout.data, b"late\n")
        c.kill_exec(exec_id, "KILL")

    def test_wait_gives_up_at_its_deadline(self):
        c = self.client()
        exec_id = ac.mint_exec_id()
        c.start_exec(exec_id, ["sleep", "30"])
        with self.assertRaises(ac.DeadlineExceeded):
            c.wait_exec(exec_id, 0.5)
        info = c.kill_exec(exec_id)
        self.assertEqual(info.id, exec_id)
        final = c.wait_exec(exec_id, 30)
        self.assertEqual((final.exit_code, final.signal, final.killed_by), (143, "TERM", "kill"))

    def test_unknown_and_released_ids_raise_their_own_errors(self):
        with Daemon("--ack-ttl-sec", "0") as d:
            c = ac.Client("http://127.0.0.1:%d" % d.port, token="test-token")
            with self.assertRaises(ac.ExecNotFound):
                c.poll_exec("never-started")
            exec_id = ac.mint_exec_id()
            c.start_exec(exec_id, ["sleep", "30"])
            with self.assertRaises(ac.ExecRunning):
                c.ack_exec(exec_id)
            c.kill_exec(exec_id, "KILL")
            c.wait_exec(exec_id, 30)
            self.assertTrue(c.ack_exec(exec_id).acked)
            deadline = time.monotonic() + 10
            while True:
                try:
                    c.poll_exec(exec_id)
                except ac.ExecReleased as e:
                    self.assertEqual(e.status, 410)
                    break
                self.assertLess(time.monotonic(), deadline)
                time.sleep(0.05)
            with self.assertRaises(ac.ExecReleased):
                c.start_exec(exec_id, ["sleep", "30"])

    def test_list_shows_started_execs(self):
        c = self.client()
        exec_id = ac.mint_exec_id("listed")
        c.start_exec(exec_id, ["true"])
        self.assertIn(exec_id, [e.id for e in c.list_execs()])

    # -- stdin ----------------------------------------------------------------

    def test_stdin_by_offset_never_duplicates_a_retried_write(self):
        c = self.client()
        exec_id = ac.mint_exec_id()
        c.start_exec(exec_id, ["cat"], stdin_stream=True)
        self.assertEqual(c.write_stdin(exec_id, 0, b"hello "), 6)
        self.assertEqual(c.write_stdin(exec_id, 0, b"hello world"), 11)  # a retry, extended
        with self.assertRaises(ac.StdinOffsetMismatch) as cm:
            c.write_stdin(exec_id, 50, b"x")
        self.assertEqual((cm.exception.details["expected"], cm.exception.details["got"]),
                         (11, 50))
        self.assertEqual(c.write_stdin(exec_id, 11, "\n", eof=True), 12)
        c.wait_exec(exec_id, 30)
        self.assertEqual(c.poll_exec(exec_id, stdout_from=0).stdout.data, b"hello world\n")

    def test_whole_stdin_as_text_or_bytes(self):
        c = self.client()
        self.assertEqual(c.run(["cat"], stdin="text in").stdout, b"text in")
        self.assertEqual(c.run(["cat"], stdin=b"\x00\xffbytes").stdout, b"\x00\xffbytes")

    def test_stdin_to_an_exec_without_a_stream_is_refused(self):
        c = self.client()
        exec_id = ac.mint_exec_id()
        c.start_exec(exec_id, ["sleep", "5"])
        with self.assertRaises(ac.StdinNotStreamed):
            c.write_stdin(exec_id, 0, b"x")
        c.kill_exec(exec_id, "KILL")

    # -- run ------------------------------------------------------------------

    def test_run_returns_exit_code_and_both_streams_and_acks(self):
        r = self.client().run("echo out; echo err >&2; exit 3", cwd="/tmp", env={"A": "1"})
        self.assertEqual((r.exit_code, r.stdout, r.stderr), (3, b"out\n", b"err\n"))
        self.assertFalse(r.ok)
        self.assertTrue(r.exec.acked)
        self.assertEqual(r.exec.state, "exited")

    def test_run_with_argv_and_env_overlay(self):
        r = self.client().run(["sh", "-c", 'printf "%s" "$X"'], env={"X": "from env"})
        self.assertEqual(r.stdout_text, "from env")

    def test_run_reports_a_timeout_as_124(self):
        r = self.client().run("sleep 30", timeout_sec=1, kill_grace_sec=1)
        self.assertEqual((r.exit_code, r.timed_out, r.killed_by), (124, True, "timeout"))

    def test_run_keeps_at_most_max_bytes_and_says_so(self):
        r = self.client().run("head -c 100000 /dev/zero", max_stdout_bytes=1000)
        self.assertEqual(len(r.stdout), 1000)
        self.assertTrue(r.stdout_truncated)
        self.assertFalse(r.stderr_truncated)
        self.assertEqual(r.exec.stdout_bytes, 100000)

    def test_run_answers_a_short_command_in_one_request_and_acks(self):
        # Start and wait carries the exit and output: PUT, then the ack; no event stream.
        c = self.client()
        c.health()  # the protocol check, done before counting
        seen = []

        def counting(send):
            def wrapped(req, *a, **kw):
                seen.append((req.method, req.target.split("?")[0].rsplit("/", 1)[-1]))
                return send(req, *a, **kw)
            return wrapped

        c._t.call, c._t.open = counting(c._t.call), counting(c._t.open)
        r = c.run(["echo", "hi"], id="one-request")
        self.assertEqual((r.exit_code, r.stdout), (0, b"hi\n"))
        self.assertEqual(seen, [("PUT", "one-request"), ("POST", "ack")])

    def test_run_hands_over_to_the_event_stream_without_losing_or_repeating_a_byte(self):
        # More than one answer carries (1 MiB per stream), and output that trickles.
        c = self.client()
        big = c.run("seq 1 400000; echo done >&2")
        self.assertEqual(big.stdout, b"".join(b"%d\n" % i for i in range(1, 400001)))
        self.assertEqual((big.stderr, big.exit_code), (b"done\n", 0))
        self.assertFalse(big.stdout_truncated)
        slow = c.run("for i in 1 2 3; do echo line$i; sleep 0.05; done")
        self.assertEqual(slow.stdout, b"line1\nline2\nline3\n")

    def test_a_missing_program_is_an_exit_127(self):
        r = self.client().run(["/nonexistent/program"])
        self.assertEqual(r.exit_code, 127)
        self.assertIn(b"agentd:", r.stderr)
        self.assertTrue(r.exec.error)

    def test_run_code_reports_artifacts_by_content_when_asked(self):
        work = tempfile.mkdtemp(prefix="pyclient-artifacts-")
        self.addCleanup(shutil.rmtree, work, True)
        c = self.client()
        res = c.run_code("shell", "mkdir out; printf '[1, 2]' > out/r.dat", cwd=work,
                         artifacts_dir="out")
        self.assertEqual(res.artifacts, [ac.Artifact(
            "out/r.dat", "application/json", 6,
            "3a316d6d3226f84c1e46e4447fa8d5fd800bff4a1bc6498152523cd4a602b69b")])
        self.assertEqual((res.artifacts_truncated, res.artifacts_bound), (False, None))
        self.assertIsNone(c.run_code("shell", "true", cwd=work).artifacts)

    def test_run_code_answers_a_summary_bounded_output_and_the_changed_files(self):
        work = tempfile.mkdtemp(prefix="pyclient-run-")
        self.addCleanup(shutil.rmtree, work, True)
        c = self.client()
        res = c.run_code("shell", "echo hi; echo made > made.txt; echo oops >&2; exit 2",
                         cwd=work, timeout_sec=10)
        self.assertEqual((res.exit_code, res.success, res.stdout, res.stderr),
                         (2, False, "hi\n", "oops\n"))
        self.assertRegex(res.summary, r"^exit 2 in \d+ ms; 1 file changed: oops$")
        self.assertEqual([(f.path, f.change, f.type) for f in res.changed_files],
                         [("made.txt", "added", "file")])
        self.assertEqual((res.runtime, res.timeout_sec, res.stdout_bytes, res.stderr_bytes),
                         ("shell", 10, 3, 5))
        self.assertFalse(res.changed_files_truncated)
        py = c.run_code("python", "import sys; print(sys.stdin.read().upper())", cwd=work,
                        stdin="quiet", env={"X": "1"}, scan_changes=False)
        self.assertEqual((py.exit_code, py.success, py.stdout, py.changed_files),
                         (0, True, "QUIET\n", []))
        with self.assertRaises(ac.InvalidRequest) as cm:
            c.run_code("cobol", "x")
        self.assertEqual(cm.exception.details["field"], "runtime")

    def test_run_code_and_execs_carry_limits_and_report_the_one_that_ended_them(self):
        c = self.client()
        res = c.run_code("shell", "yes", output_bytes=4096, kill_on_output=True, timeout_sec=30)
        self.assertEqual((res.success, res.killed_by, res.limit),
                         (False, "output", {"name": "output", "value": 4096, "unit": "bytes"}))
        r = c.run(["sh", "-c", "sleep 30"], timeout_sec=1, output_bytes=8192)
        self.assertEqual((r.exit_code, r.timed_out, r.killed_by), (124, True, "timeout"))
        self.assertEqual(r.exec.limit, {"name": "timeout", "value": 1, "unit": "s"})
        self.assertEqual(r.exec.limits, {"timeout_sec": 1, "output_bytes": 8192})
        if "disk" in ac.Client(self.url).health().limits["supported"]:
            res = c.run_code("shell", "head -c 2000000 /dev/zero > /tmp/fill",
                             disk_bytes=1 << 20, timeout_sec=30)
            self.assertEqual((res.killed_by, res.limit),
                             ("disk", {"name": "disk", "value": 1 << 20, "unit": "bytes"}))
            r = c.run(["sh", "-c", "stat -f -c %T /mnt"], disk_bytes=1 << 20, disk_path="/mnt")
            self.assertEqual((r.exit_code, r.stdout), (0, b"tmpfs\n"))
            self.assertEqual(r.exec.limits, {"disk_bytes": 1 << 20, "disk_path": "/mnt"})
        with self.assertRaises(ac.InvalidRequest) as cm:
            c.start_exec(ac.mint_exec_id(), ["true"], memory_gb=1)
        self.assertEqual(cm.exception.details["field"], "memory_gb")

    def test_a_detached_code_exec_streams_like_any_exec(self):
        c = self.client()
        exec_id = ac.mint_exec_id("code")
        c.start_exec(exec_id, runtime="python", code="print(6 * 7)")
        again = c.start_exec(exec_id, runtime="python", code="print(6 * 7)")  # retry-safe
        self.assertEqual(again.id, exec_id)
        out, _, _, final, _ = self.collect(c.stream(exec_id))
        self.assertEqual((out, final.exit_code), (b"42\n", 0))

    def test_health_reports_the_limit_mechanism(self):
        h = ac.Client(self.url).health()
        self.assertIn(h.limits["mechanism"], ("cgroup2", "cgroup1", "rlimit"))
        self.assertIn("output", h.limits["supported"])
        self.assertEqual(h.limits["run_timeout_sec"], 60)

    # -- streams --------------------------------------------------------------

    def collect(self, events):
        out, err, gaps, final, cursors = bytearray(), bytearray(), [], None, None
        at = {"stdout": 0, "stderr": 0}
        for ev in events:
            if isinstance(ev, ac.OutputEvent):
                self.assertEqual(ev.offset, at[ev.kind], "an event starts where the last ended")
                (out if ev.kind == "stdout" else err).extend(ev.data)
                at[ev.kind] += len(ev.data)
            elif isinstance(ev, ac.GapEvent):
                self.assertEqual(ev.start, at[ev.stream])
                gaps.append((ev.stream, ev.start, ev.end))
                at[ev.stream] = ev.end
            else:
                final = ev.exec
            self.assertEqual(ev.cursors, ac.Cursors(at["stdout"], at["stderr"]))
            cursors = ev.cursors
        return bytes(out), bytes(err), gaps, final, cursors

    def test_stream_delivers_every_byte_once_through_connections_cut_at_random(self):
        n, seed = 3 << 20, 11
        rng = random.Random(5)
        proxy = CuttingProxy(self.daemon.port, budget=lambda: rng.randint(1, 400000))
        try:
            c = self.client(url=proxy.url, backoff_initial=0.005, backoff_max=0.05,
                            max_stream_reconnects=50)
            exec_id = ac.mint_exec_id("cut")
            c.start_exec(exec_id, noisy_argv(n, seed))
            reconnects = []
            out, err, gaps, final, cursors = self.collect(
                c.stream(exec_id, on_reconnect=lambda a, e: reconnects.append(e.code)))
            want_out, want_err = noisy_expected(n, seed)
            self.assertEqual(gaps, [])
            self.assertEqual(len(out), len(want_out))
            self.assertEqual(hashlib.sha256(out).hexdigest(), hashlib.sha256(want_out).hexdigest())
            self.assertEqual(err, want_err)
            self.assertEqual(final.exit_code, 0)
            self.assertEqual(cursors, ac.Cursors(len(want_out), len(want_err)))
            self.assertGreater(proxy.cuts, 3, "the proxy must really have cut streams")
            self.assertGreater(len(reconnects), 3)
        finally:
            proxy.close()

    def test_stream_reattaches_from_persisted_id_and_cursors_in_a_new_process(self):
        n, seed = 1 << 20, 23
        c = self.client()
        exec_id = ac.mint_exec_id("reattach")
        state = tempfile.mktemp(prefix="pyclient-state-")
        c.start_exec(exec_id, noisy_argv(n, seed))
        # First harness: read some events, persisting the id and cursors, then "crash".
        got_out, got_err = bytearray(), bytearray()
        for i, ev in enumerate(c.stream(exec_id)):
            if isinstance(ev, ac.OutputEvent):
                (got_out if ev.kind == "stdout" else got_err).extend(ev.data)
            with open(state, "w") as f:
                json.dump({"id": exec_id, "cursors": list(ev.cursors)}, f)
            if i == 5:
                break
        # Second harness: a fresh process with only the URL, the token and the state file.
        script = r"""
import json, sys
sys.path.insert(0, sys.argv[3])
import agentd_client as ac
st = json.load(open(sys.argv[2]))
c = ac.Client(sys.argv[1], token="test-token")
out = open(sys.argv[2] + ".out", "wb"); err = open(sys.argv[2] + ".err", "wb")
for ev in c.stream(st["id"], ac.Cursors(*st["cursors"])):
    if isinstance(ev, ac.OutputEvent):
        (out if ev.kind == "stdout" else err).write(ev.data)
    elif isinstance(ev, ac.ExitEvent):
        print(ev.exec.exit_code)
"""
        try:
            r = subprocess.run([sys.executable, "-c", script, self.url, state,
                                os.path.dirname(ac.__path__[0])],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.strip(), "0")
            with open(state + ".out", "rb") as f:
                got_out += f.read()
            with open(state + ".err", "rb") as f:
                got_err += f.read()
            want_out, want_err = noisy_expected(n, seed)
            self.assertEqual(bytes(got_out), want_out)
            self.assertEqual(bytes(got_err), want_err)
        finally:
            for p in (state, state + ".out", state + ".err"):
                if os.path.exists(p):
                    os.unlink(p)

    def test_a_stream_from_before_the_retained_bytes_starts_with_a_gap(self):
        with Daemon("--retention-stream-bytes", "4096") as d:
            c = ac.Client("http://127.0.0.1:%d" % d.port, token="test-token")
            exec_id = ac.mint_exec_id()
            c.start_exec(exec_id, command="head -c 20000 /dev/zero | tr '\\0' a")
            c.wait_exec(exec_id, 30)
            out, _, gaps, final, cursors = self.collect(c.stream(exec_id))
            self.assertEqual(len(gaps), 1)
            stream, start, end = gaps[0]
            self.assertEqual((stream, start), ("stdout", 0))
            self.assertEqual(end, final.stdout_retained_from)
            self.assertEqual(len(out), 20000 - end)
            self.assertEqual(cursors.stdout, 20000)
            chunk = c.read_output(exec_id, "stdout", 0)
            self.assertEqual((chunk.start, chunk.next, chunk.gap), (end, 20000, (0, end)))

    def test_a_stream_of_a_dead_daemon_gives_up_after_its_reconnect_bound(self):
        d = Daemon()
        url = "http://127.0.0.1:%d" % d.port
        c = ac.Client(url, token="test-token", max_attempts=1, backoff_initial=0.001,
                      backoff_max=0.002, max_stream_reconnects=3)
        exec_id = ac.mint_exec_id()
        c.start_exec(exec_id, ["sleep", "30"])
        d.close()
        attempts = []
        with self.assertRaises(ac.TransportError) as cm:
            for _ in c.stream(exec_id, on_reconnect=lambda a, e: attempts.append(a)):
                pass
        self.assertEqual(attempts, [1, 2, 3])
        self.assertEqual(cm.exception.details.get("reconnects"), 3)

    def test_raw_output_route(self):
        c = self.client()
        exec_id = ac.mint_exec_id()
        c.start_exec(exec_id, command="printf abcdef >&2")
        c.wait_exec(exec_id, 30)
        chunk = c.read_output(exec_id, "stderr", 2)
        self.assertEqual((chunk.start, chunk.next, chunk.data, chunk.gap), (2, 6, b"cdef", None))

    def test_pty_exec_resizes(self):
        c = self.client()
        exec_id = ac.mint_exec_id()
        c.start_exec(exec_id, ["sh", "-c", "sleep 0.3; stty size"], pty={"rows": 10, "cols": 40})
        info = c.resize_exec(exec_id, 33, 99)
        self.assertEqual(info.id, exec_id)
        c.wait_exec(exec_id, 30)
        self.assertIn(b"33 99", c.poll_exec(exec_id, stdout_from=0).stdout.data)
        with self.assertRaises(ac.NotAPty):
            other = ac.mint_exec_id()
            c.start_exec(other, ["sleep", "1"])
            c.resize_exec(other, 1, 1)

    # -- endpoints and faces --------------------------------------------------

    def test_unix_socket_endpoint(self):
        sock = tempfile.mktemp(prefix="agentd-py-", suffix=".sock")
        with Daemon("--listen", "unix:" + sock) as d:
            del d
            c = ac.Client("unix:" + sock, token="test-token")
            self.assertEqual(c.run(["echo", "via unix"]).stdout, b"via unix\n")

    def test_keep_alive_connections_are_reused(self):
        c = self.client()
        for _ in range(5):
            c.health()
        self.assertEqual(len(c._t._idle), 1)

    def test_asyncio_face_runs_and_streams(self):
        async def main():
            async with AsyncClient(self.url, token="test-token") as guest:
                r = await guest.run(["sh", "-c", "echo async"])
                exec_id = ac.mint_exec_id("aio")
                await guest.start_exec(exec_id, noisy_argv(200000, 3))
                out = bytearray()
                async for ev in guest.stream(exec_id):
                    if isinstance(ev, ac.OutputEvent) and ev.kind == "stdout":
                        out += ev.data
                return r, bytes(out)
        r, out = asyncio.run(main())
        self.assertEqual(r.stdout, b"async\n")
        self.assertEqual(out, noisy_expected(200000, 3)[0])


if __name__ == "__main__":
    unittest.main()


class EventDecodingTest(unittest.TestCase):
    """The event stream's decoder, fed in every split: the daemon's compact
    output events (sliced, not parsed) and any other JSON spelling decode
    alike; broken ones are ProtocolError, never wrong bytes."""

    def decode(self, wire):
        from agentd_client._events import apply_event
        from agentd_client._sse import SseDecoder
        for step in (1, 7, len(wire)):
            dec, events, cursors = SseDecoder(), [], (0, 0)
            for i in range(0, len(wire), step):
                for ev in dec.feed(wire[i:i + step]):
                    event, *cursors = apply_event(ev, *cursors)
                    events.append(event)
            yield events, tuple(cursors)

    def test_compact_and_spaced_output_events_give_the_same_bytes(self):
        wire = (b'event: stdout\ndata: {"offset":0,"data_b64":"aGVsbG8="}\nid: 5:0\n\n'
                b': keepalive\n\n'
                b'event: stderr\r\ndata: { "data_b64": "b29w", "offset": 0 }\r\nid: 5:3\r\n\r\n')
        for events, cursors in self.decode(wire):
            self.assertEqual([(e.kind, e.offset, e.data) for e in events],
                             [("stdout", 0, b"hello"), ("stderr", 0, b"oop")])
            self.assertEqual(cursors, (5, 3))

    def test_a_broken_output_event_is_a_protocol_error(self):
        for data in (b'{"offset":0,"data_b64":"aGVsbG8"}', b'{"offset":-1,"data_b64":""}',
                     b'{"offset":0,"data_b64":"aGk="', b'[1]'):
            with self.subTest(data=data):
                with self.assertRaises(ac.ProtocolError):
                    list(self.decode(b"event: stdout\ndata: " + data + b"\nid: 1:0\n\n"))
