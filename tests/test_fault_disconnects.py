"""Clients that vanish at every stage of a request: mid-header, mid-upload
(file and tree), mid-SSE, mid-raw-follow, mid-download (file and tree).
After each burst the daemon holds no more descriptors or threads than
before, no partial file or staging directory is left, and it keeps serving
(a leaked transfer job would starve the 8-thread pool and hang the last
full download)."""

import os
import shutil
import socket
import tempfile
import time
import unittest

from lib.agentd_test import DaemonTestCase
from lib.exec_util import start, wait_exit, wait_until
from lib.fs_helpers import listing, member, tar_bytes, url

ROUNDS = 24  # more than the transfer pool's 8 threads


def open_fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def threads(pid):
    return len(os.listdir("/proc/%d/task" % pid))


class DisconnectTest(DaemonTestCase):
    daemon_flags = ("--ack-ttl-sec", "0")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.dir = tempfile.mkdtemp(prefix="agentd-cut-")
        cls.big = os.path.join(cls.dir, "big.bin")
        with open(cls.big, "wb") as f:
            f.write(os.urandom(32 << 20))
        cls.tree = os.path.join(cls.dir, "tree")
        os.makedirs(cls.tree)
        for i in range(16):
            with open(os.path.join(cls.tree, "f%02d" % i), "wb") as f:
                f.write(os.urandom(2 << 20))

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def setUp(self):
        pid = self.daemon.proc.pid
        self.assertEqual(self.daemon.json("GET", "/v1/health")[0], 200)
        # Warm up the pools, so their threads count in the baseline.
        self.daemon.request("GET", url("/v1/fs/tar", path=self.tree))
        self.fds_before, self.threads_before = open_fds(pid), threads(pid)
        self.listing_before = listing(self.dir)

    def tearDown(self):
        pid = self.daemon.proc.pid
        wait_until(lambda: open_fds(pid) <= self.fds_before, timeout=15,
                   what="descriptors back to %d (now %d)" % (self.fds_before, open_fds(pid)))
        self.assertLessEqual(threads(pid), self.threads_before)
        wait_until(lambda: listing(self.dir) == self.listing_before, timeout=15,
                   what="no partial file or staging directory")
        # Serving still: a full download through the transfer pool.
        status, _, body = self.daemon.request("GET", url("/v1/fs/file", path=self.big))
        self.assertEqual((status, len(body)), (200, 32 << 20))
        status, _, body = self.daemon.request("GET", url("/v1/fs/tar", path=self.tree))
        self.assertEqual(status, 200)
        self.assertGreater(len(body), 32 << 20)

    def connect(self):
        s = socket.create_connection(("127.0.0.1", self.daemon.port))
        s.settimeout(10)
        return s

    def head(self, method, target, extra=""):
        return ("%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n%s\r\n" %
                (method, target, self.daemon.token, extra)).encode()

    def cut_after_response_bytes(self, request, nbytes):
        s = self.connect()
        s.sendall(request)
        got = 0
        while got < nbytes:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += len(chunk)
        s.close()
        return got

    def test_cut_mid_header(self):
        for i in range(ROUNDS):
            s = self.connect()
            s.sendall(self.head("GET", "/v1/health")[:5 + i])
            s.close()

    def test_cut_mid_file_upload(self):
        for i in range(ROUNDS):
            s = self.connect()
            s.sendall(self.head("PUT", url("/v1/fs/file", path=os.path.join(self.dir, "up%d" % i)),
                                "Content-Length: %d\r\n" % (8 << 20)))
            s.sendall(os.urandom(64 * 1024 * (i + 1)))
            s.close()

    def test_cut_mid_tree_upload(self):
        archive = tar_bytes([(member("m%02d" % i), os.urandom(1 << 20)) for i in range(4)])
        target = os.path.join(self.dir, "tree")
        for i in range(ROUNDS):
            s = self.connect()
            s.sendall(self.head("PUT", url("/v1/fs/tar", path=target),
                                "Content-Length: %d\r\n" % len(archive)))
            s.sendall(archive[:len(archive) * (i + 1) // (ROUNDS + 1)])
            s.close()

    def test_cut_mid_file_and_tree_download(self):
        for i in range(ROUNDS):
            got = self.cut_after_response_bytes(
                self.head("GET", url("/v1/fs/file", path=self.big)), 65536 * (i + 1))
            self.assertGreater(got, 0)
            got = self.cut_after_response_bytes(
                self.head("GET", url("/v1/fs/tar", path=self.tree)), 65536 * (i + 1))
            self.assertGreater(got, 0)

    def test_cut_mid_event_stream_and_raw_follow(self):
        d = self.daemon
        start(d, "cut-sse", {"command": "while :; do head -c 65536 /dev/urandom; "
                             "sleep 0.01; done", "timeout_sec": 120})
        try:
            for i in range(ROUNDS):
                self.cut_after_response_bytes(self.head("GET", "/v1/execs/cut-sse/events"),
                                              4096 * (i + 1))
                self.cut_after_response_bytes(
                    self.head("GET", "/v1/execs/cut-sse/stdout?follow=1"), 4096 * (i + 1))
                # Never read at all: the daemon's writes fill the socket.
                s = self.connect()
                s.sendall(self.head("GET", "/v1/execs/cut-sse/events"))
                time.sleep(0.02)
                s.close()
        finally:
            d.json("POST", "/v1/execs/cut-sse/kill", {"signal": "KILL"})
            wait_exit(d, "cut-sse")
            d.json("POST", "/v1/execs/cut-sse/ack")


if __name__ == "__main__":
    unittest.main()
