"""Ack and TTL, health's busy and execs, restart recovery, flat memory."""

import base64
import os
import signal
import unittest

from lib.agentd_test import Daemon, error_code
from lib.exec_util import read_stream, rss_kib, run, start, wait_exit, wait_until


def restart_after_kill(d):
    """SIGKILL, start again on the same state dir, bootstrap again (the
    token lives only in daemon memory)."""
    d.kill()
    d.start()
    s, _ = d.json("POST", "/v1/bootstrap", {"token": d.token}, auth=False)
    assert s == 200


def health(d):
    s, h = d.json("GET", "/v1/health", auth=False)
    assert s == 200
    return h


class AckLifecycleTest(unittest.TestCase):
    def test_output_is_kept_until_ack_then_released_after_the_ttl(self):
        with Daemon("--ack-ttl-sec", "2") as d:
            start(d, "ack-1", {"command": "read x; echo done", "stdin_stream": True})
            s, b = d.json("POST", "/v1/execs/ack-1/ack")
            self.assertEqual((s, error_code(b)), (409, "exec_running"))
            d.json("POST", "/v1/execs/ack-1/kill", {"signal": "KILL"})
            wait_exit(d, "ack-1")
            s, first = d.json("POST", "/v1/execs/ack-1/ack")
            self.assertEqual((s, first["acked"], first["state"]), (200, True, "exited"))
            s, second = d.json("POST", "/v1/execs/ack-1/ack")  # idempotent
            self.assertEqual((s, second), (200, first))
            # Inside the TTL the record and its output are still there.
            s, b = d.json("GET", "/v1/execs/ack-1?stdout_from=0")
            self.assertEqual((s, b["acked"]), (200, True))
            self.assertEqual(health(d)["execs"], 1)
            wait_until(lambda: d.json("GET", "/v1/execs/ack-1")[0] == 410, timeout=30,
                       what="release after the TTL")
            self.assertEqual(health(d)["execs"], 0)
            s, lst = d.json("GET", "/v1/execs")
            self.assertEqual(lst["execs"], [])

    def test_unacked_output_is_not_released(self):
        with Daemon("--ack-ttl-sec", "0") as d:
            run(d, "keep-1", {"argv": ["echo", "kept"]})
            run(d, "drop-1", {"argv": ["echo", "dropped"]})
            d.json("POST", "/v1/execs/drop-1/ack")
            wait_until(lambda: d.json("GET", "/v1/execs/drop-1")[0] == 410, what="release")
            self.assertEqual(read_stream(d, "keep-1"), b"kept\n")


class BusyTest(unittest.TestCase):
    def test_busy_while_a_leader_runs_not_while_output_waits_for_ack(self):
        with Daemon() as d:
            self.assertEqual((health(d)["busy"], health(d)["execs"]), (False, 0))
            start(d, "busy-1", {"command": "read x", "stdin_stream": True})
            self.assertEqual((health(d)["busy"], health(d)["execs"]), (True, 1))
            d.json("POST", "/v1/execs/busy-1/stdin?offset=0&eof=1", b"")
            wait_exit(d, "busy-1")
            self.assertEqual((health(d)["busy"], health(d)["execs"]), (False, 1))

    def test_a_background_process_holding_output_is_not_busy(self):
        with Daemon("--output-drain-ms", "60000") as d:
            start(d, "busy-2", {"command": "sleep 30 & echo leader-done"})
            # The leader exits at once; its background child keeps stdout
            # open, so the exec stays "running" (output still collected)...
            wait_until(lambda: read_stream(d, "busy-2") == b"leader-done\n", what="output")
            wait_until(lambda: not health(d)["busy"], what="busy false")
            s, obj = d.json("GET", "/v1/execs/busy-2")
            self.assertEqual((obj["state"], obj["exit_code"]), ("running", 0))
            # ...until the drain ends it (here: a kill of the group).
            d.json("POST", "/v1/execs/busy-2/kill", {"signal": "KILL"})
            obj = wait_exit(d, "busy-2")
            self.assertEqual(obj["exit_code"], 0)

    def test_output_drain_time_bounds_a_stream_held_open(self):
        with Daemon("--output-drain-ms", "300") as d:
            start(d, "drain-1", {"command": "(sleep 30; echo late) & echo early"})
            obj = wait_exit(d, "drain-1")
            self.assertEqual(obj["exit_code"], 0)
            self.assertEqual(read_stream(d, "drain-1"), b"early\n")


