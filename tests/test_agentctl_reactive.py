"""agentctl exec --tty, watch, ports and forward against a live daemon."""

import json
import os
import pty
import select
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import unittest

from test_agentctl_exec import AGENTCTL, AgentctlTestCase


def read_until(fd, needle, timeout=20):
    """Reads a pty master until `needle` appears; returns everything read."""
    out = b""
    deadline = time.monotonic() + timeout
    while needle not in out:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError("%r not seen in %r" % (needle, out))
        r, _, _ = select.select([fd], [], [], left)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    return out


class TtyTest(AgentctlTestCase):
    def spawn_on_pty(self, *args):
        pid, fd = pty.fork()
        if pid == 0:
            os.execve(AGENTCTL, [AGENTCTL, *args], self.env)
        self.addCleanup(os.close, fd)
        return pid, fd

    def test_exec_tty_runs_an_interactive_shell_with_our_size_and_forwards_input(self):
        pid, fd = self.spawn_on_pty("exec", "--tty", "--", "sh", "-i")
        import fcntl
        import struct
        import termios
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 101, 0, 0))
        # The size the remote shell sees is ours (sent at start; the
        # resize above may land before or after the start, both count).
        os.write(fd, b"stty size\n")
        read_until(fd, b"33 101")
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 120, 0, 0))
        # SIGWINCH -> agentctl's resize request -> the remote terminal: asked
        # again until the new size shows (each ask bound by its answer), not
        # after a fixed sleep a loaded machine can outlast.
        for n in range(100):
            os.write(fd, b"stty size; echo tty-$((6*7+%d))\n" % n)
            out = read_until(fd, b"tty-%d" % (42 + n))
            if b"50 120" in out:
                break
        self.assertIn(b"50 120", out)
        os.write(fd, b"exit 5\n")
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 5)

    def test_exec_tty_passes_ctrl_c_to_the_remote_foreground_job(self):
        pid, fd = self.spawn_on_pty("exec", "--tty", "--", "sh", "-i")
        os.write(fd, b"sleep 100\n")
        time.sleep(1.0)
        os.write(fd, b"\x03")  # raw mode: a byte for the remote terminal
        # The remote shell is back at its prompt long before the sleep's
        # 100 s: the remote terminal's SIGINT ended it, not ours.
        read_until(fd, b"^C")
        os.write(fd, b"echo after-$((1+1))\n")
        read_until(fd, b"after-2")
        os.write(fd, b"exit\n")
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)

    def test_exec_tty_refuses_stdin_from_a_file(self):
        r = self.ctl("exec", "--tty", "--stdin", "-", "--", "true")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"--tty", r.stderr)


class WatchCommandTest(AgentctlTestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="agentd-ctl-watch-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def test_watch_prints_one_line_per_change_and_stops_after_count(self):
        proc = subprocess.Popen([AGENTCTL, "watch", "--count", "2", self.dir],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env)
        time.sleep(1.0)
        open(os.path.join(self.dir, "new.txt"), "w").close()
        os.unlink(os.path.join(self.dir, "new.txt"))
        out, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 0, err)
        self.assertEqual(out.decode().splitlines(), [
            "created  file %s/new.txt" % self.dir, "removed  file %s/new.txt" % self.dir])

    def test_watch_json_collects_events_for_a_time(self):
        proc = subprocess.Popen([AGENTCTL, "--json", "watch", "--for", "3", "--recursive",
                                 self.dir], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=self.env)
        time.sleep(1.0)
        os.mkdir(os.path.join(self.dir, "d"))
        out, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 0, err)
        env = json.loads(out)
        self.assertEqual(env["ok"], True)
        self.assertEqual([(e["event"], e["path"], e["type"]) for e in env["result"]["events"]],
                         [("created", os.path.join(self.dir, "d"), "dir")])

    def test_watch_json_without_a_bound_is_a_usage_error(self):
        r = self.ctl("--json", "watch", self.dir)
        self.assertEqual(r.returncode, 2)

    def test_watch_of_a_missing_directory_exits_not_found(self):
        r = self.ctl("watch", os.path.join(self.dir, "missing"))
        self.assertEqual(r.returncode, 66)


class ForwardCommandTest(AgentctlTestCase):
    def guest_server(self):
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(16)
        self.addCleanup(srv.close)

        def serve():
            while True:
                try:
                    c, _ = srv.accept()
                except OSError:
                    return
                with c:
                    data = c.recv(1024)
                    c.sendall(b"guest says: " + data)

        threading.Thread(target=serve, daemon=True).start()
        return srv.getsockname()[1]

    def test_ports_lists_a_guest_server(self):
        port = self.guest_server()
        r, env = self.envelope("ports")
        self.assertEqual(r.returncode, 0)
        self.assertIn({"port": port, "address": "127.0.0.1", "family": "ipv4"},
                      env["result"]["ports"])
        r = self.ctl("ports")
        self.assertIn(b"PORT", r.stdout)
        self.assertIn(str(port).encode(), r.stdout)

    def test_forward_tunnels_each_local_connection_to_the_guest_port(self):
        port = self.guest_server()
        proc = subprocess.Popen([AGENTCTL, "--json", "forward", "0:%d" % port],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env)
        self.addCleanup(proc.kill)
        started = json.loads(proc.stdout.readline())
        self.assertEqual(started["result"]["remote"], port)
        local = int(started["result"]["local"].rsplit(":", 1)[1])
        for i in range(5):
            with socket.create_connection(("127.0.0.1", local), timeout=10) as s:
                s.sendall(b"hello %d" % i)
                got = b""
                while True:
                    chunk = s.recv(1024)
                    if not chunk:
                        break
                    got += chunk
            self.assertEqual(got, b"guest says: hello %d" % i)
        proc.terminate()
        self.assertEqual(proc.wait(10), 0)

    def test_forward_to_a_closed_port_closes_the_local_connection_and_says_why(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
        s.close()
        proc = subprocess.Popen([AGENTCTL, "forward", "0:%d" % closed],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env)
        self.addCleanup(proc.kill)
        line = proc.stdout.readline().decode()
        local = int(line.split()[1].rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", local), timeout=10) as c:
            self.assertEqual(c.recv(1024), b"")
        proc.terminate()
        _, err = proc.communicate(timeout=10)
        self.assertIn(b"port %d" % closed, err)

    def test_forward_usage_errors(self):
        for bad in ("x:1", "1:0", "1:70000", "abc"):
            r = self.ctl("forward", bad)
            self.assertEqual(r.returncode, 2, bad)


if __name__ == "__main__":
    unittest.main()
