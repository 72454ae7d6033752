"""Result types of the Python client. Each keeps the daemon's whole JSON
object in ``raw``, so members added by a newer daemon stay reachable."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any, Dict, List, NamedTuple, Optional, Tuple, Union

from .errors import ProtocolError


def _opt_str(v: Any) -> Optional[str]:
    return v if isinstance(v, str) else None


def _int(v: Any, default: int = 0) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def _dict(v: Any) -> Dict[str, Any]:
    return dict(v) if isinstance(v, dict) else {}


def _opt_dict(v: Any) -> Optional[Dict[str, Any]]:
    return dict(v) if isinstance(v, dict) else None


def _resolved(policy: Optional[Dict[str, Any]]) -> Dict[str, List[str]]:
    """An egress policy's "resolved": {host name: [addresses]}."""
    r = (policy or {}).get("resolved")
    if not isinstance(r, dict):
        return {}
    return {str(k): [str(a) for a in v] for k, v in r.items() if isinstance(v, list)}


@dataclass
class UnavailableRuntime:
    """A runtime this guest knows and cannot run: `code` is interpreter_not_found,
    not_executable, disabled_by_flag or self_test_failed; `reason` names the
    program and PATH (or how its self-test failed)."""
    runtime: str
    code: str
    reason: str


@dataclass
class RuntimeSelfTest:
    """An interpreter's self-test: a trivial program run once per interpreter
    file (the verdict holds until the file changes). `state` is pending,
    passed or failed; `duration_ms` is None while pending."""
    runtime: str
    program: str
    state: str
    duration_ms: Optional[int] = None


@dataclass
class Health:
    status: str
    version: str
    protocol: int
    bootstrapped: bool
    busy: bool
    execs: int
    uptime_ms: int
    runtimes: List[str]
    #: How long an acked record lingers (the daemon's --ack-ttl-sec).
    ack_ttl_sec: int
    #: The retention caps in force: {"stream_bytes": ..., "total_bytes": ...}.
    retention: Dict[str, int]
    #: The limit mechanism: {"mechanism", "supported", "defaults", "run_timeout_sec"}.
    limits: Dict[str, Any] = field(default_factory=dict)
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)
    #: Every known runtime this guest cannot run, and why.
    runtimes_unavailable: List[UnavailableRuntime] = field(default_factory=list)
    #: Upgrades in place since the daemon first started, and failed ones
    #: (docs/OPERATIONS.md, "Upgrade").
    upgrades: int = 0
    upgrade_failures: int = 0
    #: Why the daemon cannot serve (a 503 health: draining, resetting,
    #: quarantined, state_dir_unwritable); empty while status is "ok".
    reason: str = ""
    #: With state_dir_unwritable: the errno name of the failed write.
    errno: str = ""
    #: How a reset returns each reset path: {"path", "mode": "overlay" or
    #: "restore", "overlay_unavailable": why not overlay (with restore)}.
    reset_paths: List[Dict[str, str]] = field(default_factory=list)
    #: How a reset ends the tenant's processes: {"mode": "cgroup" or
    #: "subreaper", "cgroup_unavailable": why not cgroup (with subreaper)}.
    reset_processes: Dict[str, str] = field(default_factory=dict)
    #: Each interpreter file's self-test (a failed one is also in
    #: runtimes_unavailable as self_test_failed).
    runtime_self_tests: List[RuntimeSelfTest] = field(default_factory=list)

    @staticmethod
    def from_json(d: Dict[str, Any]) -> "Health":
        raw_retention = d.get("retention")
        retention: Dict[str, Any] = raw_retention if isinstance(raw_retention, dict) else {}
        return Health(str(d.get("status", "")), str(d.get("version", "")),
                      _int(d.get("protocol")), bool(d.get("bootstrapped")), bool(d.get("busy")),
                      _int(d.get("execs")), _int(d.get("uptime_ms")),
                      [r for r in d.get("runtimes") or [] if isinstance(r, str)],
                      _int(d.get("ack_ttl_sec")),
                      {k: _int(v) for k, v in retention.items()}, _dict(d.get("limits")), d,
                      [UnavailableRuntime(str(u.get("runtime", "")), str(u.get("code", "")),
                                          str(u.get("reason", "")))
                       for u in d.get("runtimes_unavailable") or [] if isinstance(u, dict)],
                      _int(d.get("upgrades")), _int(d.get("upgrade_failures")),
                      str(d.get("reason") or ""), str(d.get("errno") or ""),
                      [p for p in d.get("reset_paths") or [] if isinstance(p, dict)],
                      _dict(d.get("reset_processes")),
                      [RuntimeSelfTest(str(t.get("runtime", "")), str(t.get("program", "")),
                                       str(t.get("state", "")),
                                       _int(t["duration_ms"]) if "duration_ms" in t else None)
                       for t in d.get("runtime_self_tests") or [] if isinstance(t, dict)])


