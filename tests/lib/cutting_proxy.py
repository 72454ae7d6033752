"""A TCP proxy that cuts connections on purpose, for client resilience tests.

Every accepted connection is relayed to the daemon. Per connection, the
proxy may cut (close both sides abruptly) once a budget of daemon-to-client
bytes is used up: `budget()` is called for each new connection and answers
a byte count or None (never cut). `drop_answers` swallows whole answers: the
first N connections forward the request and close as soon as the daemon's
first answer byte arrives, so the daemon acts on a request whose answer the
client never sees.
"""

import socket
import threading


class CuttingProxy:
    def __init__(self, target_port, budget=None, drop_answers=0):
        self.target_port = target_port
        self.budget = budget or (lambda: None)
        self.drop_answers = drop_answers
        self.connections = 0
        self.cuts = 0
        self._lock = threading.Lock()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self.port = self._sock.getsockname()[1]
        self._closed = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def _accept(self):
        while not self._closed:
            try:
                client, _ = self._sock.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
                drop = self.drop_answers > 0
                if drop:
                    self.drop_answers -= 1
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            budget = 0 if drop else self.budget()
            pair = _Pair(self, client, upstream, budget)
            threading.Thread(target=pair.up, daemon=True).start()
            threading.Thread(target=pair.down, daemon=True).start()

    def close(self):
        self._closed = True
        try:
            self._sock.close()
        except OSError:
            pass


class _Pair:
    def __init__(self, proxy, client, upstream, budget):
        self.proxy = proxy
        self.client = client
        self.upstream = upstream
        self.budget = budget
        self._cut = threading.Event()

    def cut(self):
        if self._cut.is_set():
            return
        self._cut.set()
        for s in (self.client, self.upstream):
            # shutdown() first: a close() alone does not end a socket another
            # thread is blocked reading, and the peer would never notice.
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                s.close()
            except OSError:
                pass

    def up(self):
        try:
            while not self._cut.is_set():
                data = self.client.recv(65536)
                if not data:
                    self.upstream.shutdown(socket.SHUT_WR)
                    return
                self.upstream.sendall(data)
        except OSError:
            self.cut()

    def down(self):
        sent = 0
        try:
            while not self._cut.is_set():
                data = self.upstream.recv(65536)
                if not data:
                    self.client.shutdown(socket.SHUT_WR)
                    self.cut()
                    return
                if self.budget is not None and sent + len(data) > self.budget:
                    part = data[:max(0, self.budget - sent)]
                    if part:
                        self.client.sendall(part)
                    with self.proxy._lock:
                        self.proxy.cuts += 1
                    self.cut()
                    return
                self.client.sendall(data)
                sent += len(data)
        except OSError:
            self.cut()
