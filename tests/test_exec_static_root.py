"""The exec engine in an empty root: no /dev, no /etc/passwd, no libc, only
the static daemon and a static busybox. State lives in --state-dir /state."""

import http.client
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

from lib.agentd_test import AGENTD_BIN
from lib.exec_util import wait_until

BUSYBOX = shutil.which("busybox")


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=30):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


@unittest.skipUnless(os.geteuid() == 0 and shutil.which("unshare") and BUSYBOX,
                     "needs root, unshare and busybox")
class EmptyRootExecTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="agentd-emptyroot-exec-")
        os.chmod(cls.root, 0o755)  # an unprivileged child must reach /bin
        os.mkdir(os.path.join(cls.root, "bin"))
        shutil.copy(AGENTD_BIN, os.path.join(cls.root, "agentd"))
        shutil.copy(BUSYBOX, os.path.join(cls.root, "bin", "busybox"))
        for applet in ("sh", "echo", "cat", "id", "wc", "ls", "setsid"):
            os.symlink("busybox", os.path.join(cls.root, "bin", applet))
        cls.sock = os.path.join(cls.root, "agentd.sock")
        cls.proc = subprocess.Popen(
            ["unshare", "--mount", "--pid", "--ipc", "--uts", "--fork", "--kill-child",
             "chroot", cls.root, "/agentd", "--listen", "unix:/agentd.sock",
             "--state-dir", "/state"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
        deadline = time.monotonic() + 10
        while not os.path.exists(cls.sock):
            if cls.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("daemon did not start: %r" % cls.proc.stderr.read())
            time.sleep(0.05)
        status, _ = cls.call("POST", "/v1/bootstrap", {"token": "t"})
        assert status == 200

    @classmethod
    def tearDownClass(cls):
        cls.proc.kill()
        cls.proc.wait(10)
        cls.proc.stderr.close()
        shutil.rmtree(cls.root, ignore_errors=True)

    @classmethod
    def call(cls, method, path, body=None):
        conn = UnixConnection(cls.sock)
        try:
            conn.request(method, path, body=json.dumps(body) if body is not None else None,
                         headers={"Authorization": "Bearer t"})
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def run_exec(self, exec_id, body):
        status, created = self.call("PUT", "/v1/execs/" + exec_id, body)
        self.assertEqual(status, 201, created)
        while True:
            status, obj = self.call("GET", "/v1/execs/%s?wait_ms=10000" % exec_id)
            obj = json.loads(obj)
            if obj["state"] == "exited":
                break
        status, out = self.call("GET", "/v1/execs/%s/stdout" % exec_id)
        return obj, out

    def test_argv_found_by_path_search_and_output_spooled_under_state(self):
        obj, out = self.run_exec("e1", {"argv": ["echo", "hi"]})
        self.assertEqual((obj["exit_code"], out), (0, b"hi\n"))
        self.assertTrue(os.path.isdir(os.path.join(self.root, "state", "execs", "exec-e1")))

    def test_stdin_without_dev_null_reads_as_empty(self):
        self.assertFalse(os.path.exists(os.path.join(self.root, "dev")))
        obj, out = self.run_exec("e2", {"command": "wc -c"})
        self.assertEqual(out.strip(), b"0")

    def test_as_pid_1_the_daemon_adopts_and_reaps_orphans(self):
        with open("/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)) as f:
            daemon = int(f.read().split()[0])  # the daemon: PID 1 of its namespace
        gate = os.path.join(self.root, "gate")
        os.mkfifo(gate)

        def children():
            with open("/proc/%d/task/%d/children" % (daemon, daemon)) as f:
                return f.read().split()

        def child_names():
            names = []
            for pid in children():
                try:
                    with open("/proc/%s/comm" % pid) as f:
                        names.append(f.read().strip())
                except OSError:
                    pass  # ended between the two reads
            return names

        # setsid, a process group leader here, forks and exits: its child,
        # blocked on the gate, is orphaned.
        obj, out = self.run_exec("e5", {"argv": ["setsid", "sh", "-c",
                                                 "exec cat < /gate > /sink 2>&1"]})
        self.assertEqual(obj["exit_code"], 0)
        # Adopted by PID 1. The exec's holder (an agentd), also a child of
        # the daemon, leaves once its exit is recorded, which can be just
        # after the answer: what stays is the orphan alone.
        wait_until(lambda: len(child_names()) == 1 and "agentd" not in child_names(), 30,
                   what="the orphan the only child")
        with open(gate, "w"):
            pass  # the orphan reads end of file and exits
        deadline = time.monotonic() + 30
        while children():
            self.assertLess(time.monotonic(), deadline, "orphan not reaped")
            time.sleep(0.05)

    def test_a_pty_without_dev_ptmx_is_a_spawn_failure(self):
        status, body = self.call("PUT", "/v1/execs/e6", {"argv": ["sh"],
                                                         "pty": {"rows": 24, "cols": 80}})
        obj = json.loads(body)
        self.assertEqual((status, obj["state"], obj["exit_code"]), (201, "exited", 126))
        self.assertIn("pseudo-terminal", obj["error"])

    def test_numeric_user_without_passwd_and_named_user_refused(self):
        obj, out = self.run_exec("e3", {"command": "id -u; id -g; echo $HOME", "user": "1234"})
        self.assertEqual(out.split(), [b"1234", b"1234", b"/"])
        status, body = self.call("PUT", "/v1/execs/e4", {"argv": ["true"], "user": "alice"})
        self.assertEqual((status, json.loads(body)["error"]["code"]), (400, "unknown_user"))


if __name__ == "__main__":
    unittest.main()
