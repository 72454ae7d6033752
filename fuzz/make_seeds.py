#!/usr/bin/env python3
"""Writes the seed corpora under fuzz/corpus/<target>/ (run once; the seeds
are committed). Each seed is a small valid or nearly valid input, so the
fuzzers start from the shapes the daemon and client really see."""

import io
import json
import os
import struct
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = "/tmp/agentd-fuzz-http-root"  # fuzz_http_request's --fs-root
AUTH = "Authorization: Bearer fuzz-token\r\n"


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def tar(members, mode="w"):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode, format=tarfile.PAX_FORMAT) as t:
        for name, kind, data, link in members:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.linkname = link
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def http():
    body = json.dumps({"token": "fuzz-token"})
    seeds = {
        "health": "GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n",
        "head": "HEAD /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "bootstrap": "POST /v1/bootstrap HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" %
                     (len(body), body),
        "chunked": "POST /v1/bootstrap HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "%x\r\n%s\r\n0\r\n\r\n" % (len(body), body),
        "pipelined": "GET /v1/health HTTP/1.1\r\n\r\nGET /v1/nope HTTP/1.1\r\n" + AUTH +
                     "\r\nDELETE /v1/health HTTP/1.1\r\n\r\n",
        "unauthorized": "GET /v1/execs HTTP/1.1\r\nAuthorization: Bearer wrong\r\n\r\n",
        "write": "PUT /v1/fs/file?path=%s/a&mode=0600 HTTP/1.1\r\n%sContent-Length: 5\r\n\r\nhello"
                 % (ROOT, AUTH),
        "write_continue": "PUT /v1/fs/file?path=%s/b&parents=1 HTTP/1.1\r\n%sExpect: 100-continue"
                          "\r\nContent-Length: 3\r\n\r\nabc" % (ROOT, AUTH),
        "read_lines": "GET /v1/fs/file?path=%s/a&start_line=1&end_line=2 HTTP/1.1\r\n%s\r\n" %
                      (ROOT, AUTH),
        "read_range": "GET /v1/fs/file?path=%s/a HTTP/1.1\r\n%sRange: bytes=1-3\r\n\r\n" %
                      (ROOT, AUTH),
        "stat": "GET /v1/fs/stat?path=%s/a&follow=1 HTTP/1.1\r\n%s\r\n" % (ROOT, AUTH),
        "list": "GET /v1/fs/list?path=%s HTTP/1.1\r\n%s\r\n" % (ROOT, AUTH),
        "realpath": "GET /v1/fs/realpath?path=%s/../x HTTP/1.1\r\n%s\r\n" % (ROOT, AUTH),
        "escape": "GET /v1/fs/file?path=%s/%%2e%%2e/etc/passwd HTTP/1.1\r\n%s\r\n" % (ROOT, AUTH),
        "mkdir": 'POST /v1/fs/mkdir HTTP/1.1\r\n%sContent-Length: 41\r\n\r\n{"path": "%s/d"}'
                 % (AUTH, ROOT),
        "delete": "DELETE /v1/fs?path=%s/d&recursive=1 HTTP/1.1\r\n%s\r\n" % (ROOT, AUTH),
        "tar_down": "GET /v1/fs/tar?path=%s&compression=gzip HTTP/1.1\r\n%s\r\n" % (ROOT, AUTH),
    }
    archive = tar([("t/f", tarfile.REGTYPE, b"data", "")])
    seeds["tar_up"] = ("PUT /v1/fs/tar?path=%s HTTP/1.1\r\n%sContent-Length: %d\r\n\r\n" %
                       (ROOT, AUTH, len(archive))).encode() + archive
    for name, data in seeds.items():
        write("fuzz_http_request", name, data)