@dataclass
class ResetReport:
    """The answer of POST /v1/reset (docs/PROTOCOL.md, "Reuse")."""

    clean: bool
    generation: int
    killed_processes: int
    removed_entries: int
    removed_bytes: int
    #: What remained ({"kind", "name", "reason"}); non-empty means quarantined.
    remaining: List[Dict[str, str]]
    duration_ms: int
    #: True when this answers a retry with the recorded report.
    replayed: bool = False
    #: An exec of the generation reset ran unrestricted as root (docs/SECURITY.md).
    privileged_generation: bool = False
    #: System V IPC objects removed (--reset-ipc); 0 from daemons that do not say.
    removed_ipc_objects: int = 0

    @staticmethod
    def from_json(d: Dict[str, Any]) -> "ResetReport":
        removed = _dict(d.get("removed"))
        return ResetReport(bool(d.get("clean")), _int(d.get("generation")),
                           _int(d.get("killed_processes")), _int(removed.get("entries")),
                           _int(removed.get("bytes")),
                           [r for r in d.get("remaining") or [] if isinstance(r, dict)],
                           _int(d.get("duration_ms")), bool(d.get("replayed")),
                           bool(d.get("privileged_generation")),
                           _int(removed.get("ipc_objects")))


@dataclass
class BootstrapResult:
    ok: bool
    replayed: bool


@dataclass
class ExecInfo:
    """The exec object (docs/PROTOCOL.md, "The exec object")."""

    id: str
    state: str  # "running" or "exited"
    pid: int
    exit_code: Optional[int]
    signal: Optional[str]
    timed_out: bool
    killed_by: Optional[str]
    started_at: str
    ended_at: Optional[str]
    duration_ms: int
    stdout_bytes: int
    stderr_bytes: int
    stdout_retained_from: int
    stderr_retained_from: int
    acked: bool
    error: Optional[str]
    #: The resource limits in force (only those set): {"timeout_sec": 30, "memory_mb": 256}.
    limits: Dict[str, Any] = field(default_factory=dict)
    #: The limit that ended the exec: {"name": "memory", "value": 256, "unit": "MiB"}.
    limit: Optional[Dict[str, Any]] = None
    #: "restricted" or "unrestricted" (docs/PROTOCOL.md, "Profiles").
    profile: str = "unrestricted"
    #: Restricted: what was applied: {"user", "uid", "gid", "no_new_privs",
    #: "capabilities": "none", "seccomp_refused_syscalls", "seccomp", "readonly_paths"};
    #: "seccomp" is False (with "seccomp_why") only under the daemon's
    #: --restricted-without-seccomp on a kernel that cannot load the filter.
    restriction: Optional[Dict[str, Any]] = None
    #: "none" when it ran without network (docs/PROTOCOL.md, "No network").
    network: Optional[str] = None
    #: The egress policy in force: {"mode", "allow", "deny", "dns"} and, when a
    #: rule names a host, "resolved"; or None.
    egress: Optional[Dict[str, Any]] = None
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)

    @property
    def running(self) -> bool:
        return self.state == "running"

    @property
    def egress_resolved(self) -> Dict[str, List[str]]:
        """The addresses each host name of the egress rules had when the exec
        started (the rules hold these): {"pypi-mirror.internal": ["10.1.2.3"]};
        {} when no rule names a host."""
        return _resolved(self.egress)

    @staticmethod
    def from_json(d: Dict[str, Any]) -> "ExecInfo":
        ec = d.get("exit_code")
        return ExecInfo(
            id=str(d.get("id", "")), state=str(d.get("state", "")), pid=_int(d.get("pid")),
            exit_code=ec if isinstance(ec, int) else None, signal=_opt_str(d.get("signal")),
            timed_out=bool(d.get("timed_out")), killed_by=_opt_str(d.get("killed_by")),
            started_at=str(d.get("started_at", "")), ended_at=_opt_str(d.get("ended_at")),
            duration_ms=_int(d.get("duration_ms")), stdout_bytes=_int(d.get("stdout_bytes")),
            stderr_bytes=_int(d.get("stderr_bytes")),
            stdout_retained_from=_int(d.get("stdout_retained_from")),
            stderr_retained_from=_int(d.get("stderr_retained_from")),
            acked=bool(d.get("acked")), error=_opt_str(d.get("error")),
            limits=_dict(d.get("limits")), limit=_opt_dict(d.get("limit")),
            profile=str(d.get("profile") or "unrestricted"),
            restriction=_opt_dict(d.get("restriction")), network=_opt_str(d.get("network")),
            egress=_opt_dict(d.get("egress")), raw=d)


