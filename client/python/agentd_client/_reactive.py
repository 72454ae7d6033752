"""Watch and tunnel calls of Client (docs/PROTOCOL.md, "Watch" and "Ports")."""

from __future__ import annotations

import threading
import time
from typing import Callable, Generator, Optional

from ._base import CallsBase, retryable_stream_failure
from ._sse import SseDecoder
from ._transport import Request, Response, quote_value
from .errors import AgentdError, DeadlineExceeded, InvalidRequest, TransportError
from .tunnel import Tunnel, open_upgrade
from .types import FsWatchEvent

# The daemon sends a keepalive at least every 15 s.
WATCH_SILENCE_LIMIT = 45.0


class WatchStop:
    """Ends a watch from another thread: the iterator stops at once, even
    while it waits for the next event (its connection is shut down)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.stopped = False
        self._resp: Optional[Response] = None

    def stop(self) -> None:
        with self._lock:
            self.stopped = True
            if self._resp is not None:
                self._resp.abort()

    def _attach(self, resp: Optional[Response]) -> bool:
        """Registers the watch's current answer; False when already stopped."""
        with self._lock:
            self._resp = resp
            return not self.stopped


class ReactiveCalls(CallsBase):
    """File system watches and raw TCP tunnels into the guest."""

    max_stream_reconnects: int

    def watch(self, path: str, *, recursive: bool = False,
              on_ready: Optional[Callable[[], None]] = None,
              stop: Optional[WatchStop] = None) -> Generator[FsWatchEvent, None, None]:
        """GET /v1/fs/watch as an iterator of FsWatchEvent, in order, until the
        caller stops iterating or the watched directory goes away (its
        `removed` is the last event).

        `on_ready()` runs once the daemon has placed the watch (changes made
        after it are reported), and again after each reconnect. Events cannot
        be replayed: after a lost connection the client places a new watch and
        first yields an `overflow` with reason "reconnected", so the caller
        rescans. ``max_stream_reconnects`` bounds reconnects in a row that
        deliver nothing. `stop` (a WatchStop) ends it from another thread."""
        target = "/v1/fs/watch?path=%s&recursive=%d" % (quote_value(path), 1 if recursive else 0)
        quiet = 0
        watched_before = False
        stop = stop or WatchStop()
        while not stop.stopped:
            req = Request("GET", target, idempotent=True,
                          headers={"Accept": "text/event-stream"})
            failure: AgentdError
            try:
                resp = self._t.open(req)
            except AgentdError as e:
                if not retryable_stream_failure(e):
                    raise
                failure = e
            else:
                try:
                    if not stop._attach(resp):
                        return
                    resp.set_timeout(WATCH_SILENCE_LIMIT)
                    if watched_before:
                        yield FsWatchEvent("overflow", reason="reconnected")
                    watched_before = True
                    if on_ready is not None:
                        on_ready()
                    decoder = SseDecoder()
                    while True:
                        try:
                            chunk = resp.read_chunk()
                        except (TransportError, DeadlineExceeded) as e:
                            if stop.stopped:
                                return
                            failure = e
                            break
                        if not chunk:
                            return  # the watched directory went away
                        for ev in decoder.feed(chunk):
                            quiet = 0
                            yield FsWatchEvent.from_sse(ev.event, ev.data, ev.id)
                finally:
                    stop._attach(None)
                    resp.close()  # a watch is never reused for another request
            quiet += 1
            if quiet > self.max_stream_reconnects:
                failure.details.setdefault("reconnects", quiet - 1)
                raise failure
            time.sleep(self._t.backoff(quiet))

    def open_tunnel(self, port: int) -> Tunnel:
        """GET /v1/ports/{port}/connect: a raw byte stream to 127.0.0.1:port in
        the guest, through the daemon's port and its token. Nothing listening
        there is PortUnreachable before anything is relayed. Retried like an
        idempotent call (nothing is relayed before the daemon's 101)."""
        if not isinstance(port, int) or not 1 <= port <= 65535:
            raise InvalidRequest("a port is 1 to 65535", details={"field": "port", "port": port})
        self._t.ensure_protocol()
        last: Optional[AgentdError] = None
        for attempt in range(1, self._t.max_attempts + 1):
            if attempt > 1:
                time.sleep(self._t.backoff(attempt - 1))
            try:
                sock, early = open_upgrade(self._t, "/v1/ports/%d/connect" % port)
                return Tunnel(sock, early)
            except (TransportError, DeadlineExceeded) as e:
                last = e  # no answer: nothing was relayed, so try again
        assert last is not None
        raise last
