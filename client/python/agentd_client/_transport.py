"""HTTP/1.1 transport: endpoints, a keep-alive pool, and the retry policy.

The policy mirrors the C++ client (docs/CLIENT.md, "Retry policy"):

- a request whose connection could not be made is retried whatever it is
  (nothing was sent);
- after bytes were sent, only idempotent requests are retried: on a lost
  connection, a deadline, or HTTP 500/502/503/504, with the same method,
  target and body, up to ``max_attempts`` with jittered exponential backoff;
- a request whose body is streamed from an iterator is never retried once
  sent (the iterator cannot be replayed); a FileBody is sent again from its
  start.

Thread-safety: a Transport may be used from many threads at once; every
request takes its own connection from the pool.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import select
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import (Callable, Dict, Iterable, Iterator, List, Optional, Tuple, TypeVar, Union,
                    cast)
from urllib.parse import quote

from .errors import (AgentdError, DeadlineExceeded, InvalidRequest, IoError, ProtocolError,
                     ProtocolMismatch, TransportError, error_from_body)

RETRYABLE_STATUSES = (500, 502, 503, 504)
MAX_ERROR_BODY = 1 << 20
# Bodies above this (and every streamed body) wait for "100 Continue".
EXPECT_CONTINUE_BYTES = 1 << 20
# How long to wait for "100 Continue" before sending the body anyway.
CONTINUE_WAIT = 3.0
USER_AGENT = "agentd-client-python/1"
# The protocol this client speaks (docs/PROTOCOL.md, "Compatibility"): a
# daemon of another major is refused; a newer minor (added routes, fields)
# is served.
PROTOCOL_MAJOR = 1
MAX_HEALTH_BODY = 1 << 20



@dataclass(frozen=True)
class FileBody:
    """The first `size` bytes of the open regular file `fd` (not closed here),
    sent with Content-Length by os.sendfile: the bytes never pass through
    Python. Each attempt sends them from offset 0, so it can be retried."""
    fd: int
    size: int
    name: str = ""  # the local file, for errors


Body = Union[None, bytes, FileBody, Iterable[bytes]]


def _streamed(body: Body) -> bool:
    """A body that cannot be sent twice (an iterator)."""
    return body is not None and not isinstance(body, (bytes, bytearray, FileBody))


def quote_value(value: str) -> str:
    """Percent-encodes a query value (every byte but unreserved ones)."""
    return quote(value, safe="", errors="surrogateescape")


@dataclass(frozen=True)
class Endpoint:
    """Where the daemon listens: ``http://HOST:PORT``, ``unix:/path`` or ``vsock:CID:PORT``."""

    kind: str  # "tcp", "unix" or "vsock"
    host: str = ""
    port: int = 0
    path: str = ""
    cid: int = 0
    url: str = ""

    @staticmethod
    def parse(url: str) -> "Endpoint":
        if url.startswith("unix:"):
            path = url[len("unix:"):]
            if path.startswith("//"):
                path = path[2:]
            if not path:
                raise InvalidRequest("unix: URL without a socket path", details={"url": url})
            return Endpoint("unix", path=path, url=url)
        if url.startswith("vsock:"):
            parts = url[len("vsock:"):].split(":")
            if len(parts) != 2 or not all(p.isdigit() for p in parts):
                raise InvalidRequest("vsock URL must be vsock:CID:PORT", details={"url": url})
            return Endpoint("vsock", cid=int(parts[0]), port=int(parts[1]), url=url)
        if url.startswith("http://"):
            rest = url[len("http://"):].rstrip("/")
            if "/" in rest:
                raise InvalidRequest("the URL must not have a path", details={"url": url})
            if rest.startswith("["):
                host, sep, port = rest[1:].partition("]:")
            else:
                host, sep, port = rest.rpartition(":")
            if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise InvalidRequest("the URL must be http://HOST:PORT", details={"url": url})
            return Endpoint("tcp", host=host, port=int(port), url=url)
        raise InvalidRequest("unsupported URL (http://HOST:PORT, unix:/path, vsock:CID:PORT)",
                             details={"url": url})

    def host_header(self) -> str:
        if self.kind == "tcp":
            host = "[%s]" % self.host if ":" in self.host else self.host
            return "%s:%d" % (host, self.port)
        return "localhost"