@dataclass
class EgressDestination:
    """One destination an exec tried (docs/PROTOCOL.md, "Egress"); a refused
    raw or ICMP socket has address "" and port 0."""
    family: str
    protocol: str
    address: str
    port: int
    verdict: str  # "allowed" | "refused"
    count: int
    first_at: str
    last_at: str

    @staticmethod
    def from_json(d: Dict[str, Any]) -> "EgressDestination":
        return EgressDestination(
            family=str(d.get("family", "")), protocol=str(d.get("protocol", "")),
            address=str(d.get("address", "")), port=_int(d.get("port")),
            verdict=str(d.get("verdict", "")), count=_int(d.get("count")),
            first_at=str(d.get("first_at", "")), last_at=str(d.get("last_at", "")))


@dataclass
class EgressReport:
    """GET /v1/execs/{id}/egress. `accounting` False: the exec ran without a
    policy; True with attempts 0: it tried nothing."""
    id: str
    accounting: bool
    policy: Optional[Dict[str, Any]]
    attempts: int
    allowed: int
    refused: int
    overflow: int
    max_destinations: int
    destinations: List[EgressDestination]
    #: Destinations left out (a run answer lists at most 16).
    destinations_omitted: int = 0
    #: When attempts are missing from the counts (a daemon restart that
    #: could not take them over): {"since": RFC 3339, "why": ...}; None
    #: when every attempt is counted.
    incomplete: Optional[Dict[str, str]] = None
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)

    @property
    def resolved(self) -> Dict[str, List[str]]:
        """The policy's host names and the addresses they had at the exec's
        start, as ExecInfo.egress_resolved; {} without names."""
        return _resolved(self.policy)

    @staticmethod
    def from_json(d: Dict[str, Any]) -> "EgressReport":
        return EgressReport(
            id=str(d.get("id", "")), accounting=bool(d.get("accounting")),
            policy=_opt_dict(d.get("policy")), attempts=_int(d.get("attempts")),
            allowed=_int(d.get("allowed")), refused=_int(d.get("refused")),
            overflow=_int(d.get("overflow")), max_destinations=_int(d.get("max_destinations")),
            destinations=[EgressDestination.from_json(x) for x in d.get("destinations") or []
                          if isinstance(x, dict)],
            destinations_omitted=_int(d.get("destinations_omitted")),
            incomplete=_opt_dict(d.get("incomplete")), raw=d)


@dataclass
class OutputChunk:
    """Bytes [start, next) of one stream from a poll; `gap` = (from, to) lost before them."""

    start: int
    next: int
    data: bytes
    gap: Optional[Tuple[int, int]] = None

    @staticmethod
    def from_json(d: Dict[str, Any]) -> "OutputChunk":
        gap = d.get("gap")
        return OutputChunk(_int(d.get("from")), _int(d.get("next")),
                           base64.b64decode(d.get("data_b64") or ""),
                           (_int(gap.get("from")), _int(gap.get("to")))
                           if isinstance(gap, dict) else None)


@dataclass
class PollResult:
    exec: ExecInfo
    stdout: Optional[OutputChunk]
    stderr: Optional[OutputChunk]

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "PollResult":
        return cls(ExecInfo.from_json(d),
                   OutputChunk.from_json(d["stdout"]) if "stdout" in d else None,
                   OutputChunk.from_json(d["stderr"]) if "stderr" in d else None)


