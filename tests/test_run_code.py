"""POST /v1/run: runtimes, output bounds, summaries, cwd, changed files, and
the same code action as a detached exec (docs/PROTOCOL.md, "Run code")."""

import os
import shutil
import tempfile
import time
import unittest

from lib.agentd_test import Daemon, DaemonTestCase, error_code
from lib.exec_util import read_stream, start, wait_exit


def run(d, body, expect=200):
    status, obj = d.json("POST", "/v1/run", body, timeout=120)
    assert status == expect, (status, obj)
    return obj


class RunCodeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="agentd-run-")
        cls.daemon = Daemon("--workdir", cls.work)
        status, cls.health = cls.daemon.json("GET", "/v1/health", auth=False)
        assert status == 200

    @classmethod
    def tearDownClass(cls):
        cls.daemon.close()
        shutil.rmtree(cls.work, ignore_errors=True)

    def test_health_lists_the_runtimes_present(self):
        self.assertIn("shell", self.health["runtimes"])
        self.assertIn("python", self.health["runtimes"])
        self.assertEqual("ts" in self.health["runtimes"], shutil.which("bun") is not None)

    def test_shell_runs_with_sh_c_in_the_workdir(self):
        r = run(self.daemon, {"runtime": "shell", "code": "echo \"$0\"; pwd; echo err >&2"})
        self.assertEqual(r["stdout"], "sh\n%s\n" % os.path.realpath(self.work))
        self.assertEqual(r["stderr"], "err\n")
        self.assertEqual((r["exit_code"], r["success"], r["truncated"]), (0, True, False))
        self.assertRegex(r["summary"], r"^exit 0 in \d+ ms$")
        self.assertEqual(r["cwd"], self.work)
        self.assertEqual(r["runtime"], "shell")

    def test_python_runs_with_python3_c(self):
        r = run(self.daemon, {"runtime": "python", "code": "import sys; print(sys.argv)"})
        self.assertEqual(r["stdout"], "['-c']\n")
        self.assertTrue(r["success"])

    def test_ts_runs_with_bun_e(self):
        if "ts" not in self.health["runtimes"]:
            self.skipTest("bun is not installed here (scripts/install-deps installs it from npm)")
        r = run(self.daemon, {"runtime": "ts", "code": "const n: number = 41; console.log(n + 1)"})
        self.assertEqual((r["stdout"], r["exit_code"]), ("42\n", 0))

    def test_failure_summary_ends_with_the_last_error_line(self):
        r = run(self.daemon, {"runtime": "python", "code": "import no_such_module_x"})
        self.assertEqual(r["exit_code"], 1)
        self.assertFalse(r["success"])
        self.assertRegex(r["summary"],
                         r"^exit 1 in \d+ ms: ModuleNotFoundError: No module named "
                         r"'no_such_module_x' at line 1: import no_such_module_x$")

    def test_timeout_is_clamped_to_300_and_names_its_value(self):
        r = run(self.daemon, {"runtime": "shell", "code": "exit 0", "timeout_sec": 100000})
        self.assertEqual(r["timeout_sec"], 300)
        r = run(self.daemon, {"runtime": "shell", "code": "echo started; sleep 30",
                              "timeout_sec": 1})
        self.assertEqual((r["exit_code"], r["timed_out"], r["killed_by"]), (124, True, "timeout"))
        self.assertEqual(r["summary"], "killed: wall-clock limit 1s exceeded")
        self.assertEqual(r["limit"], {"name": "timeout", "value": 1, "unit": "s"})
        self.assertEqual(r["stdout"], "started\n")

    def test_default_timeout_comes_from_the_flag(self):
        r = run(self.daemon, {"runtime": "shell", "code": "true"})
        self.assertEqual(r["timeout_sec"], 60)

    def test_output_is_bounded_at_64_kib_with_head_and_tail(self):
        code = "import sys; sys.stdout.write('H' * 20000 + 'M' * 200000 + 'T' * 60000)"
        r = run(self.daemon, {"runtime": "python", "code": code})
        self.assertTrue(r["truncated"])
        self.assertEqual(r["stdout_bytes"], 280000)
        out = r["stdout"]
        head, _, rest = out.partition("\n[... ")
        omitted, _, tail = rest.partition(" bytes omitted ...]\n")
        self.assertEqual(head, "H" * 16384)
        self.assertEqual(len(tail), 65536 - 16384)
        self.assertTrue(tail.endswith("T" * 49152))
        self.assertEqual(int(omitted), 280000 - 65536)

    def test_stderr_is_bounded_too_and_stdout_stays_whole(self):
        code = "import sys; print('ok'); sys.stderr.write('E' * 100000)"
        r = run(self.daemon, {"runtime": "python", "code": code})
        self.assertTrue(r["truncated"])
        self.assertEqual((r["stdout"], r["stderr_bytes"]), ("ok\n", 100000))
        self.assertEqual(r["stderr"], "E" * 16384 + "\n[... 34464 bytes omitted ...]\n" +
                         "E" * 49152)

    def test_invalid_utf8_becomes_replacement_characters(self):
        r = run(self.daemon, {"runtime": "python",
                              "code": "import sys; sys.stdout.buffer.write(b'a\\xff\\xfeb\\xc3\\xa9')"})
        self.assertEqual(r["stdout"], "a\ufffd\ufffdb\u00e9")

    def test_explicit_cwd_and_paths_relative_to_it(self):
        sub = os.path.join(self.work, "sub")
        os.makedirs(sub, exist_ok=True)
        r = run(self.daemon, {"runtime": "shell", "code": "echo x > made.txt", "cwd": sub})
        self.assertEqual(r["changed_files"], [{"path": "made.txt", "change": "added",
                                               "type": "file"}])

    def test_changed_files_added_modified_removed(self):
        d = tempfile.mkdtemp(dir=self.work)
        for name, data in (("keep", "k"), ("edit", "e"), ("gone", "g")):
            with open(os.path.join(d, name), "w") as f:
                f.write(data)
        r = run(self.daemon, {"runtime": "shell", "cwd": d,
                              "code": "echo more >> edit; rm gone; mkdir -p new; echo n > new/f"})
        self.assertEqual(r["changed_files"], [
            {"path": "edit", "change": "modified", "type": "file"},
            {"path": "gone", "change": "removed", "type": "file"},
            {"path": "new", "change": "added", "type": "dir"},
            {"path": "new/f", "change": "added", "type": "file"},
        ])
        self.assertRegex(r["summary"], r"^exit 0 in \d+ ms; 4 files changed$")
        self.assertFalse(r["changed_files_truncated"])

    def test_a_same_size_rewrite_within_the_same_second_is_seen(self):
        d = tempfile.mkdtemp(dir=self.work)
        path = os.path.join(d, "f.txt")
        for i in range(5):
            with open(path, "w") as f:
                f.write("A%d" % i)
            # Same size, same second: only the content tells.
            r = run(self.daemon, {"runtime": "python", "cwd": d,
                                  "code": "open('f.txt', 'w').write('B%d')" % i})
            self.assertEqual(r["changed_files"],
                             [{"path": "f.txt", "change": "modified", "type": "file"}], i)
            r = run(self.daemon, {"runtime": "shell", "cwd": d, "code": "cat f.txt"})
            self.assertEqual(r["changed_files"], [], "a read is not a change")

    def test_scan_can_be_turned_off(self):
        r = run(self.daemon, {"runtime": "shell", "code": "echo x > off.txt",
                              "scan_changes": False})
        self.assertEqual(r["changed_files"], [])

    def test_request_errors(self):
        for body, field in (({"code": "1"}, "runtime"),
                            ({"runtime": "cobol", "code": "1"}, "runtime"),
                            ({"runtime": "shell"}, "code"),
                            ({"runtime": "shell", "code": "1", "timeout": 1}, "timeout")):
            status, obj = self.daemon.json("POST", "/v1/run", body)
            self.assertEqual((status, error_code(obj)), (400, "invalid_request"), body)
            self.assertEqual(obj["error"]["field"], field)

    def test_spawn_failure_is_an_answer(self):
        r = run(self.daemon, {"runtime": "shell", "code": "true", "cwd": "/no/such/dir"})
        self.assertEqual(r["exit_code"], 127)
        self.assertIn("cannot change directory", r["summary"])

    def test_run_is_busy_while_it_runs_and_leaves_no_record(self):
        import threading
        result = {}
        t = threading.Thread(target=lambda: result.update(
            run(self.daemon, {"runtime": "shell", "code": "sleep 1"})))
        t.start()
        deadline = time.monotonic() + 10
        busy = False
        while time.monotonic() < deadline and not busy:
            busy = self.daemon.json("GET", "/v1/health", auth=False)[1]["busy"]
            time.sleep(0.02)
        t.join()
        self.assertTrue(busy)
        self.assertEqual(result["exit_code"], 0)
        _, listed = self.daemon.json("GET", "/v1/execs")
        self.assertEqual([e for e in listed["execs"] if e["id"].startswith("run.")], [])

    def test_detached_exec_with_runtime_and_code(self):
        s, obj = start(self.daemon, "code-1", {"runtime": "python", "code": "import os; print(os.getcwd())"})
        self.assertEqual(s, 201)
        obj = wait_exit(self.daemon, "code-1")
        self.assertEqual(obj["exit_code"], 0)
        self.assertEqual(read_stream(self.daemon, "code-1").decode(),
                         os.path.realpath(self.work) + "\n")
        # Idempotent like every exec start.
        s, again = self.daemon.json("PUT", "/v1/execs/code-1",
                                    {"code": "import os; print(os.getcwd())", "runtime": "python"})
        self.assertEqual(s, 200)


