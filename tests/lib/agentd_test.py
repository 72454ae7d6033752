"""Test support: start the real agentd binary and talk to it over real sockets.

Every integration test under tests/ uses this module. A Daemon runs the
binary named by $AGENTD_BIN (set by CTest) on an ephemeral port with its own
state directory, waits for its "ready" log line, and stops it with SIGTERM,
checking that it exits 0. Helpers speak HTTP with http.client (keep-alive)
or with raw sockets for the tests that need to misbehave on the wire.
"""

import base64
import http.client
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

AGENTD_BIN = os.environ.get(
    "AGENTD_BIN",
    os.path.join(os.path.dirname(__file__), "..", "..", "build", "daemon", "agentd"))


def _own_cgroup2_dir():
    """The cgroup2 directory this test process is in, and so every daemon it
    starts (their tenant and egress groups are made below it), or None."""
    try:
        mount = None
        with open("/proc/self/mountinfo") as f:
            for line in f:
                fields = line.split()
                if fields[fields.index("-") + 1] == "cgroup2":
                    mount = fields[4]
                    break
        with open("/proc/self/cgroup") as f:
            own = next((l[3:].strip() for l in f if l.startswith("0::")), None)
    except OSError:
        return None
    if mount is None or own is None:
        return None
    return os.path.join(mount, own.lstrip("/"))


def remove_dead_daemon_cgroups(pid):
    """Removes the empty "agentd-tenant-<pid>" and "agentd-egress-<pid>" trees
    of a daemon that no longer runs. A daemon stopped with SIGTERM removes
    its own; one killed with SIGKILL leaves them for a successor on its state
    directory, and a test that deletes that directory has none. Left, they
    pile up by the thousand on a machine that runs the suite again and again,
    and every later daemon start walks them. Groups that still hold a process
    are kept (rmdir refuses them)."""
    parent = _own_cgroup2_dir()
    if parent is None:
        return
    for kind in ("tenant", "egress"):
        base = os.path.join(parent, "agentd-%s-%d" % (kind, pid))
        for dirpath, _dirs, _files in os.walk(base, topdown=False):
            try:
                os.rmdir(dirpath)
            except OSError:
                pass


def end_orphaned_holders(state_dir):
    """SIGKILLs the exec holders a killed daemon left on `state_dir`, and the
    commands they hold. A holder outlives its daemon to hand the exec to the
    next one on the same state directory (docs/OPERATIONS.md, "Surviving a
    crash"); a test that deletes that directory has no next one, and the
    holder would wait for it for ever (its command's exit status kept as a
    zombie, its cgroups kept populated). A holder is a clone of the daemon:
    its command line is the daemon's, --state-dir included."""
    marker = b"\0--state-dir\0" + os.fsencode(state_dir) + b"\0"
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % name, "rb") as f:
                if marker not in f.read():
                    continue
            with open("/proc/%s/task/%s/children" % (name, name)) as f:
                children = [int(c) for c in f.read().split()]
        except OSError:
            continue
        for child in children:  # each command leads its own process group
            for kill in (os.killpg, os.kill):
                try:
                    kill(child, signal.SIGKILL)
                except OSError:
                    pass
        try:
            os.kill(int(name), signal.SIGKILL)
        except OSError:
            pass


class DaemonDied(ConnectionError):
    """A request's connection failed because the daemon ended unasked: still
    a ConnectionError (callers that expect one keep working), with the exit
    status and the daemon's last log lines in its message."""


class RequestTimedOut(TimeoutError):
    """A request the daemon did not answer in time: still a TimeoutError,
    with the daemon's state and last log lines in its message."""