class _Connection(http.client.HTTPConnection):
    """An HTTPConnection that can also dial a Unix socket or AF_VSOCK."""

    def __init__(self, endpoint: Endpoint, connect_timeout: float) -> None:
        host = endpoint.host if endpoint.kind == "tcp" else "localhost"
        super().__init__(host, endpoint.port or None, timeout=connect_timeout)
        self.endpoint = endpoint

    def connect(self) -> None:
        e = self.endpoint
        if e.kind == "tcp":
            super().connect()
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return
        if e.kind == "unix":
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            target: Union[str, Tuple[int, int]] = e.path
        else:
            family = getattr(socket, "AF_VSOCK", None)
            if family is None:
                raise OSError("AF_VSOCK is not available on this host")
            sock = socket.socket(family, socket.SOCK_STREAM)
            target = (e.cid, e.port)
        sock.settimeout(self.timeout)
        try:
            sock.connect(target)
        except BaseException:
            sock.close()
            raise
        self.sock = sock

    def await_continue(self, wait: float) -> bool:
        """After a head with ``Expect: 100-continue``: True to send the body.

        True when "100 Continue" arrived (getresponse() skips it) or nothing
        arrived within `wait` (a server that ignores Expect); False when
        the daemon answered without the body (a refusal from the head).
        """
        deadline = time.monotonic() + wait
        status = b""
        while len(status) < 12:
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            readable, _, _ = select.select([self.sock], [], [], left)
            if not readable:
                return True
            status = self.sock.recv(12, socket.MSG_PEEK)
            if not status:
                return False  # closed: getresponse() reports it
            if len(status) < 12:
                time.sleep(0.001)
        return status[9:12] == b"100"

    def peer_closed(self) -> bool:
        """True when an idle connection was closed by the daemon (or has stray bytes)."""
        if self.sock is None:
            return True
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)


@dataclass
class Request:
    method: str
    target: str
    body: Body = None
    headers: Dict[str, str] = field(default_factory=dict)
    idempotent: bool = False
    extra_wait: float = 0.0  # seconds a long poll adds to the request deadline
    #: A non-2xx answer whose (status, body) this accepts is the call's
    #: answer: returned, neither retried nor raised (health's 503 document).
    answer_if: Optional[Callable[[int, bytes], bool]] = None


#: What one body read answers: bytes (read_chunk) or a count (read_into).
_Read = TypeVar("_Read", bytes, int)


