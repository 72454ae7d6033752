"""Limits that name themselves (docs/PROTOCOL.md, "Limits"): each limit
ends the exec with the right killed_by, limit object and summary, under the
mechanism this machine has (cgroups) and under rlimits; the daemon's own
oom_score_adj is low and its children's high."""

import os
import time
import unittest

from lib.agentd_test import Daemon, DaemonTestCase, error_code
from lib.exec_util import read_stream, run as run_exec, start, wait_exit


def has_cap_sys_resource():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) & (1 << 24))
    return False


def run(d, body):
    status, obj = d.json("POST", "/v1/run", body, timeout=120)
    assert status == 200, (status, obj)
    return obj


class CgroupLimitsTest(DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        _, health = cls.daemon.json("GET", "/v1/health", auth=False)
        cls.mechanism = health["limits"]["mechanism"]
        cls.supported = health["limits"]["supported"]

    def need_cgroups(self):
        if self.mechanism == "rlimit":
            self.skipTest("no usable cgroup here")

    def test_health_reports_the_mechanism(self):
        self.assertIn(self.mechanism, ("cgroup2", "cgroup1", "rlimit"))
        for name in ("timeout", "memory", "pids", "cpu", "file_size", "output"):
            self.assertIn(name, self.supported)

    def test_memory_limit_kills_and_names_its_value(self):
        self.need_cgroups()
        r = run(self.daemon, {"runtime": "python", "memory_mb": 48,
                              "code": "x = bytearray(400 << 20); print('survived')"})
        self.assertEqual(r["killed_by"], "memory", r)
        self.assertEqual(r["limit"], {"name": "memory", "value": 48, "unit": "MiB"})
        self.assertEqual(r["summary"], "killed: memory limit 48 MiB exceeded")
        self.assertFalse(r["success"])
        self.assertEqual(r["stdout"], "")

    def test_memory_limit_in_a_child_ends_the_whole_exec(self):
        self.need_cgroups()
        # The shell survives its child's OOM kill; the exec still ends as "memory".
        obj, _, _ = run_exec(self.daemon, "mem-child", {
            "command": "python3 -c 'x = bytearray(400 << 20)'; sleep 30", "memory_mb": 48,
            "timeout_sec": 60})
        self.assertEqual(obj["killed_by"], "memory")
        self.assertEqual(obj["limit"]["name"], "memory")
        self.assertEqual(obj["limits"], {"timeout_sec": 60, "memory_mb": 48})
        self.assertLess(obj["duration_ms"], 20000)

    def test_pids_limit_ends_a_fork_bomb(self):
        self.need_cgroups()
        r = run(self.daemon, {"runtime": "shell", "pids": 24, "timeout_sec": 60,
                              "code": "b(){ b | b & }; b; sleep 30"})
        self.assertEqual(r["killed_by"], "pids", r)
        self.assertEqual(r["summary"], "killed: process limit 24 exceeded")
        self.assertLess(r["duration_ms"], 20000)

    def test_cpu_time_limit(self):
        r = run(self.daemon, {"runtime": "python", "cpu_sec": 1, "timeout_sec": 60,
                              "code": "while True: pass"})
        self.assertEqual(r["killed_by"], "cpu", r)
        self.assertEqual(r["summary"], "killed: CPU time limit 1s exceeded")

    def test_cpu_time_is_counted_across_processes(self):
        self.need_cgroups()
        # Two busy processes, each under 1 s of CPU when the exec is ended
        # at 1 s in all: only the group's account catches this.
        r = run(self.daemon, {"runtime": "shell", "cpu_sec": 1, "timeout_sec": 60,
                              "code": "(while :; do :; done) & (while :; do :; done) & wait"})
        self.assertEqual(r["killed_by"], "cpu", r)

    def test_file_size_limit(self):
        d = self.daemon
        r = run(d, {"runtime": "shell", "file_size_mb": 1, "cwd": d.tmp,
                    "code": "head -c 3000000 /dev/zero > big.bin"})
        self.assertEqual(r["killed_by"], "file_size", r)
        self.assertEqual(r["summary"], "killed: file size limit 1 MiB exceeded; 1 file changed")
        self.assertEqual(os.path.getsize(os.path.join(d.tmp, "big.bin")), 1 << 20)

    def test_file_size_limit_in_python_is_an_error_line(self):
        # Python ignores SIGXFSZ: the write fails and the program says so.
        r = run(self.daemon, {"runtime": "python", "file_size_mb": 1, "cwd": self.daemon.tmp,
                              "code": "open('b2.bin', 'wb').write(bytes(3 << 20))"})
        self.assertEqual(r["exit_code"], 1)
        self.assertIn("File too large", r["summary"])

    def test_output_retention_is_a_gap_not_a_kill(self):
        obj, out, _ = run_exec(self.daemon, "out-gap", {
            "command": "head -c 100000 /dev/zero", "output_bytes": 8192})
        self.assertEqual((obj["exit_code"], obj["killed_by"]), (0, None))
        self.assertEqual(obj["stdout_bytes"], 100000)
        self.assertGreaterEqual(obj["stdout_retained_from"], 100000 - 8192)

    def test_output_limit_kills_when_asked(self):
        obj, _, _ = run_exec(self.daemon, "out-kill", {
            "command": "while :; do echo yes; done", "output_bytes": 65536,
            "kill_on_output": True, "timeout_sec": 60})
        self.assertEqual(obj["killed_by"], "output")
        self.assertEqual(obj["limit"], {"name": "output", "value": 65536, "unit": "bytes"})

    def test_output_limit_kill_in_a_run_names_its_value(self):
        r = run(self.daemon, {"runtime": "shell", "code": "while :; do echo yes; done",
                              "output_bytes": 65536, "kill_on_output": True, "timeout_sec": 60})
        self.assertEqual(r["killed_by"], "output", r)
        self.assertEqual(r["summary"], "killed: output limit 65536 bytes exceeded")

    def test_cpus_throttles_without_killing(self):
        if "cpus" not in self.supported:
            self.skipTest("no cgroup cpu controller here")
        r = run(self.daemon, {"runtime": "python", "cpus": 0.2, "timeout_sec": 60, "code":
                              "import time, os\n"
                              "t = time.time()\n"
                              "while time.time() - t < 1.5: pass\n"
                              "c = os.times()\n"
                              "print(round(c.user + c.system, 2))"})
        self.assertEqual((r["exit_code"], r["killed_by"]), (0, None))
        self.assertLess(float(r["stdout"]), 0.8)  # 20% of one core over 1.5 s, with slack

    def test_a_start_with_a_cgroup_answers_the_started_process(self):
        self.need_cgroups()
        status, obj = start(self.daemon, "grp-start", {"argv": ["sleep", "0.2"], "pids": 8})
        self.assertEqual(status, 201)
        self.assertGreater(obj["pid"], 0)
        status, again = start(self.daemon, "grp-start", {"argv": ["sleep", "0.2"], "pids": 8})
        self.assertEqual((status, again["pid"]), (200, obj["pid"]))
        status, bad = start(self.daemon, "grp-fail", {"argv": ["/no/such"], "pids": 8})
        self.assertEqual((bad["state"], bad["exit_code"]), ("exited", 127))

    def test_limits_apply_to_detached_execs(self):
        obj, _, _ = run_exec(self.daemon, "cpu-exec", {
            "argv": ["python3", "-c", "while True: pass"], "cpu_sec": 1, "timeout_sec": 60})
        self.assertEqual(obj["killed_by"], "cpu")
        self.assertEqual(obj["limit"], {"name": "cpu", "value": 1, "unit": "s"})

    def test_oom_score_adj_daemon_low_children_high(self):
        with open("/proc/%d/oom_score_adj" % self.daemon.proc.pid) as f:
            daemon_adj = int(f.read())
        if has_cap_sys_resource():
            self.assertEqual(daemon_adj, -900)
        else:
            # Lowering needs CAP_SYS_RESOURCE; without it the daemon keeps
            # its value and says so, and children still rank far above it.
            self.assertLessEqual(daemon_adj, 0)
            self.assertTrue(any("cannot set the daemon's oom_score_adj" in line
                                for line in self.daemon.logs()))
        obj, out, _ = run_exec(self.daemon, "oom-adj", {"command": "cat /proc/self/oom_score_adj"})
        self.assertEqual(out, b"500\n")

    def test_no_cgroup_is_left_behind(self):
        self.need_cgroups()
        run(self.daemon, {"runtime": "shell", "code": "true", "memory_mb": 64, "pids": 10})
        parents = []
        for root, dirs, _ in os.walk("/sys/fs/cgroup"):
            if os.path.basename(root) == "agentd-%d" % self.daemon.proc.pid:
                parents.append(root)
                dirs[:] = []
            elif root.count("/") > 6:
                dirs[:] = []
        self.assertTrue(parents, "the daemon's cgroup parents were not found")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            left = [os.path.join(p, c) for p in parents for c in os.listdir(p)
                    if os.path.isdir(os.path.join(p, c))]
            if not left:
                break
            time.sleep(0.1)
        self.assertEqual(left, [])


class RlimitTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon("--limits", "rlimit")

    @classmethod
    def tearDownClass(cls):
        cls.daemon.close()

    def test_health_says_rlimit(self):
        _, health = self.daemon.json("GET", "/v1/health", auth=False)
        self.assertEqual(health["limits"]["mechanism"], "rlimit")
        self.assertNotIn("cpus", health["limits"]["supported"])

    def test_cpu_limit_by_rlimit_cpu(self):
        r = run(self.daemon, {"runtime": "python", "cpu_sec": 1, "timeout_sec": 60,
                              "code": "while True: pass"})
        self.assertEqual(r["killed_by"], "cpu", r)
        self.assertEqual(r["signal"], "XCPU")
        self.assertEqual(r["summary"], "killed: CPU time limit 1s exceeded")

    def test_pids_and_file_size_set_rlimits_for_a_user(self):
        if os.geteuid() != 0:
            self.skipTest("switching to another user needs root")
        obj, out, _ = run_exec(self.daemon, "nproc", {"argv": ["cat", "/proc/self/limits"],
                                                      "user": "nobody", "pids": 7,
                                                      "file_size_mb": 1})
        self.assertEqual(obj["exit_code"], 0)
        soft = {line[:26].strip(): line[26:].split()[0] for line in out.decode().splitlines()[1:]}
        self.assertEqual(soft["Max processes"], "7")
        self.assertEqual(soft["Max file size"], str(1 << 20))

    def test_memory_limit_by_rlimit_as_fails_allocations(self):
        r = run(self.daemon, {"runtime": "python", "memory_mb": 200,
                              "code": "x = bytearray(400 << 20)"})
        self.assertEqual(r["exit_code"], 1)
        self.assertIn("MemoryError", r["summary"])

    def test_unenforceable_limits_are_refused(self):
        status, obj = self.daemon.json("POST", "/v1/run", {"runtime": "shell", "code": "true",
                                                           "cpus": 1})
        self.assertEqual((status, error_code(obj)), (400, "limit_unsupported"))
        self.assertEqual((obj["error"]["field"], obj["error"]["mechanism"]), ("cpus", "rlimit"))
        if os.geteuid() == 0:
            status, obj = self.daemon.json("PUT", "/v1/execs/p", {"command": "true", "pids": 5})
            self.assertEqual((status, error_code(obj)), (400, "limit_unsupported"))
            self.assertEqual(obj["error"]["field"], "pids")


class DefaultLimitsTest(unittest.TestCase):
    def test_daemon_defaults_apply_and_requests_override_them(self):
        with Daemon("--default-cpu-sec", "1", "--default-timeout-sec", "50") as d:
            _, health = d.json("GET", "/v1/health", auth=False)
            self.assertEqual(health["limits"]["defaults"], {"timeout_sec": 50, "cpu_sec": 1})
            obj, _, _ = run_exec(d, "dflt", {"argv": ["python3", "-c", "while True: pass"]})
            self.assertEqual(obj["killed_by"], "cpu")
            self.assertEqual(obj["limits"], {"timeout_sec": 50, "cpu_sec": 1})
            obj, _, _ = run_exec(d, "over", {"argv": ["true"], "cpu_sec": 5, "timeout_sec": 9})
            self.assertEqual(obj["limits"], {"timeout_sec": 9, "cpu_sec": 5})


if __name__ == "__main__":
    unittest.main()
