"""Test support for the live-guest conformance runs: start a guest with its
script (conformance/guests/rootfs-guest, conformance/vm/vm-guest), talk to
its daemon, run agentd-conformance against it and read the verdicts."""

import http.client
import json
import os
import re
import socket
import subprocess
import tempfile
import time
import unittest
import xml.etree.ElementTree as ET

from lib.agentd_test import AGENTD_BIN

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(AGENTD_BIN)))
CONFORMANCE = os.path.join(BUILD_DIR, "conformance", "agentd-conformance")
ROOTFS_GUEST = os.path.join(REPO, "conformance", "guests", "rootfs-guest")
VM_GUEST = os.path.join(REPO, "conformance", "vm", "vm-guest")


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


def connect(url, timeout=60):
    if url.startswith("unix:"):
        return _UnixConnection(url[len("unix:"):], timeout)
    m = re.fullmatch(r"http://([^:/]+):(\d+)/?", url)
    assert m, url
    return http.client.HTTPConnection(m.group(1), int(m.group(2)), timeout=timeout)


# The daemon options every guest runs with, so that no check has to skip for
# want of them: a short ack TTL (release after the TTL) and a small output
# retention cap (gap events). The guest scripts pass them after "--".
CONFORMANCE_DAEMON_ARGS = ("--ack-ttl-sec", "2", "--retention-stream-bytes", "1048576")


class GuestStartError(RuntimeError):
    def __init__(self, message, run_dir, veth=None):
        super().__init__(message)
        self.run_dir = run_dir
        self.veth = veth  # the host end of the guest's veth pair, if it got one


class Guest:
    """A guest started by one of the guest scripts; stop() tears it down."""

    def __init__(self, script, *args, timeout=600):
        self.script = script
        # Chosen here, so that a start that fails or times out is torn down too.
        self.run_dir = tempfile.mkdtemp(prefix="agentd-guest-")
        started = time.monotonic()
        try:
            r = subprocess.run([script, "start", "--agentd", AGENTD_BIN, "--run-dir", self.run_dir,
                                *args, "--", *CONFORMANCE_DAEMON_ARGS],
                               capture_output=True, text=True, timeout=timeout,
                               stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - started
        if r.returncode != 0:
            # The script names the host end of its veth pair on stderr (its
            # run directory, which also records it, is gone by now).
            named = re.search(r"\bveth (agd-[0-9a-f]+)", r.stderr)
            veth = named.group(1) if named else None
            self.stop()
            raise GuestStartError("%s start failed (%d):\n%s%s" % (
                os.path.basename(script), r.returncode, r.stdout, r.stderr), self.run_dir, veth)
        self.info = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
        self.url = self.info["url"]
        self.token_file = self.info["token_file"]
        assert self.info["run_dir"] == self.run_dir, self.info
        with open(self.token_file) as f:
            self.token = f.read().strip()
        # The guest's small file system makes the disk-pressure check run.
        self.suite_args = ("--small-fs", self.info["small_fs"])

    def stop(self):
        """Stops the guest and removes its run directory; returns (exit status
        of the script, its stderr)."""
        if not os.path.isdir(self.run_dir):
            return 0, ""
        r = subprocess.run([self.script, "stop", self.run_dir], capture_output=True, text=True,
                           timeout=120, stdin=subprocess.DEVNULL)
        return r.returncode, r.stderr

    def call(self, method, path, body=None, url=None):
        conn = connect(url or self.url)
        try:
            conn.request(method, path, body=json.dumps(body) if body is not None else None,
                         headers={"Authorization": "Bearer " + self.token,
                                  "Content-Type": "application/json"})
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def sh(self, command, timeout=120):
        """Runs a shell command in the guest; returns (exit_code, stdout)."""
        exec_id = "guest-test-%d-%d" % (os.getpid(), time.monotonic_ns())
        status, body = self.call("PUT", "/v1/execs/" + exec_id, {"command": command})
        assert status == 201, (status, body)
        deadline = time.monotonic() + timeout
        while True:
            status, body = self.call("GET", "/v1/execs/%s?wait_ms=10000" % exec_id)
            obj = json.loads(body)
            if obj["state"] == "exited":
                break
            assert time.monotonic() < deadline, "exec did not exit: %r" % obj
        status, out = self.call("GET", "/v1/execs/%s/stdout" % exec_id)
        assert status == 200, (status, out)
        self.call("POST", "/v1/execs/%s/ack" % exec_id)
        return obj["exit_code"], out.decode()


class SuiteRun:
    """One run of agentd-conformance: exit status, closing counts, the
    verdict of every check by "area: name" as printed, and as written to
    the JUnit file."""

    LINE = re.compile(r"^(PASS|FAIL|SKIP)  (.+?) \((\d+) ms\)(?:: (.*))?$")

    def __init__(self, url, token_file, *extra, timeout=900):
        self.args = extra
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="agentd-junit-") as tmp:
            junit = os.path.join(tmp, "junit.xml")
            r = subprocess.run([CONFORMANCE, "--url", url, "--token-file", token_file,
                                "--junit", junit, *extra],
                               capture_output=True, text=True, timeout=timeout,
                               stdin=subprocess.DEVNULL)
            self.junit = parse_junit(junit) if os.path.exists(junit) else None
        self.seconds = time.monotonic() - started
        self.returncode = r.returncode
        self.output = r.stdout + r.stderr
        self.verdicts = {}
        for line in r.stdout.splitlines():
            m = self.LINE.match(line)
            if m:
                self.verdicts[m.group(2)] = (m.group(1), m.group(4) or "")
        m = re.search(r"^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?$", r.stdout, re.M)
        self.counts = (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) if m else None

    def with_verdict(self, verdict):
        return {name: reason for name, (v, reason) in self.verdicts.items() if v == verdict}

    def summary(self):
        if not self.counts:
            return "no closing line"
        return "%d passed, %d failed, %d skipped in %.1f s" % (*self.counts, self.seconds)


