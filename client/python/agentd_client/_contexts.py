"""Stateful context calls of Client (docs/PROTOCOL.md, "Contexts")."""

from __future__ import annotations

import secrets
from typing import Any, Dict, List, Mapping, Optional, Union

from ._base import CallsBase, check_id
from ._transport import quote_value
from .types import CodeRunResult, ContextInfo


class ContextCalls(CallsBase):
    def create_context(self, id: str, runtime: str = "python", *, cwd: Optional[str] = None,
                       env: Optional[Mapping[str, Optional[str]]] = None,
                       user: Optional[str] = None, group: Optional[str] = None,
                       scan_changes: Optional[bool] = None, profile: Optional[str] = None,
                       network: Optional[str] = None, result_marker: Optional[str] = None,
                       egress: Optional[Mapping[str, Any]] = None,
                       **limits: Union[int, float, bool, str]) -> ContextInfo:
        """POST /v1/contexts: a persistent interpreter (`runtime` "python" or "ts")
        whose variables and imports last between runs. Idempotent: the same id and options answer the same
        context (another request for the id is ContextIdConflict). Options as for
        run_code, applying to the interpreter (a limit that kills it ends the
        context, ContextGone on the next run; `egress` polices it for the
        context's life, its host names resolved at create and at each reset)."""
        check_id(id)
        body: Dict[str, Any] = {"id": id, "runtime": runtime}
        for name, value in (("cwd", cwd), ("user", user), ("group", group),
                            ("scan_changes", scan_changes), ("profile", profile),
                            ("network", network), ("result_marker", result_marker)):
            if value is not None:
                body[name] = value
        if env is not None:
            body["env"] = dict(env)
        if egress is not None:
            body["egress"] = dict(egress)
        from .client import _limits
        body.update(_limits(limits))
        return ContextInfo.from_json(self._json("POST", "/v1/contexts", body, idempotent=True))

    def run_in_context(self, id: str, code: str, *, timeout_sec: Optional[int] = None,
                       run_id: Optional[str] = None,
                       artifacts_dir: Optional[str] = None,
                       egress: Optional[Mapping[str, Any]] = None) -> CodeRunResult:
        """POST /v1/contexts/{id}/run: `code` in the context's interpreter, answered
        like run_code. Runs in one context are serialized. A run_id (minted when
        not given) makes the call retry-safe: a retry replays the answer and never
        runs the code twice; a run goes on when the connection drops.
        `artifacts_dir` as for run_code. `egress` restates the context's policy
        (another one is InvalidRequest naming both); the answer's `egress`
        counts this run's attempts either way."""
        rid = run_id or "run-" + secrets.token_hex(8)
        body: Dict[str, Any] = {"code": code, "run_id": rid}
        if timeout_sec is not None:
            body["timeout_sec"] = timeout_sec
        if artifacts_dir is not None:
            body["artifacts_dir"] = artifacts_dir
        if egress is not None:
            body["egress"] = dict(egress)
        return CodeRunResult.from_json(self._json(
            "POST", "/v1/contexts/%s/run" % quote_value(id), body, idempotent=True))

    def get_context(self, id: str) -> ContextInfo:
        """GET /v1/contexts/{id}."""
        return ContextInfo.from_json(self._json("GET", "/v1/contexts/" + quote_value(id),
                                                idempotent=True))

    def list_contexts(self) -> List[ContextInfo]:
        """GET /v1/contexts: every context, ended ones with what ended them."""
        doc = self._json("GET", "/v1/contexts", idempotent=True)
        return [ContextInfo.from_json(c) for c in doc.get("contexts") or [] if isinstance(c, dict)]

    def reset_context(self, id: str) -> ContextInfo:
        """POST /v1/contexts/{id}/reset: a fresh interpreter with the same options
        (every variable gone); also brings back an ended context."""
        return ContextInfo.from_json(self._json(
            "POST", "/v1/contexts/%s/reset" % quote_value(id), None, idempotent=False))

    def delete_context(self, id: str) -> ContextInfo:
        """DELETE /v1/contexts/{id}: kills the interpreter and forgets the context."""
        return ContextInfo.from_json(self._json("DELETE", "/v1/contexts/" + quote_value(id),
                                                idempotent=False))
