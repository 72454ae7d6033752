"""Helpers for the exec integration tests: start, wait, read, and an SSE
client that can cut its connection at any byte and resume by Last-Event-ID."""

import base64
import http.client
import json
import os
import time


def start(d, exec_id, body, expect=(200, 201)):
    status, obj = d.json("PUT", "/v1/execs/" + exec_id, body)
    assert status in expect, (status, obj)
    return status, obj


def wait_exit(d, exec_id, timeout=60):
    """Long-polls until the exec is exited; returns the exec object."""
    deadline = time.monotonic() + timeout
    while True:
        status, obj = d.json("GET", "/v1/execs/%s?wait_ms=10000" % exec_id)
        assert status == 200, (status, obj)
        if obj["state"] == "exited":
            return obj
        assert time.monotonic() < deadline, "exec %s did not exit: %r" % (exec_id, obj)


def read_stream(d, exec_id, stream="stdout", start=0):
    """All retained bytes of a stream, by the raw route."""
    status, headers, data = d.request("GET", "/v1/execs/%s/%s?from=%d" % (exec_id, stream, start))
    assert status == 200, (status, data)
    return data


def run(d, exec_id, body, timeout=60):
    """Starts an exec, waits for it, returns (exec object, stdout, stderr)."""
    start(d, exec_id, body)
    obj = wait_exit(d, exec_id, timeout)
    return obj, read_stream(d, exec_id, "stdout"), read_stream(d, exec_id, "stderr")


def wait_until(predicate, timeout=30, interval=0.05, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(interval)


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for %d" % pid)


def pid_alive(pid):
    """True while /proc/PID exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


class SseEvents:
    """One SSE connection to /v1/execs/ID/events, parsed incrementally.

    events() yields (event, data, id) for every event completed by the bytes
    read so far; cut() drops the connection (an unfinished event is lost,
    exactly as a client that lost its connection would lose it).
    """

    def __init__(self, d, exec_id, last_event_id=None, query="", timeout=60):
        self.conn = http.client.HTTPConnection("127.0.0.1", d.port, timeout=timeout)
        headers = d.headers()
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        self.conn.request("GET", "/v1/execs/%s/events%s" % (exec_id, query), headers=headers)
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.headers = {k.lower(): v for k, v in self.resp.getheaders()}
        self._buf = b""
        self._fields = {}
        self.bytes_read = 0
        self.ended = False

    def read_some(self, limit=65536):
        """Reads up to `limit` bytes; returns the completed events."""
        chunk = self.resp.read1(limit)
        if not chunk:
            self.ended = True
            return []
        self.bytes_read += len(chunk)
        self._buf += chunk
        out = []
        while True:
            nl = self._buf.find(b"\n")
            if nl < 0:
                break
            line = self._buf[:nl].decode()
            self._buf = self._buf[nl + 1:]
            if line == "":
                if "data" in self._fields:
                    out.append((self._fields.get("event", "message"), self._fields["data"],
                                self._fields.get("id")))
                self._fields = {}
            elif line.startswith(":"):
                continue
            else:
                name, _, value = line.partition(":")
                self._fields[name] = value[1:] if value.startswith(" ") else value
        return out

    def cut(self):
        self.conn.close()


def collect_sse(d, exec_id, rng=None, cut_every=None, deadline=120):
    """Reads the whole event stream; with rng and cut_every, cuts the
    connection after a random number of bytes (1..cut_every) each time and
    resumes with Last-Event-ID. Returns (stdout bytes, stderr bytes, exit
    object, gaps, reconnects); asserts every byte arrives exactly once."""
    out = {"stdout": bytearray(), "stderr": bytearray()}
    gaps = []
    last_id = None
    reconnects = 0
    end = time.monotonic() + deadline
    while True:
        assert time.monotonic() < end, "event stream did not finish"
        stream = SseEvents(d, exec_id, last_event_id=last_id)
        assert stream.status == 200, stream.status
        budget = rng.randint(1, cut_every) if rng else None
        while True:
            events = stream.read_some(min(4096, budget - stream.bytes_read) if budget else 65536)
            for event, data, eid in events:
                payload = json.loads(data)
                if event in ("stdout", "stderr"):
                    assert payload["offset"] == len(out[event]), (event, payload["offset"],
                                                                  len(out[event]))
                    out[event] += base64.b64decode(payload["data_b64"])
                elif event == "gap":
                    gaps.append(payload)
                    buf = out[payload["stream"]]
                    assert payload["from"] == len(buf), (payload, len(buf))
                    buf += b"\0" * (payload["to"] - payload["from"])
                elif event == "exit":
                    assert eid == "%d:%d" % (len(out["stdout"]), len(out["stderr"])), eid
                    stream.cut()
                    return bytes(out["stdout"]), bytes(out["stderr"]), payload, gaps, reconnects
                assert eid == "%d:%d" % (len(out["stdout"]), len(out["stderr"])), (eid, event)
                last_id = eid
            if stream.ended:
                break
            if budget is not None and stream.bytes_read >= budget:
                break
        stream.cut()
        reconnects += 1