@dataclass
class OutputMatch:
    """The answer of a wait for output (docs/PROTOCOL.md, "Wait for output").

    Matched: `text` is the matched bytes at stream offsets [offset, end).
    Not matched: `reason` says why ("timeout", "exited", "window_limit",
    "scan_limit"). Either way `next` is the cursor to resume from, and
    `exec` the exec as it was at the answer."""

    stream: str
    matched: bool
    next: int
    exec: ExecInfo
    offset: Optional[int] = None
    end: Optional[int] = None
    text: Optional[bytes] = None
    reason: Optional[str] = None
    gap: Optional[Tuple[int, int]] = None

    @staticmethod
    def from_json(doc: Dict[str, Any]) -> "OutputMatch":
        m = doc.get("match") or {}
        gap = m.get("gap")
        matched = bool(m.get("matched"))
        return OutputMatch(str(m.get("stream", "")), matched, _int(m.get("next")),
                           ExecInfo.from_json(doc),
                           _int(m.get("offset")) if matched else None,
                           _int(m.get("end")) if matched else None,
                           base64.b64decode(m.get("text_b64") or "") if matched else None,
                           None if matched else str(m.get("reason", "")),
                           (_int(gap.get("from")), _int(gap.get("to")))
                           if isinstance(gap, dict) else None)


class Cursors(NamedTuple):
    """The next byte offset of each stream: persist these with the exec id to reattach."""

    stdout: int = 0
    stderr: int = 0


@dataclass
class OutputEvent:
    """`data` is stream bytes at absolute `offset`; each byte is delivered exactly once."""

    kind: str  # "stdout" or "stderr"
    offset: int
    data: bytes
    cursors: Cursors


@dataclass
class GapEvent:
    """Bytes [start, end) of `stream` are no longer retained by the daemon."""

    kind: str  # "gap"
    stream: str
    start: int
    end: int
    cursors: Cursors


@dataclass
class ExitEvent:
    """The exec exited and every byte was delivered; the last event of a stream."""

    kind: str  # "exit"
    exec: ExecInfo
    cursors: Cursors


StreamEvent = Union[OutputEvent, GapEvent, ExitEvent]


@dataclass
class RunResult:
    id: str
    exit_code: int  # 128+n for a signal, 124 for a timeout; -1 when unknown
    signal: Optional[str]
    timed_out: bool
    killed_by: Optional[str]
    duration_ms: int
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    exec: ExecInfo

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def stdout_text(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    @property
    def stderr_text(self) -> str:
        return self.stderr.decode("utf-8", "replace")


@dataclass
class ChangedFile:
    path: str  # relative to the run's cwd
    change: str  # "added", "modified" or "removed"
    type: str = ""  # "file", "dir", "symlink" or "other"


@dataclass
class Artifact:
    """A file a run created or modified under its artifacts_dir."""

    path: str  # relative to the run's cwd
    media_type: str  # sniffed from the content
    bytes: int
    sha256: Optional[str] = None  # None past the answer's hash budget

    @staticmethod
    def from_json(d: Dict[str, Any]) -> "Artifact":
        return Artifact(str(d.get("path", "")), str(d.get("media_type", "")), _int(d.get("bytes")),
                        _opt_str(d.get("sha256")))


@dataclass
class CodeRunResult:
    """The answer of POST /v1/run."""

    summary: str
    exit_code: int
    success: bool
    stdout: str
    stderr: str
    truncated: bool
    duration_ms: int
    changed_files: List[ChangedFile]
    #: True when a scan bound left changes out; the bound: {"name", "value", "unit"}.
    changed_files_truncated: bool = False
    changed_files_bound: Optional[Dict[str, Any]] = None
    signal: Optional[str] = None
    timed_out: bool = False
    killed_by: Optional[str] = None
    limit: Optional[Dict[str, Any]] = None
    #: The whole output lengths (stdout and stderr carry at most 64 KiB each).
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    runtime: str = ""
    cwd: str = ""
    timeout_sec: int = 0
    error: Optional[str] = None
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)
    profile: str = "unrestricted"
    restriction: Optional[Dict[str, Any]] = None
    #: What a python run raised: {"type", "message", "file", "line", "column",
    #: "source_line", "frames", "omitted_frames"[, "keys_present", "keys_total"]}.
    exception: Optional[Dict[str, Any]] = None
    #: The last result line's JSON value (see has_result: it may be None itself),
    #: or why the last result line was not JSON.
    result: Any = None
    has_result: bool = False
    result_error: Optional[str] = None
    #: "none" when it ran without network (docs/PROTOCOL.md, "No network").
    network: Optional[str] = None
    #: Its egress accounting when it ran under a policy (destinations bounded).
    egress: Optional["EgressReport"] = None
    #: With artifacts_dir: what the run made there; None when none was asked for.
    artifacts: Optional[List[Artifact]] = None
    #: True when a bound left artifacts out; the bound: {"name", "value", "unit"}.
    artifacts_truncated: bool = False
    artifacts_bound: Optional[Dict[str, Any]] = None

    @staticmethod
    def from_json(d: Dict[str, Any]) -> "CodeRunResult":
        return CodeRunResult(
            str(d.get("summary", "")), _int(d.get("exit_code"), -1), bool(d.get("success")),
            str(d.get("stdout", "")), str(d.get("stderr", "")), bool(d.get("truncated")),
            _int(d.get("duration_ms")),
            [ChangedFile(str(c.get("path", "")), str(c.get("change", "")), str(c.get("type", "")))
             for c in d.get("changed_files") or [] if isinstance(c, dict)],
            bool(d.get("changed_files_truncated")), _opt_dict(d.get("changed_files_bound")),
            _opt_str(d.get("signal")), bool(d.get("timed_out")), _opt_str(d.get("killed_by")),
            _opt_dict(d.get("limit")), _int(d.get("stdout_bytes")), _int(d.get("stderr_bytes")),
            str(d.get("runtime", "")), str(d.get("cwd", "")), _int(d.get("timeout_sec")),
            _opt_str(d.get("error")), d, str(d.get("profile") or "unrestricted"),
            _opt_dict(d.get("restriction")), _opt_dict(d.get("exception")),
            d.get("result"), "result" in d, _opt_str(d.get("result_error")),
            _opt_str(d.get("network")),
            EgressReport.from_json(d["egress"]) if isinstance(d.get("egress"), dict) else None,
            [Artifact.from_json(a) for a in d["artifacts"] if isinstance(a, dict)]
            if isinstance(d.get("artifacts"), list) else None,
            bool(d.get("artifacts_truncated")), _opt_dict(d.get("artifacts_bound")))