class Response:
    """A 2xx answer whose body has not been read yet (see Transport.open)."""

    def __init__(self, transport: "Transport", conn: _Connection,
                 resp: http.client.HTTPResponse) -> None:
        self._transport = transport
        self._conn: Optional[_Connection] = conn
        self.raw = resp
        self.status = resp.status
        self.headers = {k.lower(): v for k, v in resp.getheaders()}

    def set_timeout(self, seconds: Optional[float]) -> None:
        if self._conn is not None and self._conn.sock is not None:
            self._conn.sock.settimeout(seconds)

    def read_chunk(self, size: int = 65536) -> bytes:
        """The next bytes of the body; b"" at its (complete) end.

        A body that ends early (a cut connection, a chunked body without its
        final chunk) raises TransportError; a silent peer, DeadlineExceeded.
        """
        return self._body_read(lambda: self.raw.read1(size))

    def read_into(self, buf: memoryview) -> int:
        """The next bytes of the body into `buf` (up to its length, in as few
        reads as the socket allows); 0 at its (complete) end. Errors as read_chunk."""
        return self._body_read(lambda: self.raw.readinto(buf))

    def _body_read(self, read: Callable[[], _Read]) -> _Read:
        """One read of the body by `read`, its failures mapped (see
        read_chunk); an empty result at the body's complete end finishes it."""
        try:
            got = read()
        except socket.timeout as e:
            self.close()
            raise DeadlineExceeded("no answer bytes within the deadline") from e
        except (http.client.HTTPException, OSError) as e:
            self.close()
            raise TransportError("the answer was cut short: %s" % _describe(e)) from e
        if not got:
            # A chunked body that lost its final chunk raised above; a
            # Content-Length body that ended early (http.client answers it
            # as the end) still has length left.
            if self.raw.length:
                self.close()
                raise TransportError("the answer was cut short (%d bytes missing)"
                                     % self.raw.length)
            self.finish()
        return got

    def read_all(self, limit: int) -> bytes:
        parts: List[bytes] = []
        total = 0
        while True:
            chunk = self.read_chunk()
            if not chunk:
                return b"".join(parts)
            total += len(chunk)
            if total > limit:
                self.close()
                raise ProtocolError("the answer is larger than %d bytes" % limit,
                                    details={"limit": limit})
            parts.append(chunk)

    def finish(self) -> None:
        """The body was read whole: the connection may be reused."""
        if self._conn is not None:
            conn, self._conn = self._conn, None
            self._transport._recycle(conn, self.raw)

    def abort(self) -> None:
        """From another thread: ends a read blocked on this answer (it raises
        TransportError); the reader then closes it."""
        conn = self._conn
        sock = conn.sock if conn is not None else None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        """Abandons the body and the connection."""
        if self._conn is not None:
            conn, self._conn = self._conn, None
            conn.close()

    def __enter__(self) -> "Response":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _describe(e: BaseException) -> str:
    text = str(e)
    return "%s%s" % (type(e).__name__, ": " + text if text else "")


