"""Server-sent events of GET /v1/execs/{id}/events applied to a reader's
cursors, so each output byte is delivered exactly once whatever a resumed
stream repeats."""

from __future__ import annotations

import binascii
import json
import re
from typing import Any, Dict, Optional, Tuple

from .errors import ProtocolError
from .types import Cursors, ExecInfo, ExitEvent, GapEvent, OutputEvent, StreamEvent


def apply_event(ev: Any, out_next: int, err_next: int
                ) -> Optional[Tuple[Optional[StreamEvent], int, int]]:
    """Applies one SSE event to the cursors: (event to yield or None, cursors)."""
    event: Optional[StreamEvent] = None
    pos = _parse_event_id(ev.id)
    if ev.event in ("stdout", "stderr"):
        offset, data = _output_data(ev.data)
        nxt = out_next if ev.event == "stdout" else err_next
        end = offset + len(data)
        fresh = b""
        if offset <= nxt < end:
            # Only bytes past the cursor: exactly once, whatever the daemon repeats.
            fresh = data[nxt - offset:]
            nxt = end
        if ev.event == "stdout":
            start, out_next = out_next, nxt
        else:
            start, err_next = err_next, nxt
        if pos:
            out_next, err_next = max(out_next, pos[0]), max(err_next, pos[1])
        if fresh:
            event = OutputEvent(ev.event, start, fresh, Cursors(out_next, err_next))
        return event, out_next, err_next
    doc = _json_object(ev.data)
    if ev.event == "gap":
        stream, first, last = doc.get("stream"), doc.get("from"), doc.get("to")
        if stream not in ("stdout", "stderr") or not isinstance(first, int) or \
                not isinstance(last, int):
            raise ProtocolError("bad gap event")
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
        if pos:
            out_next, err_next = max(out_next, pos[0]), max(err_next, pos[1])
        if lost_from >= 0:
            event = GapEvent("gap", stream, lost_from, last, Cursors(out_next, err_next))
        return event, out_next, err_next
    if ev.event == "exit":
        if pos:
            out_next, err_next = max(out_next, pos[0]), max(err_next, pos[1])
        return (ExitEvent("exit", ExecInfo.from_json(doc), Cursors(out_next, err_next)),
                out_next, err_next)
    return None  # an event kind this client does not know: ignored


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