class RuntimeAbsentTest(unittest.TestCase):
    def test_an_absent_runtime_is_not_advertised_and_refused(self):
        bindir = tempfile.mkdtemp(prefix="agentd-path-")
        os.symlink("/bin/sh", os.path.join(bindir, "sh"))
        try:
            with Daemon(env={"PATH": bindir}) as d:
                _, health = d.json("GET", "/v1/health", auth=False)
                self.assertEqual(health["runtimes"], ["shell"])
                status, obj = d.json("POST", "/v1/run", {"runtime": "python", "code": "1"})
                self.assertEqual((status, error_code(obj)), (400, "runtime_unavailable"))
                self.assertEqual(obj["error"]["runtime"], "python")
                status, obj = d.json("PUT", "/v1/execs/x", {"runtime": "python", "code": "1"})
                self.assertEqual((status, error_code(obj)), (400, "runtime_unavailable"))
                # Probed when asked: an interpreter installed later appears.
                os.symlink(shutil.which("python3"), os.path.join(bindir, "python3"))
                _, health = d.json("GET", "/v1/health", auth=False)
                self.assertEqual(health["runtimes"], ["shell", "python"])
        finally:
            shutil.rmtree(bindir)


class RuntimeUnavailableReasonTest(unittest.TestCase):
    def unavailable(self, d):
        _, health = d.json("GET", "/v1/health", auth=False)
        return {u["runtime"]: u for u in health["runtimes_unavailable"]}, health

    def assert_refused_with(self, d, runtime, entry):
        status, obj = d.json("POST", "/v1/run", {"runtime": runtime, "code": "1"})
        self.assertEqual((status, error_code(obj)), (400, "runtime_unavailable"))
        self.assertEqual((obj["error"]["runtime"], obj["error"]["reason_code"],
                          obj["error"]["reason"]),
                         (runtime, entry["code"], entry["reason"]))

    def test_health_names_why_each_runtime_cannot_run_and_a_run_repeats_it(self):
        bindir = tempfile.mkdtemp(prefix="agentd-path-")
        os.symlink("/bin/sh", os.path.join(bindir, "sh"))
        with open(os.path.join(bindir, "bun"), "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(os.path.join(bindir, "bun"), 0o644)
        try:
            with Daemon(env={"PATH": bindir}) as d:
                unavailable, health = self.unavailable(d)
                self.assertEqual(health["runtimes"], ["shell"])
                self.assertEqual(sorted(unavailable), ["python", "ts"])
                self.assertEqual(unavailable["python"]["code"], "interpreter_not_found")
                self.assertEqual(unavailable["python"]["reason"],
                                 "python3 is not on PATH (%s)" % bindir)
                self.assertEqual(unavailable["ts"]["code"], "not_executable")
                self.assertIn("%s/bun is not executable (mode 0644)" % bindir,
                              unavailable["ts"]["reason"])
                self.assert_refused_with(d, "python", unavailable["python"])
                self.assert_refused_with(d, "ts", unavailable["ts"])
                # Made executable: no longer listed as unavailable.
                os.chmod(os.path.join(bindir, "bun"), 0o755)
                unavailable, health = self.unavailable(d)
                self.assertEqual(sorted(unavailable), ["python"])
                self.assertIn("ts", health["runtimes"])
        finally:
            shutil.rmtree(bindir)

    def test_a_runtime_disabled_by_flag_is_unavailable_whatever_the_path_holds(self):
        with Daemon("--disable-runtime", "python") as d:
            unavailable, health = self.unavailable(d)
            self.assertNotIn("python", health["runtimes"])
            self.assertIn("shell", health["runtimes"])
            self.assertEqual(unavailable["python"]["code"], "disabled_by_flag")
            self.assertIn("--disable-runtime", unavailable["python"]["reason"])
            self.assert_refused_with(d, "python", unavailable["python"])
            r = run(d, {"runtime": "shell", "code": "echo ok"})
            self.assertEqual(r["stdout"], "ok\n")

    def test_a_guest_with_every_runtime_lists_none_unavailable(self):
        with Daemon() as d:
            unavailable, health = self.unavailable(d)
            for name in health["runtimes"]:
                self.assertNotIn(name, unavailable)
            self.assertEqual(set(health["runtimes"]) | set(unavailable),
                             {"shell", "python", "ts"})


class ScanBoundTest(unittest.TestCase):
    def test_a_scan_bound_is_reported(self):
        work = tempfile.mkdtemp(prefix="agentd-run-")
        try:
            os.makedirs(os.path.join(work, "many"))
            for i in range(30):
                open(os.path.join(work, "many", "f%02d" % i), "w").close()
            with Daemon("--workdir", work, "--scan-max-entries", "10") as d:
                r = run(d, {"runtime": "shell", "code": "echo x > top.txt"})
                self.assertTrue(r["changed_files_truncated"])
                self.assertEqual(r["changed_files_bound"],
                                 {"name": "scan_entries", "value": 10, "unit": "entries"})
                self.assertEqual(r["changed_files"],
                                 [{"path": "top.txt", "change": "added", "type": "file"}])
        finally:
            shutil.rmtree(work)


if __name__ == "__main__":
    unittest.main()