def json_seeds():
    docs = {
        "start_argv": {"argv": ["python3", "-c", "print(1)"], "env": {"A": "1", "B": None},
                       "cwd": "/tmp", "timeout_sec": 30, "kill_grace_sec": 5},
        "start_cmd": {"command": "make && ./test", "shell": "/bin/sh", "user": "nobody",
                      "group": "0", "stdin_b64": "aGk=", "pty": {"rows": 24, "cols": 80,
                                                               "term": "xterm"}},
        "bootstrap": {"token": "t", "env": {"K": "V"}},
        "kill": {"signal": "RTMIN+3", "grace_sec": 1},
        "resize": {"rows": 1, "cols": 10000},
        "mkdir": {"path": "/a/b", "parents": True, "mode": "0755"},
        "rename": {"from": "/a", "to": "/b", "overwrite": False},
        "exec_info": {"id": "x", "state": "exited", "pid": 1, "exit_code": 0, "signal": None,
                      "timed_out": False, "killed_by": None, "started_at":
                      "2026-11-29T07:12:54.123Z", "ended_at": None, "duration_ms": 3,
                      "stdout_bytes": 2, "stderr_bytes": 0, "stdout_retained_from": 0,
                      "stderr_retained_from": 0, "acked": False, "error": None,
                      "stdout": {"from": 0, "next": 2, "data_b64": "aGk=",
                                 "gap": {"from": 0, "to": 0}}},
        "health": {"status": "ok", "version": "0.1.0", "protocol": 1, "bootstrapped": True,
                   "busy": False, "execs": 0, "uptime_ms": 1, "runtimes": ["shell"]},
        "deep": [[[[[[[[[[1]]]]]]]]]],
    }
    for name, doc in docs.items():
        write("fuzz_json_decoders", name, json.dumps(doc))
    write("fuzz_json_decoders", "numbers", '{"timeout_sec": 1e3, "x": -0, "y": 18446744073709551616}')
    write("fuzz_json_decoders", "escapes", '{"argv": ["\\u00e9\\ud83d\\ude00", "a\\u0000b"]}')


def paths():
    for i, p in enumerate(["/", "/srv/root/a/b", "/srv/root/../x", "/a//./b/", "/srv/root/..",
                           "a/b", "../../etc", "./x/./y", "/a/\x00b", "/srv/rootx/y",
                           "x/../../y", "/" + "d/" * 50]):
        write("fuzz_lexical_path", "p%02d" % i, p)


def tars():
    plain = [("dir/", tarfile.DIRTYPE, b"", ""), ("dir/file", tarfile.REGTYPE, b"x" * 100, ""),
             ("dir/link", tarfile.SYMTYPE, b"", "file"), ("dir/hard", tarfile.LNKTYPE, b"",
                                                          "dir/file")]
    write("fuzz_tar_extract", "plain.tar", tar(plain))
    write("fuzz_tar_extract", "plain.tar.gz", tar(plain, "w:gz"))
    write("fuzz_tar_extract", "dotdot.tar", tar([("../escape", tarfile.REGTYPE, b"x", "")]))
    write("fuzz_tar_extract", "abs.tar", tar([("/abs", tarfile.REGTYPE, b"x", "")]))
    write("fuzz_tar_extract", "symlink_then_write.tar",
          tar([("l", tarfile.SYMTYPE, b"", ".."), ("l/f", tarfile.REGTYPE, b"x", "")]))
    write("fuzz_tar_extract", "fifo.tar", tar([("p", tarfile.FIFOTYPE, b"", "")]))


def sse():
    stream = ("event: stdout\ndata: {\"offset\":0,\"data_b64\":\"aGk=\"}\nid: 2:0\n\n"
              ": keepalive\n\nevent: exit\r\ndata: {}\r\nid: 2:0\r\n\r\ndata: a\rdata: b\r\r")
    for i, split in enumerate([0, 7, 40, 200]):
        write("fuzz_sse_decoder", "s%d" % i, bytes([split]) + stream.encode())


def frames():
    def frame(kind, stream, offset, payload):
        return struct.pack(">BBxxIQ", kind, stream, len(payload), offset) + payload

    stream = (frame(1, 1, 0, b"hello ") + frame(1, 2, 0, b"oops\n") + frame(4, 0, 0, b"")
              + frame(2, 1, 6, struct.pack(">Q", 4096)) + frame(9, 0, 0, b"a kind to skip")
              + frame(3, 0, 0, b'{"id":"e1","state":"exited","exit_code":0}'))
    for i, split in enumerate([0, 5, 16, 23, 90]):
        write("fuzz_exec_frames", "f%d" % i, bytes([split]) + stream)
    # Headers a reader must refuse: an output frame over 128 KiB, a frame
    # over 1 MiB, a gap whose payload is not 8 bytes.
    write("fuzz_exec_frames", "long_output", b"\x00" + struct.pack(">BBxxIQ", 1, 1, 131073, 0))
    write("fuzz_exec_frames", "huge", b"\x00" + struct.pack(">BBxxIQ", 3, 0, 0xFFFFFFFF, 0))
    write("fuzz_exec_frames", "bad_gap", b"\x03" + frame(2, 1, 0, b"1234"))


def responses():
    seeds = [
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil close",
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: tcp\r\n\r\nraw",
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 5\r\n\r\n{\"a\":",
    ]
    for i, s in enumerate(seeds):
        write("fuzz_http_response", "r%d" % i, bytes([i * 37 % 256]) + s)


if __name__ == "__main__":
    http()
    json_seeds()
    paths()
    tars()
    sse()
    frames()
    responses()
