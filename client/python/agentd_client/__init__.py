"""agentd_client: a dependency-free Python client for agentd (docs/PROTOCOL.md).

    from agentd_client import Client
    with Client("http://10.0.2.15:7700", token=token) as guest:
        r = guest.run("pytest -q", cwd="/workspace/repo", timeout_sec=900)
        print(r.exit_code, r.stdout_text)
"""

from __future__ import annotations

from .client import Client, mint_exec_id
from .errors import *  # noqa: F401,F403  (the typed exceptions)
from .errors import AgentdError, ERROR_CLASSES, error_for
from ._reactive import WatchStop
from .tunnel import Tunnel, TunnelForwarder
from .types import (Artifact, BootstrapResult, ChangedFile, CodeRunResult, ContextInfo, Cursors,
                    EditResult, EgressDestination, EgressReport, ExecInfo, ExitEvent, FileContent, FileStat,
                    FsWatchEvent, GapEvent, GlobResult,
                    GuestPort, Health, OutputChunk, OutputEvent, OutputMatch, PollResult,
                    ResetReport, RunResult, RuntimeSelfTest, SearchMatch, SearchResult, SearchSummary, StreamEvent,
                    TreeStats, UnavailableRuntime)

__version__ = "0.1.0"

__all__ = [
    "Client", "mint_exec_id", "AgentdError", "ERROR_CLASSES", "error_for", "Artifact",
    "BootstrapResult",
    "ChangedFile", "CodeRunResult", "ContextInfo", "Cursors", "EditResult", "EgressDestination",
    "EgressReport", "ExecInfo", "ExitEvent",
    "FileContent", "FileStat", "FsWatchEvent", "GapEvent", "GlobResult", "GuestPort", "Health",
    "OutputChunk", "OutputEvent", "OutputMatch", "PollResult", "ResetReport", "RunResult",
    "RuntimeSelfTest",
    "SearchMatch", "SearchResult", "SearchSummary", "StreamEvent", "TreeStats", "Tunnel",
    "TunnelForwarder", "UnavailableRuntime", "WatchStop", "__version__",
] + [cls.__name__ for cls in ERROR_CLASSES.values()] + ["UnknownError"]