class Transport:
    """Sends requests to one endpoint with pooled connections and retries."""

    def __init__(self, url: str, token: Optional[str], *, connect_timeout: float,
                 request_timeout: float, max_attempts: int, backoff_initial: float,
                 backoff_max: float, max_idle_connections: int) -> None:
        self.endpoint = Endpoint.parse(url)
        self.token = token
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self.max_attempts = max(1, max_attempts)
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.max_idle_connections = max_idle_connections
        self._idle: List[_Connection] = []
        self._lock = threading.Lock()
        self._rng = random.Random()
        # Set once a health answer named a protocol this client speaks; a
        # mismatch is remembered (its details) and refuses every later call.
        self._protocol_ok = False
        self._mismatch: Optional[Dict[str, object]] = None

    # -- version negotiation -------------------------------------------------

    def note_health(self, doc: object) -> None:
        """Records the protocol a health answer names (no protocol: nothing learnt)."""
        if not isinstance(doc, dict):
            return
        major = protocol_major(doc.get("protocol"))
        if major is None:
            return
        if major == PROTOCOL_MAJOR:
            self._protocol_ok, self._mismatch = True, None
        else:
            version = doc.get("version")
            self._mismatch = {"daemon_protocol": doc.get("protocol"),
                              "client_protocol": PROTOCOL_MAJOR,
                              "daemon_version": version if isinstance(version, str) else None}

    def ensure_protocol(self) -> None:
        """On first use: reads /v1/health once and refuses a daemon of another
        protocol major with ProtocolMismatch naming both. A health that gives
        no answer (or none this client can read) decides nothing: the call
        goes ahead and the next one asks again."""
        if self._protocol_ok:
            return
        if self._mismatch is None:
            self._negotiate()
        if self._mismatch is not None:
            m = self._mismatch
            raise ProtocolMismatch(
                "the daemon at %s speaks protocol %s%s; this client speaks protocol %d"
                % (self.endpoint.url, m["daemon_protocol"],
                   " (agentd %s)" % m["daemon_version"] if m["daemon_version"] else "",
                   PROTOCOL_MAJOR), details=dict(m))

    def _negotiate(self) -> None:
        try:
            conn, resp, _ = self._attempt(Request("GET", "/v1/health", idempotent=True))
        except _Failed:
            return
        answer = Response(self, conn, resp)
        try:
            body = answer.read_all(MAX_HEALTH_BODY)
        except AgentdError:
            return
        try:
            doc = json.loads(body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return
        self.note_health(doc)

    # -- backoff -------------------------------------------------------------

    def backoff(self, attempt: int) -> float:
        """Seconds to wait before retry `attempt` (1-based): full jitter in [base/2, base]."""
        base = self.backoff_initial
        for _ in range(1, attempt):
            if base >= self.backoff_max:
                break
            base *= 2
        base = min(base, self.backoff_max)
        with self._lock:
            return self._rng.uniform(base / 2, base)

    # -- connections ---------------------------------------------------------

    def _acquire(self) -> _Connection:
        with self._lock:
            while self._idle:
                conn = self._idle.pop()
                if not conn.peer_closed():
                    return conn
                conn.close()
        conn = _Connection(self.endpoint, self.connect_timeout)
        conn.connect()
        return conn

    def _recycle(self, conn: _Connection, resp: http.client.HTTPResponse) -> None:
        will_close = resp.will_close
        resp.close()  # releases the response's file object; the socket stays open
        if will_close or conn.sock is None:
            conn.close()
            return
        with self._lock:
            if len(self._idle) < self.max_idle_connections:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    # -- requests ------------------------------------------------------------

    def _headers(self, req: Request) -> Dict[str, str]:
        h = {"Host": self.endpoint.host_header(), "User-Agent": USER_AGENT}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        if isinstance(req.body, (bytes, bytearray)):
            h["Content-Length"] = str(len(req.body))
        elif isinstance(req.body, FileBody):
            h["Content-Length"] = str(req.body.size)
        elif req.body is not None:
            h["Transfer-Encoding"] = "chunked"
        elif req.method in ("POST", "PUT"):
            h["Content-Length"] = "0"
        if _expects_continue(req):
            h["Expect"] = "100-continue"
        h.update(req.headers)
        return h

    def _attempt(self, req: Request) -> Tuple[_Connection, http.client.HTTPResponse, bool]:
        """One exchange up to the response head. Raises (error, sent) pairs as _Failed."""
        try:
            conn = self._acquire()
        except socket.timeout as e:
            raise _Failed(DeadlineExceeded("connect to %s timed out" % self.endpoint.url),
                          sent=False) from e
        except OSError as e:
            raise _Failed(TransportError("cannot connect to %s: %s" % (
                self.endpoint.url, _describe(e))), sent=False) from e
        streamed = _streamed(req.body)
        try:
            conn.sock.settimeout(self.request_timeout + req.extra_wait)
            conn.putrequest(req.method, req.target, skip_host=True, skip_accept_encoding=True)
            for name, value in self._headers(req).items():
                conn.putheader(name, value)
            conn.endheaders()
            # A large or streamed body waits for "100 Continue", so a refusal
            # the daemon makes from the head alone (507 for a size beyond
            # free space, 413, 401) arrives before any of it is sent, and is
            # not lost to a connection the daemon closes mid-body.
            if _expects_continue(req) and not conn.await_continue(CONTINUE_WAIT):
                resp = conn.getresponse()
                resp.will_close = True  # the body was never sent: do not reuse
                return conn, resp, True
            if streamed:
                source: Iterator[bytes] = iter(cast(Iterable[bytes], req.body))
                while True:
                    try:
                        chunk = next(source)
                    except StopIteration:
                        break
                    except BaseException as e:
                        raise _SourceFailed(e) from e
                    if chunk:
                        conn.send(b"%x\r\n%s\r\n" % (len(chunk), bytes(chunk)))
                conn.send(b"0\r\n\r\n")
            elif isinstance(req.body, FileBody):
                _send_file(conn.sock, req.body)
            elif isinstance(req.body, (bytes, bytearray)) and req.body:
                conn.send(bytes(req.body))
            resp = conn.getresponse()
        except _SourceFailed as e:
            # The body's source failed: the final chunk was never sent, so the
            # daemon sees a cut request and keeps nothing of it.
            conn.close()
            raise e.cause from None
        except socket.timeout as e:
            conn.close()
            raise _Failed(DeadlineExceeded("no answer from %s within %.1f s" % (
                self.endpoint.url, self.request_timeout + req.extra_wait)), sent=True) from e
        except (http.client.HTTPException, OSError) as e:
            conn.close()
            raise _Failed(TransportError("connection to %s lost: %s" % (
                self.endpoint.url, _describe(e))), sent=True) from e
        return conn, resp, True

    def open(self, req: Request) -> Response:
        """Sends `req` (with retries) and answers its 2xx response, body unread.

        A non-2xx answer raises the daemon's error as an AgentdError subclass.
        """
        resp, _ = self._run(req, None)
        return resp

    def call(self, req: Request, max_body: int = 64 << 20) -> Tuple[int, Dict[str, str], bytes]:
        """Sends `req` and reads the whole 2xx body: (status, headers, body).

        A body cut short counts as a lost answer: an idempotent request is
        sent again.
        """
        resp, body = self._run(req, max_body)
        assert body is not None
        return resp.status, resp.headers, body

    def _run(self, req: Request, max_body: Optional[int]) -> Tuple[Response, Optional[bytes]]:
        if not self._protocol_ok and not req.target.startswith("/v1/health"):
            self.ensure_protocol()
        last: Optional[AgentdError] = None
        streamed = _streamed(req.body)
        for attempt in range(1, self.max_attempts + 1):
            if attempt > 1:
                time.sleep(self.backoff(attempt - 1))
            may_retry = attempt < self.max_attempts
            try:
                conn, resp, _ = self._attempt(req)
            except _Failed as f:
                last = f.error
                if may_retry and (not f.sent or (req.idempotent and not streamed)):
                    continue
                raise f.error from None
            answer = Response(self, conn, resp)
            if 200 <= resp.status < 300:
                if max_body is None:
                    return answer, None
                try:
                    return answer, answer.read_all(max_body)
                except (TransportError, DeadlineExceeded) as e:
                    last = e
                    if may_retry and req.idempotent and not streamed:
                        continue
                    raise
            try:
                body = answer.read_all(MAX_ERROR_BODY)
            except AgentdError:
                body = b""
            if req.answer_if is not None and req.answer_if(resp.status, body):
                return answer, body
            last = error_from_body(resp.status, body)
            if (may_retry and req.idempotent and not streamed
                    and resp.status in RETRYABLE_STATUSES):
                continue
            raise last
        assert last is not None
        raise last


def protocol_major(value: object) -> Optional[int]:
    """The major of a health `protocol`: 1, or a "1" / "1.2" string; None if unreadable."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        head = value.split(".", 1)[0]
        if head.isdigit():
            return int(head)
    return None


def _expects_continue(req: Request) -> bool:
    if req.body is None:
        return False
    if isinstance(req.body, (bytes, bytearray)):
        return len(req.body) > EXPECT_CONTINUE_BYTES
    if isinstance(req.body, FileBody):
        return req.body.size > EXPECT_CONTINUE_BYTES
    return True


def _send_file(sock: socket.socket, body: FileBody) -> None:
    """Sends body.size bytes of body.fd from offset 0 by sendfile. A file
    shorter than that is an io_error naming it (_SourceFailed: the
    connection is closed, so the daemon sees a cut body and keeps nothing)."""
    offset = 0
    while offset < body.size:
        try:
            n = os.sendfile(sock.fileno(), body.fd, offset, min(body.size - offset, 1 << 30))
        except BlockingIOError:  # a socket with a timeout is non-blocking underneath
            if not select.select([], [sock], [], sock.gettimeout())[1]:
                raise socket.timeout("timed out")
            continue
        if n == 0:
            err = IoError("%s ended at %d bytes of the %d to send" % (
                body.name or "fd %d" % body.fd, offset, body.size), details={"path": body.name})
            raise _SourceFailed(err)
        offset += n


class _SourceFailed(Exception):
    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class _Failed(Exception):
    def __init__(self, error: AgentdError, sent: bool) -> None:
        super().__init__(str(error))
        self.error = error
        self.sent = sent