@dataclass
class ContextInfo:
    """A stateful context (docs/PROTOCOL.md, "Contexts"): a persistent interpreter."""

    id: str
    runtime: str
    #: "ready", "running" (a run in progress) or "ended".
    state: str
    cwd: str
    pid: int
    #: Runs answered (replays not counted).
    runs: int
    created_at: str
    profile: str = "unrestricted"
    network: Optional[str] = None
    #: Once ended: "limit", "exited", "reset", "deleted", "failed" or
    #: "daemon_restart"; with the limit that
    #: killed the interpreter ({"name", "value", "unit"}) and killed_by.
    ended_reason: Optional[str] = None
    killed_by: Optional[str] = None
    limit: Optional[Dict[str, Any]] = None

    @staticmethod
    def from_json(d: Dict[str, Any]) -> "ContextInfo":
        return ContextInfo(str(d.get("id", "")), str(d.get("runtime", "")),
                           str(d.get("state", "")), str(d.get("cwd", "")), _int(d.get("pid")),
                           _int(d.get("runs")), str(d.get("created_at", "")),
                           str(d.get("profile") or "unrestricted"), _opt_str(d.get("network")),
                           _opt_str(d.get("ended_reason")), _opt_str(d.get("killed_by")),
                           _opt_dict(d.get("limit")))


@dataclass
class FileStat:
    """The stat object (docs/PROTOCOL.md, "Stat"); `mode` is an int (0o755)."""

    path: str
    type: str  # "file", "dir", "symlink" or "other"
    size: int
    mode: int
    uid: int
    gid: int
    mtime: str
    target: Optional[str]
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)
    # The content's ETag: regular files, on stat and on write and edit answers.
    etag: Optional[str] = None

    @staticmethod
    def from_json(d: Dict[str, Any]) -> "FileStat":
        mode = d.get("mode")
        return FileStat(str(d.get("path", "")), str(d.get("type", "")), _int(d.get("size")),
                        int(mode, 8) if isinstance(mode, str) and mode else 0,
                        _int(d.get("uid")), _int(d.get("gid")), str(d.get("mtime", "")),
                        _opt_str(d.get("target")), d, etag=_opt_str(d.get("etag")))


@dataclass
class FileContent:
    """A file read with its ETag (None for procfs and the like)."""

    data: bytes
    etag: Optional[str]