class Daemon:
    """A running agentd. Use as a context manager or call stop()."""

    def __init__(self, *flags, token="test-token", bootstrap=True, env=None,
                 state_dir=None, listen_tcp=True, log_level="info", wrapper=(), binary=None):
        self.tmp = tempfile.mkdtemp(prefix="agentd-test-")
        self.state_dir = state_dir or os.path.join(self.tmp, "state")
        self.token = token
        self.flags = list(flags)
        self.env = env
        self.listen_tcp = listen_tcp
        self.log_level = log_level
        self.wrapper = list(wrapper)  # e.g. ["unshare", "--pid", "--fork"]: runs the daemon under it
        self.binary = binary or AGENTD_BIN  # another path: a copy an upgrade test replaces
        self.proc = None
        self._killed = None  # the process kill() ended, if the current one
        self.started_pids = []  # each start's daemon, for their cgroups at close()
        self.port = None
        self.log_lines = []
        self._log_lock = threading.Lock()
        self._ready = threading.Event()
        self.start()
        if bootstrap and token is not None:
            status, body = self.json("POST", "/v1/bootstrap", {"token": token}, auth=False)
            assert status == 200, (status, body)

    # -- lifecycle ---------------------------------------------------------

    def start(self):
        args = self.wrapper + [self.binary, "--state-dir", self.state_dir,
                               "--log-level", self.log_level]
        if self.listen_tcp:
            args += ["--listen", "127.0.0.1:0"]
        args += self.flags
        self._ready.clear()
        self.port = None
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=self.env)
        if not self.wrapper:  # under a wrapper, the daemon's pid is not proc.pid
            self.started_pids.append(self.proc.pid)
        self._log_thread = threading.Thread(target=self._read_logs, args=(self.proc,),
                                            daemon=True)
        self._log_thread.start()
        # Bound by what happened: "ready", or the daemon's end (its stderr
        # closes and the log thread returns). The cap only stops a hung
        # start from hanging the suite; a loaded sanitizer run can take
        # seconds to get there.
        deadline = time.monotonic() + 120
        while not self._ready.wait(0.05):
            if not self._log_thread.is_alive() or time.monotonic() > deadline:
                ended = self.proc.poll()
                self.kill()
                raise RuntimeError("agentd did not become ready (%s):\n%s" % (
                    "exit status %s" % ended if ended is not None else "still starting after 120 s",
                    "\n".join(self.logs()[-60:])))

    def _read_logs(self, proc):
        for raw in proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with self._log_lock:
                self.log_lines.append(line)
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("msg") == "listening" and "port" in entry and self.port is None:
                self.port = entry["port"]
            if entry.get("msg") == "ready":
                self._ready.set()

    def logs(self):
        with self._log_lock:
            return list(self.log_lines)

    def wait_log(self, text, cap=60):
        """Waits until the log reader has read a line containing `text`, for a
        line the daemon wrote before something the test already saw (an
        answer): the reader thread may still be behind the pipe. Bound by the
        line, or by the daemon's end (no more lines can come); the cap only
        stops a missing line from hanging the suite. Returns the line."""
        deadline = time.monotonic() + cap
        while True:
            line = next((l for l in self.logs() if text in l), None)
            if line is not None:
                return line
            if not self._log_thread.is_alive() or time.monotonic() > deadline:
                raise AssertionError("no log line with %r; the last ones:\n%s"
                                     % (text, "\n".join(self.logs()[-30:])))
            time.sleep(0.01)

    def stop(self, timeout=10):
        """SIGTERM and wait; returns the exit status."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def kill(self):
        """SIGKILL, as a crash would."""
        self._killed = self.proc
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._release_pipes()

    def _release_pipes(self):
        if self.proc and self.proc.poll() is not None:
            self._log_thread.join(5)
            for pipe in (self.proc.stdout, self.proc.stderr):
                if pipe and not pipe.closed and not self._log_thread.is_alive():
                    pipe.close()

    def restart(self):
        self.kill()
        self.start()

    def close(self):
        try:
            self.stop()
        finally:
            self.kill()
            end_orphaned_holders(self.state_dir)
            shutil.rmtree(self.tmp, ignore_errors=True)
            for pid in self.started_pids:
                remove_dead_daemon_cgroups(pid)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- HTTP --------------------------------------------------------------

    def connection(self, timeout=30):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def headers(self, auth=True, extra=None):
        h = {}
        if auth and self.token is not None:
            h["Authorization"] = "Bearer " + self.token
        if extra:
            h.update(extra)
        return h

    def request(self, method, path, body=None, auth=True, headers=None, conn=None, timeout=30):
        """Returns (status, headers dict with lower-case names, body bytes)."""
        own = conn is None
        conn = conn or self.connection(timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body).encode()
            conn.request(method, path, body=body, headers=self.headers(auth, headers))
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
        except ConnectionError as e:
            self._raise_if_died(e)
            raise
        except TimeoutError as e:
            raise RequestTimedOut("%s %s: no answer within the client's timeout (%s); agentd %s; its last log lines:\n%s"
                                  % (method, path, e, "running" if self.proc.poll() is None else
                                     "ended with status %s" % self.proc.returncode,
                                     "\n".join(self.logs()[-60:]))) from e
        finally:
            if own:
                conn.close()

    def _raise_if_died(self, error):
        """A request cut by the daemon's unexpected end says so, with its
        exit status and last log lines, instead of a bare connection error.
        A daemon this test killed is not unexpected: kill() reaps it first,
        and its process is the one still recorded."""
        proc = self.proc
        if proc is None or self._killed is proc:
            return
        try:
            status = proc.wait(0.5)  # a dead daemon is reaped at once; a live one not waited on long
        except subprocess.TimeoutExpired:
            return
        raise DaemonDied("agentd (pid %d) ended with status %s during a request (%s); its last log lines:\n%s"
                           % (proc.pid, status, error, "\n".join(self.logs()[-60:]))) from error

    def json(self, method, path, body=None, **kw):
        """Returns (status, parsed JSON body)."""
        status, _, data = self.request(method, path, body, **kw)
        return status, (json.loads(data) if data else None)

    def raw(self, data, read_timeout=5):
        """Sends raw bytes on a fresh connection; returns all bytes read until close or timeout."""
        s = socket.create_connection(("127.0.0.1", self.port))
        s.settimeout(read_timeout)
        try:
            s.sendall(data)
            return read_until_close(s)
        finally:
            s.close()


def health_over_unix_socket(sock_path, proc, timeout=10):
    """Waits for a daemon started as `proc` to create `sock_path`, then asks
    it for /v1/health over that socket; returns (status, body). Fails when
    the process ends or no socket appears within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(sock_path):
        if proc.poll() is not None:
            err = proc.stderr.read() if proc.stderr else b""
            raise AssertionError("the daemon exited with %s: %r" % (proc.returncode, err))
        if time.monotonic() > deadline:
            raise AssertionError("no socket appeared at " + sock_path)
        time.sleep(0.05)
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(sock_path)
        s.settimeout(5)
        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        (status, _, body), = parse_raw_responses(read_until_close(s))
    finally:
        s.close()
    return status, body


def read_until_close(sock):
    chunks = []
    while True:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            break
        except ConnectionResetError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def parse_raw_responses(data):
    """Splits raw HTTP/1.1 bytes into (status, headers, body) tuples (Content-Length bodies)."""
    out = []
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if not sep:
            break
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        n = int(headers.get("content-length", "0"))
        out.append((status, headers, rest[:n]))
        data = rest[n:]
    return out


def error_code(body):
    # (An exec object has an "error" member too: null or a sentence.)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return body["error"].get("code")
    return None


def b64(data):
    return base64.b64encode(data).decode()


def unb64(text):
    return base64.b64decode(text)


def new_token():
    return secrets.token_hex(16)


class DaemonTestCase(unittest.TestCase):
    """One bootstrapped daemon per test class (override daemon_flags)."""

    daemon_flags = ()

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon(*cls.daemon_flags)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.close()

    def assertError(self, status, body, want_status, want_code):
        self.assertEqual((status, error_code(body)), (want_status, want_code), body)
