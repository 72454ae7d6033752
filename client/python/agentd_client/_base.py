"""What every group of client calls stands on: the transport, JSON calls,
exec id checks and which failures a stream or tree transfer resumes after."""

from __future__ import annotations

import json
import re
from typing import Any, Dict, Optional

from ._transport import Request, Transport
from .errors import AgentdError, InvalidRequest, ProtocolError, RETRYABLE_FOR_STREAMS

_EXEC_ID = re.compile(r"^[A-Za-z0-9._-]{1,128}$")


def check_id(exec_id: str) -> str:
    if not isinstance(exec_id, str) or not _EXEC_ID.match(exec_id):
        raise InvalidRequest("an exec id is 1 to 128 characters of [A-Za-z0-9._-]",
                             details={"field": "id", "id": exec_id})
    return exec_id


def json_body(doc: Any) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode("utf-8")


def retryable_stream_failure(e: AgentdError) -> bool:
    return isinstance(e, RETRYABLE_FOR_STREAMS) or e.status in (500, 502, 503, 504)


class CallsBase:
    """The transport and the JSON round trip shared by the call groups."""

    _t: Transport

    def _json(self, method: str, target: str, body: Any = None, *, idempotent: bool,
              extra_wait: float = 0.0, headers: Optional[Dict[str, str]] = None) -> Any:
        req = Request(method, target, idempotent=idempotent, extra_wait=extra_wait)
        req.headers.update(headers or {})
        if body is not None:
            req.body = json_body(body)
            req.headers["Content-Type"] = "application/json"
        _, _, data = self._t.call(req)
        try:
            return json.loads(data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise ProtocolError("the daemon's answer is not JSON: %s" % e) from e
