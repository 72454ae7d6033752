"""POST /v1/run: result lines (docs/PROTOCOL.md, "Run code", "result_marker"):
a stdout line starting with the marker is taken out of stdout and answered
as `result`, however the code's writes split it."""

import shutil
import tempfile
import unittest

from lib.agentd_test import Daemon, error_code


class RunResultTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="agentd-result-")
        cls.daemon = Daemon("--workdir", cls.work)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.close()
        shutil.rmtree(cls.work, ignore_errors=True)

    def run_code(self, body):
        status, obj = self.daemon.json("POST", "/v1/run", dict(body, scan_changes=False),
                                       timeout=120)
        self.assertEqual(status, 200, obj)
        return obj

    def test_a_marker_line_split_across_writes_is_the_result_and_leaves_stdout(self):
        # Four writes, each flushed to the pipe on its own, with pauses the
        # reader sees: the marker itself is split, and so is the value.
        code = ("import sys, time\n"
                "print('log before', flush=True)\n"
                "for piece in ['__AGENTD_', 'RESULT__ {\"tot', 'al\": 42, \"ok\": true}', '\\n']:\n"
                "    sys.stdout.write(piece); sys.stdout.flush(); time.sleep(0.05)\n"
                "print('log after')\n")
        r = self.run_code({"runtime": "python", "code": code})
        self.assertEqual(r["stdout"], "log before\nlog after\n")
        self.assertEqual(r["result"], {"total": 42, "ok": True})
        self.assertIsNone(r["result_error"])
        self.assertEqual(r["stdout_bytes"], len("log before\nlog after\n") +
                         len('__AGENTD_RESULT__ {"total": 42, "ok": true}\n'))

    def test_the_last_result_line_wins_and_a_marker_mid_line_is_output(self):
        r = self.run_code({"runtime": "shell", "code":
                           "echo '__AGENTD_RESULT__ 1'; echo 'x __AGENTD_RESULT__ 2'; "
                           "printf '__AGENTD_RESULT__ [3, null]'"})
        self.assertEqual(r["stdout"], "x __AGENTD_RESULT__ 2\n")
        self.assertEqual(r["result"], [3, None])

    def test_a_result_line_that_is_not_json_is_result_error(self):
        r = self.run_code({"runtime": "shell", "code": "echo '__AGENTD_RESULT__ {oops'; echo ok"})
        self.assertEqual(r["stdout"], "ok\n")
        self.assertNotIn("result", r)
        self.assertRegex(r["result_error"], r"^the result line is not JSON")

    def test_no_result_line_and_a_marker_of_ones_own(self):
        r = self.run_code({"runtime": "shell", "code": "echo plain"})
        self.assertNotIn("result", r)
        self.assertIsNone(r["result_error"])
        r = self.run_code({"runtime": "shell", "result_marker": "RESULT:",
                           "code": "echo 'RESULT: \"mine\"'; echo '__AGENTD_RESULT__ 1'"})
        self.assertEqual((r["result"], r["stdout"]), ("mine", "__AGENTD_RESULT__ 1\n"))
        r = self.run_code({"runtime": "shell", "result_marker": "",
                           "code": "echo '__AGENTD_RESULT__ 1'"})
        self.assertEqual(r["stdout"], "__AGENTD_RESULT__ 1\n")
        self.assertNotIn("result", r)

    def test_a_bad_marker_is_refused_naming_the_field(self):
        for marker in ["a\nb", "x" * 65]:
            status, obj = self.daemon.json("POST", "/v1/run", {
                "runtime": "shell", "code": "true", "result_marker": marker})
            self.assertEqual((status, error_code(obj)), (400, "invalid_request"))
            self.assertEqual(obj["error"]["field"], "result_marker")


if __name__ == "__main__":
    unittest.main()
