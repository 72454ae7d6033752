"""Binary frames of GET /v1/execs/{id}/events (docs/PROTOCOL.md, "Frames"):
the SSE route's events with output as raw bytes, so reading a stream is not
bound by base64 decoding. A frame is a 16-byte big-endian header (kind,
stream, two zero bytes, u32 payload length, u64 offset) and its payload."""

from __future__ import annotations

import struct
from typing import List, Tuple, Union

from .errors import ProtocolError

MEDIA_TYPE = "application/vnd.agentd.frames"
FRAME_OUTPUT, FRAME_GAP, FRAME_EXIT, FRAME_KEEPALIVE = 1, 2, 3, 4
STREAMS = {1: "stdout", 2: "stderr"}
MAX_OUTPUT = 128 << 10  # an output frame's payload, as the SSE route's event
MAX_PAYLOAD = 1 << 20  # any frame's (the exit frame's exec object)

_HEAD = struct.Struct(">BBxxIQ")
HEADER = _HEAD.size

Frame = Tuple[int, int, int, bytes]  # kind, stream, offset, payload


class FrameDecoder:
    """Feed bytes in any split; whole frames come out in order. A length over
    the documented bounds is refused before any of the payload is held."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, chunk: bytes) -> List[Frame]:
        buf = self._buf
        data: Union[bytes, bytearray]
        if buf:
            buf += chunk
            data = buf
        else:
            data = chunk  # most frames are read straight from the chunk, no copy first
        out: List[Frame] = []
        pos, n = 0, len(data)
        with memoryview(data) as view:
            while n - pos >= HEADER:
                kind, stream, length, offset = _HEAD.unpack_from(data, pos)
                _check(kind, length)
                end = pos + HEADER + length
                if end > n:
                    break
                out.append((kind, stream, offset, bytes(view[pos + HEADER:end])))
                pos = end
            rest = bytes(view[pos:]) if data is chunk and pos < n else None
        if data is chunk:
            if rest:
                buf += rest
        else:
            del buf[:pos]
        return out


def _check(kind: int, length: int) -> None:
    limit = MAX_OUTPUT if kind == FRAME_OUTPUT else MAX_PAYLOAD
    if length > limit:
        raise ProtocolError("event frame of %d bytes is over the limit of %d" % (length, limit),
                            details={"length": length, "limit": limit})
    if kind == FRAME_GAP and length != 8:
        raise ProtocolError("bad gap frame (%d bytes)" % length)
