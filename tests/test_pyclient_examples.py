"""The Python client's examples run against the real daemon: the README's
example exactly as printed (against scripts/dev's daemon on a stock guest), and the evaluation harness killed mid-stream and run
again (it reattaches from its persisted id and cursors; no byte is lost or
repeated)."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from lib import stock_guest
from lib.agentd_test import Daemon
from lib.pyclient import PYCLIENT_DIR

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HARNESS = os.path.join(PYCLIENT_DIR, "examples", "eval_harness.py")
STOCK_GUEST = os.path.join(REPO, "tests", "lib", "stock_guest.py")

GRADE_SH = """\
i=0
while [ $i -lt 300 ]; do echo "test $i ok"; i=$((i+1)); sleep 0.01; done
echo "2 warnings" >&2
mkdir -p results && echo "score 0.75" > results/score.txt
exit 3
"""


def read_json(path):
    with open(path) as f:
        return json.load(f)


def readme_block(path, lang):
    with open(path, encoding="utf-8") as f:
        blocks = re.findall(r"```%s\n(.*?)```" % lang, f.read(), re.S)
    assert blocks, "no %s block in %s" % (lang, path)
    return blocks[0]


class PyClientExamplesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()
        cls.url = "http://127.0.0.1:%d" % cls.daemon.port

    @classmethod
    def tearDownClass(cls):
        cls.daemon.close()

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="pyclient-examples-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def python(self, args, **kw):
        env = dict(os.environ, PYTHONPATH=PYCLIENT_DIR, PYTHONDONTWRITEBYTECODE="1")
        return subprocess.Popen([sys.executable] + args, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, **kw)

    def test_the_readme_example_runs_exactly_as_printed_against_scripts_devs_daemon(self):
        # Not a character changed: scripts/dev's address and token file, on
        # a stock guest without /workspace (tests/lib/stock_guest.py: private
        # namespaces, a fresh root, the daemon where scripts/dev puts it).
        why = stock_guest.available()
        if why:
            self.skipTest(why)
        code = readme_block(os.path.join(REPO, "README.md"), "python")
        p = self.python([STOCK_GUEST, self.daemon.binary, "--", sys.executable, "-c", code])
        out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(out, "0 hello from the guest\n\n")

    def test_the_client_readmes_snippets_run_exactly_as_printed(self):
        why = stock_guest.available()
        if why:
            self.skipTest(why)
        readme = os.path.join(PYCLIENT_DIR, "README.md")
        with open(readme, encoding="utf-8") as f:
            blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
        self.assertEqual(len(blocks), 3)
        expected = ["0 testing in /workspace/repo\n \n", "0 from asyncio\n\n"]
        for code, out_expected in zip(blocks, expected):
            with self.subTest(code=code.splitlines()[1]):
                p = self.python([STOCK_GUEST, self.daemon.binary, "--", sys.executable, "-c",
                                 code])
                out, err = p.communicate(timeout=120)
                self.assertEqual(p.returncode, 0, err)
                self.assertEqual(out, out_expected)
        # The third is the heart of examples/eval_harness.py (run below): its
        # lines, in order.
        with open(HARNESS, encoding="utf-8") as f:
            harness = [line.strip() for line in f]
        at = 0
        for line in filter(None, (l.strip() for l in blocks[2].splitlines())):
            self.assertIn(line, harness[at:], "README line not in the harness (in order)")
            at = harness.index(line, at) + 1

    def test_the_eval_harness_resumes_after_being_killed_mid_stream(self):
        task = os.path.join(self.tmp, "task")
        os.makedirs(task)
        with open(os.path.join(task, "grade.sh"), "w") as f:
            f.write(GRADE_SH)
        out = os.path.join(self.tmp, "out")
        guest = os.path.join(self.tmp, "guest")
        args = [HARNESS, self.url, "test-token", task, out, guest]
        first = self.python(args)
        state = os.path.join(out, "state.json")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if os.path.exists(state) and read_json(state)["stdout"] > 100:
                break
            time.sleep(0.02)
        first.send_signal(signal.SIGKILL)
        first.communicate()
        saved = read_json(state)
        self.assertGreater(saved["stdout"], 100)
        self.assertLess(saved["stdout"], 3000, "killed while the grader still ran")

        second = self.python(args)
        stdout, stderr = second.communicate(timeout=120)
        self.assertEqual(second.returncode, 0, stderr)
        verdict = json.loads(stdout)
        self.assertEqual((verdict["id"], verdict["exit_code"], verdict["passed"]),
                         (saved["id"], 3, False))
        self.assertEqual(verdict["gaps"], [])
        with open(os.path.join(out, "stdout.log")) as f:
            self.assertEqual(f.read(), "".join("test %d ok\n" % i for i in range(300)))
        with open(os.path.join(out, "stderr.log")) as f:
            self.assertEqual(f.read(), "2 warnings\n")
        with open(os.path.join(out, "results", "score.txt")) as f:
            self.assertEqual(f.read(), "score 0.75\n")
        self.assertEqual(os.listdir(guest), [], "the harness cleans up the guest")
        # A third run finds the verdict and touches nothing.
        third = self.python(args)
        stdout, _ = third.communicate(timeout=60)
        self.assertEqual(json.loads(stdout), verdict)


if __name__ == "__main__":
    unittest.main()