@dataclass
class GuestPort:
    """A TCP port listening in the guest (docs/PROTOCOL.md, "Ports")."""
    port: int
    address: str  # "127.0.0.1", "0.0.0.0", "::", ...
    family: str  # "ipv4" or "ipv6"

    @classmethod
    def from_json(cls, d: Any) -> "GuestPort":
        port = d.get("port") if isinstance(d, dict) else None
        if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
            raise ProtocolError('a port entry lacks a valid "port"')
        return cls(port, str(d.get("address", "")), str(d.get("family", "")))


@dataclass
class FsWatchEvent:
    """One change under a watched directory (docs/PROTOCOL.md, "Watch").

    `kind`: "created", "modified", "removed", "renamed" or "overflow" (the
    caller rescans: `reason` "kernel_queue", "directory_limit", or
    "reconnected" after the client lost and replaced the watch)."""
    kind: str
    path: str = ""  # the guest path; "" for overflow
    type: str = ""  # "dir" or "file"
    from_path: str = ""  # renamed: the old path (the wire's "from")
    reason: str = ""
    id: int = 0  # increasing within one watch stream

    @classmethod
    def from_sse(cls, kind: str, data: str, event_id: Optional[str]) -> "FsWatchEvent":
        import json
        try:
            d = json.loads(data)
        except ValueError as e:
            raise ProtocolError("watch event data is not JSON: %s" % e) from e
        if not isinstance(d, dict):
            raise ProtocolError("watch event data is not a JSON object")
        number = event_id or ""
        ev = cls(kind, _str(d.get("path")), _str(d.get("type")), _str(d.get("from")),
                 _str(d.get("reason")), int(number) if number.isdigit() else 0)
        if kind != "overflow" and not ev.path:
            raise ProtocolError("watch event without a path")
        return ev


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""


@dataclass
class TreeStats:
    entries: int  # archive members written or extracted
    bytes: int  # regular-file content bytes


@dataclass
class SearchMatch:
    """One matching line of GET /v1/fs/search (docs/PROTOCOL.md, "Search")."""

    path: str
    line: int  # 1-based: usable as start_line of read_file
    column: int  # 1-based byte offset of the first match
    text: str
    cut: bool
    invalid_utf8: List[int]  # byte offsets of bytes sent as U+FFFD
    before: List[str]
    after: List[str]
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)

    @staticmethod
    def from_json(d: Dict[str, Any]) -> "SearchMatch":
        return SearchMatch(str(d.get("path", "")), _int(d.get("line")), _int(d.get("column")),
                           str(d.get("text", "")), bool(d.get("cut", False)),
                           [_int(x) for x in d.get("invalid_utf8") or []],
                           [str(x) for x in d.get("before") or []],
                           [str(x) for x in d.get("after") or []], d)


@dataclass
class SearchSummary:
    files_scanned: int
    matches: int
    binary_skipped: int
    unreadable: int
    truncated: bool
    bound: Optional[str]  # "results", "bytes", "time" or None
    elapsed_ms: int
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)

    @staticmethod
    def from_json(d: Dict[str, Any]) -> "SearchSummary":
        return SearchSummary(_int(d.get("files_scanned")), _int(d.get("matches")),
                             _int(d.get("binary_skipped")), _int(d.get("unreadable")),
                             bool(d.get("truncated", False)), _opt_str(d.get("bound")),
                             _int(d.get("elapsed_ms")), d)


@dataclass
class SearchResult:
    matches: List[SearchMatch]
    summary: SearchSummary


@dataclass
class GlobResult:
    """GET /v1/fs/glob (docs/PROTOCOL.md, "Glob"): entries sorted by path."""

    entries: List[FileStat]
    truncated: bool
    bound: Optional[str]  # "results", "time" or None
    elapsed_ms: int
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)

    @staticmethod
    def from_json(d: Dict[str, Any]) -> "GlobResult":
        return GlobResult([FileStat.from_json(e) for e in d.get("entries") or []],
                          bool(d.get("truncated", False)), _opt_str(d.get("bound")),
                          _int(d.get("elapsed_ms")), d)


@dataclass
class EditResult:
    """The answer of POST /v1/fs/edit: the new content's tag and a unified diff."""

    path: str
    etag: str
    size: int
    diff: str

    @staticmethod
    def from_json(d: Dict[str, Any]) -> "EditResult":
        return EditResult(str(d.get("path", "")), str(d.get("etag", "")), _int(d.get("size")),
                          str(d.get("diff", "")))