# The reuse group's last check: it runs only with --reuse-quarantine, since
# the guest stays quarantined after it.
QUARANTINE_CHECK = ("reuse: a guest the reset cannot clean is quarantined and refuses the next "
                    "start")

def parse_junit(path):
    """{"area: name": "PASS" | "FAIL" | "SKIP"} from a JUnit file."""
    verdicts = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = "%s: %s" % (case.get("classname"), case.get("name"))
        if case.find("failure") is not None:
            verdicts[name] = "FAIL"
        elif case.find("skipped") is not None:
            verdicts[name] = "SKIP"
        else:
            verdicts[name] = "PASS"
    return verdicts


def all_checks():
    r = subprocess.run([CONFORMANCE, "--list"], capture_output=True, text=True, check=True)
    return [line for line in r.stdout.splitlines() if line]


class GuestConformanceCase(unittest.TestCase):
    """Assertions shared by the guest runs."""

    # "area: name" -> why this guest cannot offer what the check needs.
    EXPECTED_SKIPS = {}

    def assertSuitePasses(self, run):
        report = run.summary() + "\n" + run.output
        self.assertIsNotNone(run.counts, report)
        passed, failed, skipped = run.counts
        self.assertEqual(failed, 0, report)
        self.assertEqual(run.returncode, 0, report)
        # Every check of the suite ran and has a verdict: none was left out.
        checks = all_checks()
        self.assertEqual(sorted(run.verdicts), sorted(checks), report)
        self.assertEqual(passed + skipped, len(checks), report)
        self.assertEqual(passed, len(run.with_verdict("PASS")), report)
        # The JUnit file says the same, check by check.
        self.assertEqual(run.junit, {name: v for name, (v, _) in run.verdicts.items()}, report)
        # A skip is allowed only where this guest is known not to offer
        # something, and then it must be a skip. The reuse group is
        # destructive: it runs only where the run names a reset path.
        expected = dict(self.EXPECTED_SKIPS)
        if "--reuse-path" not in run.args:
            expected.update({c: "destructive" for c in checks if c.startswith("reuse: ")})
        elif "--reuse-quarantine" not in run.args:
            expected[QUARANTINE_CHECK] = "leaves the guest quarantined"
        # The upgrade group runs only where the run names an upgrade command.
        if "--upgrade-command" not in run.args:
            expected.update({c: "upgrades the daemon" for c in checks if c.startswith("upgrade: ")})
        self.assertEqual(sorted(run.with_verdict("SKIP")), sorted(expected), report)
        print("\n%s: %s" % (self.id(), run.summary()))
