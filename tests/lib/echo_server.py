"""A host TCP echo server standing in for a guest port (the daemon runs on
this host), and a port nothing listens on: for the tunnel tests."""

import socket
import socketserver
import threading


class EchoServer(socketserver.ThreadingTCPServer):
    """Echoes every byte; on the client's half-close, answers "bye" and closes."""
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's default backlog is 5: with 64 tunnels connecting at
    # once the kernel dropped SYNs, and a connect retried after 1, 3, 7 and
    # 15 s outlasted the test's 10 s socket timeout on a loaded machine.
    request_queue_size = 128

    def __init__(self):
        super().__init__(("127.0.0.1", 0), EchoHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def port(self):
        return self.server_address[1]


class EchoHandler(socketserver.BaseRequestHandler):
    def handle(self):
        while True:
            data = self.request.recv(65536)
            if not data:
                self.request.sendall(b"bye")
                return
            self.request.sendall(data)


def free_port():
    """A loopback port nothing listens on (bound, then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
