"""Server-sent events of GET /v1/execs/{id}/events applied to a reader's
cursors, so each output byte is delivered exactly once whatever a resumed
stream repeats."""

from __future__ import annotations

import binascii
import json
import re
from typing import Any, Dict, Optional, Tuple

from ._frames import FRAME_EXIT, FRAME_GAP, FRAME_OUTPUT, STREAMS
from .errors import ProtocolError
from .types import Cursors, ExecInfo, ExitEvent, GapEvent, OutputEvent, StreamEvent


def apply_event(ev: Any, out_next: int, err_next: int
                ) -> Optional[Tuple[Optional[StreamEvent], int, int]]:
    """Applies one SSE event to the cursors: (event to yield or None, cursors)."""
    pos = _parse_event_id(ev.id)
    if ev.event in ("stdout", "stderr"):
        offset, data = _output_data(ev.data)
        return apply_output(ev.event, offset, data, out_next, err_next, pos)
    doc = _json_object(ev.data)
    if ev.event == "gap":
        stream, first, last = doc.get("stream"), doc.get("from"), doc.get("to")
        if stream not in ("stdout", "stderr") or not isinstance(first, int) or \
                not isinstance(last, int):
            raise ProtocolError("bad gap event")
        return apply_gap(stream, first, last, out_next, err_next, pos)
    if ev.event == "exit":
        return apply_exit(doc, out_next, err_next, pos)
    return None  # an event kind this client does not know: ignored


def apply_frame(frame: Tuple[int, int, int, bytes], out_next: int, err_next: int
                ) -> Optional[Tuple[Optional[StreamEvent], int, int]]:
    """Applies one binary frame (see _frames) like apply_event; None for a
    keepalive or a kind this client does not know."""
    kind, stream_byte, offset, payload = frame
    if kind in (FRAME_OUTPUT, FRAME_GAP):
        stream = STREAMS.get(stream_byte)
        if stream is None:
            raise ProtocolError("bad frame stream %d" % stream_byte)
        if kind == FRAME_OUTPUT:
            return apply_output(stream, offset, payload, out_next, err_next)
        return apply_gap(stream, offset, int.from_bytes(payload, "big"), out_next, err_next)
    if kind == FRAME_EXIT:
        return apply_exit(_json_object(payload.decode("utf-8", "replace")), out_next, err_next)
    return None


Pos = Optional[Tuple[int, int]]


def _adopt(pos: Pos, out_next: int, err_next: int) -> Tuple[int, int]:
    """An SSE id is the authoritative position after its event."""
    if pos:
        return max(out_next, pos[0]), max(err_next, pos[1])
    return out_next, err_next


def apply_output(kind: str, offset: int, data: bytes, out_next: int, err_next: int,
                 pos: Pos = None) -> Tuple[Optional[StreamEvent], int, int]:
    nxt = out_next if kind == "stdout" else err_next
    end = offset + len(data)
    fresh = b""
    if offset <= nxt < end:
        # Only bytes past the cursor: exactly once, whatever the daemon repeats.
        fresh = data if nxt == offset else data[nxt - offset:]
        nxt = end
    if kind == "stdout":
        start, out_next = out_next, nxt
    else:
        start, err_next = err_next, nxt
    out_next, err_next = _adopt(pos, out_next, err_next)
    event = OutputEvent(kind, start, fresh, Cursors(out_next, err_next)) if fresh else None
    return event, out_next, err_next


def apply_gap(stream: str, first: int, last: int, out_next: int, err_next: int,
              pos: Pos = None) -> Tuple[Optional[StreamEvent], int, int]:
    nxt = out_next if stream == "stdout" else err_next
    lost_from = max(nxt, first)
    if last > nxt:
        nxt = last
    else:
        lost_from = -1
    if stream == "stdout":
        out_next = nxt
    else:
        err_next = nxt
    out_next, err_next = _adopt(pos, out_next, err_next)
    event: Optional[StreamEvent] = None
    if lost_from >= 0:
        event = GapEvent("gap", stream, lost_from, last, Cursors(out_next, err_next))
    return event, out_next, err_next


def apply_exit(doc: Dict[str, Any], out_next: int, err_next: int,
               pos: Pos = None) -> Tuple[Optional[StreamEvent], int, int]:
    out_next, err_next = _adopt(pos, out_next, err_next)
    return (ExitEvent("exit", ExecInfo.from_json(doc), Cursors(out_next, err_next)),
            out_next, err_next)


def _json_object(text: str) -> Dict[str, Any]:
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise ProtocolError("bad event data: %s" % e) from e
    if not isinstance(doc, dict):
        raise ProtocolError("bad event data")
    return doc


_OUTPUT_HEAD = re.compile(r'\{"offset":(\d{1,19}),"data_b64":"')


def _output_data(text: str) -> Tuple[int, bytes]:
    """(offset, bytes) of an output event's data. The daemon writes it as
    {"offset":N,"data_b64":"..."} (base64 needs no JSON escapes), so that form
    is sliced rather than parsed: a 128 KiB event's JSON parse cost as much as
    its base64 decode. Any other spelling goes through the JSON parser."""
    m = _OUTPUT_HEAD.match(text)
    if m is not None and text.endswith('"}') and text.find('"', m.end()) == len(text) - 2:
        offset, b64 = int(m.group(1)), text[m.end():-2]
    else:
        doc = _json_object(text)
        given_offset, given_b64 = doc.get("offset"), doc.get("data_b64")
        if not isinstance(given_offset, int) or given_offset < 0 or \
                not isinstance(given_b64, str):
            raise ProtocolError("bad output event")
        offset, b64 = given_offset, given_b64
    try:
        return offset, binascii.a2b_base64(b64)
    except (binascii.Error, ValueError) as e:
        raise ProtocolError("bad output event: %s" % e) from e


def _parse_event_id(text: Optional[str]) -> Optional[Tuple[int, int]]:
    if not text:
        return None
    a, sep, b = text.partition(":")
    if not sep or not a.isdigit() or not b.isdigit():
        return None
    return int(a), int(b)
