"""Raw TCP tunnels into the guest (docs/PROTOCOL.md, "Tunnel"), and a local
listener that forwards each accepted connection through its own tunnel
(what ``agentctl forward LOCAL:REMOTE`` does).

    with guest.open_tunnel(8000) as t:
        t.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
        t.shutdown_write()
        answer = t.recv_all(1 << 20)

    with TunnelForwarder(guest, 8000) as fwd:   # 127.0.0.1:fwd.port -> guest 8000
        urllib.request.urlopen("http://127.0.0.1:%d/" % fwd.port)
"""

from __future__ import annotations

import socket
import threading
from typing import TYPE_CHECKING, List, Optional, Tuple

from ._transport import MAX_ERROR_BODY, USER_AGENT, Transport, _Connection, _describe
from .errors import AgentdError, DeadlineExceeded, ProtocolError, TransportError, error_from_body

if TYPE_CHECKING:
    from .client import Client

# The daemon's answer head is a few hundred bytes; a guest cannot make the
# host hold more than this while it waits for the blank line.
MAX_HEAD = 64 << 10
RELAY_CHUNK = 64 << 10


def open_upgrade(t: Transport, target: str) -> Tuple[socket.socket, bytes]:
    """Sends the upgrade request for `target` on a fresh connection and reads the
    answer head. 101: (the socket, bytes the daemon relayed behind the head).
    Anything else raises the daemon's error."""
    conn = _Connection(t.endpoint, t.connect_timeout)
    try:
        conn.connect()
    except socket.timeout as e:
        raise DeadlineExceeded("connect to %s timed out" % t.endpoint.url) from e
    except OSError as e:
        raise TransportError("cannot connect to %s: %s" % (t.endpoint.url, _describe(e))) from e
    sock = conn.sock
    conn.sock = None  # the tunnel owns the socket from here on
    try:
        head = ["GET %s HTTP/1.1" % target, "Host: " + t.endpoint.host_header(),
                "User-Agent: " + USER_AGENT, "Connection: Upgrade", "Upgrade: tcp"]
        if t.token:
            head.append("Authorization: Bearer " + t.token)
        sock.settimeout(t.request_timeout)
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        buf = b""
        while b"\r\n\r\n" not in buf:
            if len(buf) > MAX_HEAD:
                raise ProtocolError("the tunnel answer head is longer than %d bytes" % MAX_HEAD)
            chunk = sock.recv(4096)
            if not chunk:
                raise TransportError("the daemon closed the tunnel before its answer")
            buf += chunk
        raw_head, _, rest = buf.partition(b"\r\n\r\n")
        lines = raw_head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise ProtocolError("the tunnel answer is not HTTP: %r" % lines[0][:200])
        status = int(parts[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if status == 101:
            if headers.get("upgrade", "").lower() != "tcp":
                raise ProtocolError("the tunnel upgraded to %r, not tcp" % headers.get("upgrade"))
            sock.settimeout(None)
            return sock, rest
        length = headers.get("content-length", "")
        want = min(int(length), MAX_ERROR_BODY) if length.isdigit() else MAX_ERROR_BODY
        body = rest[:want]
        while len(body) < want:
            chunk = sock.recv(min(65536, want - len(body)))
            if not chunk:
                break
            body += chunk
        raise error_from_body(status, body)
    except socket.timeout as e:
        sock.close()
        raise DeadlineExceeded("no tunnel answer from %s within %.1f s"
                               % (t.endpoint.url, t.request_timeout)) from e
    except OSError as e:
        sock.close()
        raise TransportError("tunnel connection to %s lost: %s"
                             % (t.endpoint.url, _describe(e))) from e
    except BaseException:
        sock.close()
        raise


class Tunnel:
    """A raw byte stream to a guest TCP port. Blocking; one reader and one
    writer at a time (they may be different threads)."""

    def __init__(self, sock: socket.socket, early: bytes = b"") -> None:
        self.sock = sock
        self._early = early

    def recv(self, size: int = RELAY_CHUNK) -> bytes:
        """Up to `size` bytes; b"" once the guest side closed."""
        if self._early:
            out, self._early = self._early[:size], self._early[size:]
            return out
        try:
            return self.sock.recv(size)
        except OSError as e:
            raise TransportError("tunnel lost: %s" % _describe(e)) from e

    def recv_all(self, limit: int) -> bytes:
        """Everything until the guest side closes; ProtocolError beyond `limit` bytes."""
        parts: List[bytes] = []
        total = 0
        while True:
            chunk = self.recv()
            if not chunk:
                return b"".join(parts)
            total += len(chunk)
            if total > limit:
                raise ProtocolError("the tunnel sent more than %d bytes" % limit,
                                    details={"limit": limit})
            parts.append(chunk)

    def sendall(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError as e:
            raise TransportError("tunnel lost: %s" % _describe(e)) from e

    def shutdown_write(self) -> None:
        """Half-close: the guest side reads end of input; its answer still arrives."""
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def settimeout(self, seconds: Optional[float]) -> None:
        self.sock.settimeout(seconds)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "Tunnel":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class TunnelForwarder:
    """Listens on (`host`, `local_port`; 0 picks one, see ``port``) and relays
    each accepted connection to `guest_port` through its own tunnel. A
    connection whose tunnel cannot be opened is closed (``errors`` keeps the
    latest failures, bounded)."""

    MAX_ERRORS = 16

    def __init__(self, client: "Client", guest_port: int, local_port: int = 0,
                 host: str = "127.0.0.1", backlog: int = 64) -> None:
        self._client = client
        self.guest_port = guest_port
        self.errors: List[AgentdError] = []
        self._listener = socket.create_server((host, local_port), backlog=backlog)
        self.port = self._listener.getsockname()[1]
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._open: List[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, name="agentd-forward", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                local, _ = self._listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._serve, args=(local,), daemon=True).start()

    def _serve(self, local: socket.socket) -> None:
        try:
            tunnel = self._client.open_tunnel(self.guest_port)
        except AgentdError as e:
            with self._lock:
                self.errors = (self.errors + [e])[-self.MAX_ERRORS:]
            local.close()
            return
        with self._lock:
            if self._closed.is_set():
                local.close()
                tunnel.close()
                return
            self._open += [local, tunnel.sock]
        up = threading.Thread(target=_pump_up, args=(local, tunnel), daemon=True)
        up.start()
        try:
            while True:
                data = tunnel.recv()
                if not data:
                    break
                local.sendall(data)
            local.shutdown(socket.SHUT_WR)
        except (OSError, AgentdError):
            pass
        up.join()
        with self._lock:
            for s in (local, tunnel.sock):
                if s in self._open:
                    self._open.remove(s)
        local.close()
        tunnel.close()

    def close(self) -> None:
        """Stops listening and cuts every open relay."""
        self._closed.set()
        self._listener.close()
        with self._lock:
            for s in self._open:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def __enter__(self) -> "TunnelForwarder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _pump_up(local: socket.socket, tunnel: Tunnel) -> None:
    """Local bytes to the guest; the local half-close is passed on."""
    try:
        while True:
            data = local.recv(RELAY_CHUNK)
            if not data:
                break
            tunnel.sendall(data)
    except (OSError, AgentdError):
        pass
    tunnel.shutdown_write()
