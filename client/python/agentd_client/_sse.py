"""Server-Sent Events decoding (the subset agentd sends: event, data, id, comments)."""

from __future__ import annotations

from typing import List, NamedTuple, Optional

MAX_LINE = 4 << 20  # an event's data line carries at most 128 KiB of output, base64
# Several data lines make one event: a guest cannot make the host hold more.
MAX_EVENT = 4 << 20


class SseEvent(NamedTuple):
    event: str
    data: str
    id: Optional[str]


class SseDecoder:
    """Feed bytes in any split; complete events come out in order."""

    def __init__(self) -> None:
        self._buf = b""
        self._event = ""
        self._data: List[str] = []
        self._id: Optional[str] = None
        self._size = 0

    def feed(self, chunk: bytes) -> List[SseEvent]:
        from .errors import ProtocolError
        self._buf += chunk
        out: List[SseEvent] = []
        while True:
            nl = self._buf.find(b"\n")
            if nl < 0:
                if len(self._buf) > MAX_LINE:
                    raise ProtocolError("event stream line longer than %d bytes" % MAX_LINE)
                return out
            line = self._buf[:nl].rstrip(b"\r").decode("utf-8", "replace")
            self._buf = self._buf[nl + 1:]
            if not line:
                if self._data or self._event:
                    out.append(SseEvent(self._event or "message", "\n".join(self._data),
                                        self._id))
                self._event, self._data, self._id, self._size = "", [], None, 0
                continue
            if line.startswith(":"):
                continue  # a comment (keepalive)
            name, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if name == "event":
                self._event = value
            elif name == "data":
                self._size += len(value) + 1
                if self._size > MAX_EVENT:
                    raise ProtocolError("event stream event longer than %d bytes" % MAX_EVENT)
                self._data.append(value)
            elif name == "id":
                self._id = value