class RestartRecoveryTest(unittest.TestCase):
    def test_exited_unacked_output_survives_a_daemon_kill(self):
        with Daemon("--ack-ttl-sec", "3600") as d:
            data = os.urandom(100000)
            obj, out, err = run(d, "rec-1", {"argv": ["cat"], "stdin_b64": base64.b64encode(
                data).decode()})
            self.assertEqual(out, data)
            start(d, "rec-2", {"argv": ["sleep", "1000"]})
            run(d, "rec-3", {"argv": ["true"]})
            d.json("POST", "/v1/execs/rec-3/ack")
            restart_after_kill(d)  # SIGKILL: no chance to clean up
            s, again = d.json("GET", "/v1/execs/rec-1")
            self.assertEqual(s, 200)
            self.assertEqual(again, obj)
            self.assertEqual(read_stream(d, "rec-1"), data)
            # A retry of the start still answers the same exec, not a new one.
            s, retried = d.json("PUT", "/v1/execs/rec-1", {"argv": ["cat"], "stdin_b64":
                                                          base64.b64encode(data).decode()})
            self.assertEqual((s, retried), (200, obj))
            s, b = d.json("PUT", "/v1/execs/rec-1", {"argv": ["true"]})
            self.assertEqual((s, error_code(b)), (409, "exec_id_conflict"))
            # The exec that was running when the daemon died runs on under
            # its holder (tests/test_exec_crash_survival.py has the rest).
            s, kept = d.json("GET", "/v1/execs/rec-2")
            self.assertEqual((kept["state"], kept["killed_by"]), ("running", None))
            # The acked one is still acked, within its TTL.
            s, acked = d.json("GET", "/v1/execs/rec-3")
            self.assertEqual((s, acked["acked"]), (200, True))
            self.assertEqual(health(d)["execs"], 3)
            d.json("POST", "/v1/execs/rec-2/kill", {"signal": "KILL"})
            self.assertEqual(wait_exit(d, "rec-2")["signal"], "KILL")

    def test_without_a_holder_a_running_exec_is_reported_lost_with_the_reason(self):
        with Daemon("--exec-holder", "off") as d:
            start(d, "lost-1", {"argv": ["sleep", "1000"]})
            restart_after_kill(d)
            s, lost = d.json("GET", "/v1/execs/lost-1")
            self.assertEqual((lost["state"], lost["exit_code"], lost["killed_by"]),
                             ("exited", None, "daemon_restart"))
            self.assertIn("no holder", lost["error"])
            os.kill(lost["pid"], signal.SIGKILL)  # the orphan the old daemon left

    def test_a_graceful_stop_kills_running_groups_and_records_why(self):
        with Daemon() as d:
            start(d, "stop-1", {"command": "sleep 1000 & echo $!; wait"})
            grandchild = int(wait_until(lambda: read_stream(d, "stop-1"), what="pid"))
            self.assertEqual(d.stop(), 0)
            wait_until(lambda: not os.path.exists("/proc/%d" % grandchild) or
                       open("/proc/%d/stat" % grandchild).read().split()[2] == "Z",
                       what="group killed")
            d.start()
            d.json("POST", "/v1/bootstrap", {"token": d.token}, auth=False)
            s, obj = d.json("GET", "/v1/execs/stop-1")
            self.assertEqual((obj["state"], obj["exit_code"], obj["signal"], obj["killed_by"]),
                             ("exited", 137, "KILL", "daemon_shutdown"))

    def test_released_ids_stay_released_across_a_restart(self):
        with Daemon("--ack-ttl-sec", "0") as d:
            run(d, "tomb-1", {"argv": ["true"]})
            d.json("POST", "/v1/execs/tomb-1/ack")
            wait_until(lambda: d.json("GET", "/v1/execs/tomb-1")[0] == 410, what="release")
            restart_after_kill(d)
            s, b = d.json("PUT", "/v1/execs/tomb-1", {"argv": ["true"]})
            self.assertEqual((s, error_code(b)), (410, "exec_released"))
            self.assertFalse(os.path.exists(os.path.join(d.state_dir, "execs", "exec-tomb-1")))


class MemoryTest(unittest.TestCase):
    def test_rss_stays_flat_over_a_2_gib_print(self):
        with Daemon() as d:
            run(d, "warm", {"argv": ["head", "-c", "1000000", "/dev/zero"]})
            before = rss_kib(d.proc.pid)
            obj, _, _ = run(d, "big", {"command": "head -c 2147483648 /dev/zero"}, timeout=300)
            self.assertEqual(obj["stdout_bytes"], 2 << 30)
            after = rss_kib(d.proc.pid)
            self.assertLess(after - before, 8 * 1024, (before, after))
            # The spool kept the default cap (256 MiB) and returned the rest.
            self.assertEqual(obj["stdout_retained_from"], (2 << 30) - (256 << 20))
            st = os.stat(os.path.join(d.state_dir, "execs", "exec-big", "stdout"))
            self.assertLess(st.st_blocks * 512, (256 << 20) + (2 << 20))


if __name__ == "__main__":
    unittest.main()
