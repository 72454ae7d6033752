"""The Python client's examples run against the real daemon: the README's
example exactly as printed (against scripts/dev's daemon on a stock guest), the evaluation harness killed mid-stream and run
again (it reattaches from its persisted id and cursors; no byte is lost or
repeated), and the warm pool cycling tenants through reset guests."""

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from lib import stock_guest
from lib.agentd_test import Daemon
from lib.exec_util import wait_until
from lib.pyclient import PYCLIENT_DIR
from lib.pyclient_case import DaemonPerClassCase

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HARNESS = os.path.join(PYCLIENT_DIR, "examples", "eval_harness.py")
STOCK_GUEST = os.path.join(REPO, "tests", "lib", "stock_guest.py")
WARM_POOL = os.path.join(PYCLIENT_DIR, "examples", "warm_pool.py")

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


class PyClientExamplesTest(DaemonPerClassCase):

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


def read_file(path):
    with open(path) as f:
        return f.read()


def python_env():
    return dict(os.environ, PYTHONPATH=PYCLIENT_DIR, PYTHONDONTWRITEBYTECODE="1")


class WarmPoolExampleTest(unittest.TestCase):
    """Two guests with a reset path each: one the pool bootstraps, one
    handed over bootstrapped with the operator's token."""

    def guest(self, bootstrap, *flags):
        work = tempfile.mkdtemp(prefix="warm-pool-")
        self.addCleanup(shutil.rmtree, work, True)
        d = Daemon("--reset-path", work, *flags, token="pool-%s" % secrets.token_hex(8) if bootstrap
                   else None, bootstrap=bootstrap)
        self.addCleanup(d.close)
        return d, work

    def spec(self, d, path):
        url = "http://127.0.0.1:%d" % d.port
        return ",".join([url, path] + ([d.token] if d.token else []))

    def pool(self, tenants, *specs):
        p = subprocess.run([sys.executable, WARM_POOL, "--json", "--tenants", str(tenants),
                            *specs], env=python_env(), capture_output=True, text=True,
                           timeout=300)
        lines = [json.loads(l) for l in p.stdout.splitlines()]
        return p.returncode, [l for l in lines if "summary" not in l], lines[-1], p.stderr

    def test_the_warm_pool_hands_each_tenant_a_guest_without_a_trace_of_the_last(self):
        (a, work_a), (b, work_b) = self.guest(bootstrap=False), self.guest(bootstrap=True)
        code, rows, summary, err = self.pool(12, self.spec(a, work_a), self.spec(b, work_b))
        self.assertEqual(code, 0, err + json.dumps(rows))
        self.assertEqual(len(rows), 12)
        self.assertEqual([r["traces"] for r in rows], [[]] * 12)
        self.assertTrue(all(r["clean"] and r["exit_code"] == 0 for r in rows), rows)
        self.assertEqual((summary["clean_teardown_rate"], summary["breaches"], summary["dropped"]),
                         (1.0, 0, []))
        for d in (a, b):
            url = "http://127.0.0.1:%d" % d.port
            generations = [r["generation"] for r in rows if r["guest"] == url]
            self.assertEqual(generations, list(range(1, 7)), rows)
        # The last reset installed a token the pool kept: the operator's is retired.
        self.assertEqual(b.json("GET", "/v1/execs")[0], 401)
        self.assertEqual(os.listdir(work_a), [])

    def test_the_warm_pool_reports_a_trace_outside_the_reset_path(self):
        # The control: the pool looks in a directory the daemon does not
        # reset, so the second tenant finds the first one's canary file.
        d, _ = self.guest(bootstrap=True)
        elsewhere = tempfile.mkdtemp(prefix="warm-pool-not-reset-")
        self.addCleanup(shutil.rmtree, elsewhere, True)
        code, rows, summary, _ = self.pool(2, self.spec(d, elsewhere))
        self.assertEqual(code, 1)
        self.assertEqual(rows[0]["traces"], [])
        self.assertTrue(any(t.startswith("file: ") and t.endswith(".txt")
                            for t in rows[1]["traces"]), rows[1])
        self.assertTrue(any(t.startswith("content: ") for t in rows[1]["traces"]), rows[1])
        self.assertEqual(summary["breaches"], 1)

    def test_the_warm_pool_drops_a_quarantined_guest_and_serves_on_with_the_rest(self):
        freezer = "/sys/fs/cgroup/freezer"
        if not os.access(os.path.join(freezer, "cgroup.procs"), os.W_OK):
            self.skipTest("needs a writable cgroup v1 freezer (a frozen process ignores SIGKILL)")
        # An acked record goes at once: the first tenant must not see the set-up's exec.
        stuck, work_s = self.guest(True, "--ack-ttl-sec", "0")
        good, work_g = self.guest(bootstrap=True)
        group = os.path.join(freezer, "agentd-pool-test-" + secrets.token_hex(4))
        os.mkdir(group)

        def thaw():
            with open(os.path.join(group, "freezer.state"), "w") as f:
                f.write("THAWED")
            wait_until(lambda: not read_file(os.path.join(group, "cgroup.procs")).strip(),
                       what="the frozen process to end")
            os.rmdir(group)
        self.addCleanup(thaw)
        # Something the reset cannot end: a process of the guest frozen by its tenant.
        status, _ = stuck.json("PUT", "/v1/execs/freeze?wait_ms=10000&until=exit", {
            "command": "sleep 1000 & echo $! > %s/cgroup.procs && echo FROZEN > %s/freezer.state"
                       % (group, group)})
        self.assertEqual(status, 201)
        self.assertEqual(stuck.json("POST", "/v1/execs/freeze/ack")[0], 200)
        wait_until(lambda: stuck.json("GET", "/v1/execs")[1]["execs"] == [],
                   what="the acked set-up exec to go")
        code, rows, summary, err = self.pool(6, self.spec(stuck, work_s), self.spec(good, work_g))
        self.assertEqual(code, 0, err)
        stuck_url = "http://127.0.0.1:%d" % stuck.port
        self.assertEqual([r["clean"] for r in rows if r["guest"] == stuck_url], [False])
        self.assertEqual(len(rows), 6)
        self.assertEqual(len(summary["dropped"]), 1)
        self.assertEqual(summary["dropped"][0]["guest"], stuck_url)
        self.assertEqual(summary["dropped"][0]["remaining"][0]["kind"], "process")
        status, health = stuck.json("GET", "/v1/health", auth=False)
        self.assertEqual((status, health["state"]), (503, "quarantined"))


if __name__ == "__main__":
    unittest.main()
