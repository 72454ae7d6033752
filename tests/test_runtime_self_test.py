"""Interpreter self-tests (docs/PROTOCOL.md, "Health": runtime_self_tests,
self_test_failed): an interpreter that is present but broken is reported
with why, refused for runs with the same reason, and tested again once its
file changes."""

import os
import shutil
import tempfile
import unittest

from lib.agentd_test import Daemon, error_code
from lib.exec_util import wait_until

BROKEN_PYTHON = """#!/bin/sh
echo "Could not find platform independent libraries <prefix>" >&2
echo "ModuleNotFoundError: No module named 'encodings'" >&2
exit 1
"""


def health(d):
    status, h = d.json("GET", "/v1/health", auth=False)
    assert status == 200, (status, h)
    return h


def self_test(d, runtime):
    """The runtime's self-test once it has ended (waits for the verdict: the
    test itself is bounded by the daemon's 30 s kill)."""
    def ended():
        for t in health(d)["runtime_self_tests"]:
            if t["runtime"] == runtime and t["state"] != "pending":
                return t
        return None
    return wait_until(ended, timeout=120, what=runtime + " self-test verdict")


def write_program(path, text):
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)  # a new inode, as a package upgrade makes


class BrokenInterpreterTest(unittest.TestCase):
    def setUp(self):
        self.bindir = tempfile.mkdtemp(prefix="agentd-selftest-")
        os.symlink("/bin/sh", os.path.join(self.bindir, "sh"))
        self.python = os.path.join(self.bindir, "python3")
        write_program(self.python, BROKEN_PYTHON)
        self.d = Daemon(env={"PATH": self.bindir})

    def tearDown(self):
        self.d.close()
        shutil.rmtree(self.bindir)

    def test_a_broken_interpreter_is_unavailable_with_why_and_runs_repeat_it(self):
        t = self_test(self.d, "python")
        self.assertEqual((t["state"], t["program"]), ("failed", self.python))
        self.assertGreaterEqual(t["duration_ms"], 0)
        h = health(self.d)
        self.assertNotIn("python", h["runtimes"])
        entry = {u["runtime"]: u for u in h["runtimes_unavailable"]}["python"]
        self.assertEqual(entry["code"], "self_test_failed")
        self.assertEqual(entry["reason"],
                         "python3 (%s) failed its self-test (print(6*7)): it exited 1; stderr: "
                         "ModuleNotFoundError: No module named 'encodings'" % self.python)
        for method, path in (("POST", "/v1/run"), ("PUT", "/v1/execs/py-1")):
            status, obj = self.d.json(method, path, {"runtime": "python", "code": "print(1)"})
            self.assertEqual((status, error_code(obj)), (400, "runtime_unavailable"))
            self.assertEqual((obj["error"]["reason_code"], obj["error"]["reason"]),
                             ("self_test_failed", entry["reason"]))
        # The shell in the same PATH passed its own test and runs.
        self.assertEqual(self_test(self.d, "shell")["state"], "passed")
        self.assertIn("shell", h["runtimes"])

    def test_a_replaced_interpreter_is_tested_again_and_then_runs(self):
        self.assertEqual(self_test(self.d, "python")["state"], "failed")
        os.unlink(self.python)
        os.symlink(shutil.which("python3"), self.python)
        # The next check sees another file and starts its test.
        wait_until(lambda: any(t["runtime"] == "python" and t["state"] == "passed"
                               for t in health(self.d)["runtime_self_tests"]),
                   timeout=120, what="the replaced python3 to pass")
        h = health(self.d)
        self.assertIn("python", h["runtimes"])
        self.assertNotIn("python", [u["runtime"] for u in h["runtimes_unavailable"]])
        status, obj = self.d.json("POST", "/v1/run", {"runtime": "python", "code": "print(6*7)"},
                                  timeout=120)
        self.assertEqual((status, obj["stdout"]), (200, "42\n"), obj)

    def test_an_interpreter_printing_the_wrong_answer_fails_with_what_it_printed(self):
        write_program(self.python, "#!/bin/sh\necho 41\n")
        t = wait_until(lambda: [t for t in health(self.d)["runtime_self_tests"]
                                if t["runtime"] == "python" and t["state"] != "pending"
                                and "41" in self.reason_of("python")],
                       timeout=120, what="the second python3's verdict")
        self.assertEqual(t[0]["state"], "failed")
        self.assertEqual(self.reason_of("python"),
                         "python3 (%s) failed its self-test (print(6*7)): it printed \"41\" "
                         "where 42 was expected" % self.python)

    def reason_of(self, runtime):
        for u in health(self.d)["runtimes_unavailable"]:
            if u["runtime"] == runtime:
                return u["reason"]
        return ""


class WorkingInterpretersTest(unittest.TestCase):
    def test_every_present_interpreter_passes_and_is_no_exec(self):
        with Daemon() as d:
            for runtime in health(d)["runtimes"]:
                t = self_test(d, runtime)
                self.assertEqual(t["state"], "passed", t)
                self.assertTrue(os.path.isabs(t["program"]), t)
            h = health(d)
            self.assertEqual([u for u in h["runtimes_unavailable"]
                              if u["code"] == "self_test_failed"], [])
            # The tests are not execs: no record, not busy, not counted.
            self.assertEqual((h["execs"], h["busy"]), (0, False))
            status, listed = d.json("GET", "/v1/execs")
            self.assertEqual((status, listed["execs"]), (200, []))


if __name__ == "__main__":
    unittest.main()
