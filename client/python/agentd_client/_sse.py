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
        # Unconsumed bytes, and how far into them no newline exists: an
        # output event's line (170 KB of base64) arrives in many reads, and
        # is scanned and copied once, not once per read.
        self._buf = bytearray()
        self._scanned = 0
        self._event = ""
        self._data: List[str] = []
        self._id: Optional[str] = None
        self._size = 0

    def feed(self, chunk: bytes) -> List[SseEvent]:
        from .errors import ProtocolError
        buf = self._buf
        buf += chunk
        out: List[SseEvent] = []
        start = 0
        while True:
            nl = buf.find(b"\n", max(start, self._scanned))
            if nl < 0:
                del buf[:start]
                self._scanned = len(buf)
                if len(buf) > MAX_LINE:
                    raise ProtocolError("event stream line longer than %d bytes" % MAX_LINE)
                return out
            end = nl - 1 if nl > start and buf[nl - 1] == 13 else nl  # a CR before the LF
            line = buf[start:end].decode("utf-8", "replace")
            start = nl + 1
            self._scanned = start
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
