"""File and tree calls of Client (docs/PROTOCOL.md, "Files" and "Trees")."""

from __future__ import annotations

import json
import os
import time
from typing import IO, Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple, Union, cast

from . import _tree
from ._base import CallsBase, retryable_stream_failure
from ._transport import FileBody, Request, quote_value
from .errors import AgentdError, InvalidRequest, ProtocolError
from .types import (EditResult, FileContent, FileStat, GlobResult, SearchMatch, SearchResult,
                    SearchSummary, TreeStats)

FileData = Union[bytes, bytearray, str, IO[bytes], Iterable[bytes]]


def _mode_text(mode: Union[int, str]) -> str:
    return "%04o" % mode if isinstance(mode, int) else mode


def _preconditions(if_match: Optional[str], if_none_match: bool) -> Dict[str, str]:
    """If-Match / If-None-Match: * (docs/PROTOCOL.md, "ETags and preconditions")."""
    h: Dict[str, str] = {}
    if if_match is not None:
        h["If-Match"] = if_match
    if if_none_match:
        h["If-None-Match"] = "*"
    return h


def _write_request(path: str, mode: Union[int, str, None], parents: bool, user: Optional[str],
                   group: Optional[str], if_match: Optional[str], if_none_match: bool,
                   etag: bool) -> Tuple[Request, Dict[str, str]]:
    """PUT /v1/fs/file without its body, and its preconditions (empty: unguarded)."""
    target = "/v1/fs/file?path=" + quote_value(path)
    if mode is not None:
        target += "&mode=" + _mode_text(mode)
    if parents:
        target += "&parents=1"
    if user is not None:
        target += "&user=" + quote_value(user)
    if group is not None:
        target += "&group=" + quote_value(group)
    if not etag:
        target += "&etag=0"
    req = Request("PUT", target, headers={"Content-Type": "application/octet-stream"})
    guard = _preconditions(if_match, if_none_match)
    req.headers.update(guard)
    return req, guard


class FileCalls(CallsBase):
    """Reads and writes single files, metadata, and whole trees."""

    # -- files ---------------------------------------------------------------

    def _read_request(self, path: str, start_line: Optional[int], end_line: Optional[int],
                      byte_range: Optional[Tuple[int, Optional[int]]]) -> Request:
        target = "/v1/fs/file?path=" + quote_value(path)
        if start_line is not None:
            target += "&start_line=%d" % start_line
        if end_line is not None:
            target += "&end_line=%d" % end_line
        req = Request("GET", target, idempotent=True)
        if byte_range is not None:
            first, last = byte_range
            req.headers["Range"] = "bytes=%d-%s" % (first, "" if last is None else "%d" % last)
        return req

    def read_file_to(self, path: str, sink: Union[IO[bytes], Callable[[bytes], Any]], *,
                     start_line: Optional[int] = None, end_line: Optional[int] = None,
                     byte_range: Optional[Tuple[int, Optional[int]]] = None) -> int:
        """GET /v1/fs/file streamed into `sink` (a binary file or a callable); answers the
        byte count. Retried until the body starts; a body cut short raises
        TransportError after the sink received part of it."""
        write = sink if callable(sink) else sink.write
        resp = self._t.open(self._read_request(path, start_line, end_line, byte_range))
        total = 0
        with resp:
            while True:
                chunk = resp.read_chunk(1 << 20)
                if not chunk:
                    return total
                total += len(chunk)
                write(chunk)

    def read_file_to_fd(self, path: str, fd: int, *, start_line: Optional[int] = None,
                        end_line: Optional[int] = None,
                        byte_range: Optional[Tuple[int, Optional[int]]] = None,
                        progress: Optional[Callable[[int], Any]] = None) -> int:
        """GET /v1/fs/file written to the open descriptor `fd` (not closed here; at
        its position, or appended if it is O_APPEND); answers the byte count.
        Reads up to 256 KiB at a time into one buffer and writes each whole
        (short writes and EINTR resumed); `progress` hears the bytes of each
        write. Retried until the body starts; a body cut short raises
        TransportError after `fd` received part of it; a failed write of `fd`
        raises its OSError."""
        buf = bytearray(256 << 10)
        view = memoryview(buf)
        resp = self._t.open(self._read_request(path, start_line, end_line, byte_range))
        total = 0
        with resp:
            while True:
                n = resp.read_into(view)
                if not n:
                    return total
                done = 0
                while done < n:
                    done += os.write(fd, view[done:n])  # EINTR is retried by Python
                total += n
                if progress is not None:
                    progress(n)

    def read_file(self, path: str, *, start_line: Optional[int] = None,
                  end_line: Optional[int] = None,
                  byte_range: Optional[Tuple[int, Optional[int]]] = None,
                  max_bytes: int = 256 << 20) -> bytes:
        """The whole file, lines [start_line, end_line] (1-based, inclusive), or a
        byte range (first, last) with last inclusive or None for the end."""
        return self.read_file_with_etag(path, start_line=start_line, end_line=end_line,
                                        byte_range=byte_range, max_bytes=max_bytes).data

    def read_file_with_etag(self, path: str, *, start_line: Optional[int] = None,
                            end_line: Optional[int] = None,
                            byte_range: Optional[Tuple[int, Optional[int]]] = None,
                            max_bytes: int = 256 << 20) -> FileContent:
        """read_file plus the whole file's ETag (the same for every range of it), to
        pass back as `if_match` to write_file, edit, remove or rename."""
        req = self._read_request(path, start_line, end_line, byte_range)
        _, headers, body = self._t.call(req, max_body=max_bytes)
        etag = next((v for k, v in headers.items() if k.lower() == "etag"), None)
        return FileContent(body, etag)

    def write_file(self, path: str, data: FileData, *, mode: Union[int, str, None] = None,
                   parents: bool = False, user: Optional[str] = None,
                   group: Optional[str] = None, if_match: Optional[str] = None,
                   if_none_match: bool = False, etag: bool = True) -> FileStat:
        """PUT /v1/fs/file: atomically replaces the file; `mode` exactly (0o755 or "0755").
        Answers the new stat with its `etag`; with `etag=False` the answer has none
        (`etag` is None) and the daemon spends no time hashing the upload (a later
        stat or read_file_with_etag hashes it when asked).

        `if_match` (an ETag from stat or read_file_with_etag, or "*") replaces only
        that version; `if_none_match` only creates. Either failing raises
        PreconditionFailed and leaves the file as it was.

        bytes/str bodies are retried (the same bytes leave the same file) unless
        guarded (a retry would meet its own first attempt); a file object or an
        iterator is streamed chunked and not retried."""
        req, guard = _write_request(path, mode, parents, user, group, if_match, if_none_match,
                                    etag)
        if isinstance(data, str):
            req.body, req.idempotent = data.encode("utf-8"), not guard
        elif isinstance(data, (bytes, bytearray, memoryview)):
            req.body, req.idempotent = bytes(data), not guard
        elif hasattr(data, "read"):
            f = cast(IO[bytes], data)

            def blocks() -> Iterator[bytes]:
                while True:
                    block = f.read(1 << 20)
                    if not block:
                        return
                    yield block
            req.body = blocks()
        else:
            req.body = iter(data)
        _, _, body = self._t.call(req)
        return FileStat.from_json(json.loads(body.decode("utf-8")))

    def write_file_from(self, path: str, source: Union[IO[bytes], Iterable[bytes]], *,
                        mode: Union[int, str, None] = None, parents: bool = False,
                        user: Optional[str] = None, group: Optional[str] = None,
                        if_match: Optional[str] = None, if_none_match: bool = False,
                        etag: bool = True) -> FileStat:
        """write_file from a streaming source (a binary file object or an iterator of
        bytes), sent chunked as it is read: memory stays flat for any size. Never
        retried once started (the source may not be readable twice)."""
        if isinstance(source, (bytes, bytearray, memoryview, str)):
            raise InvalidRequest("write_file_from takes a file object or an iterator of bytes "
                                 "(write_file takes bytes)", details={"field": "source"})
        return self.write_file(path, source, mode=mode, parents=parents, user=user, group=group,
                               if_match=if_match, if_none_match=if_none_match, etag=etag)

    def write_file_from_fd(self, path: str, fd: int, size: int, *,
                           mode: Union[int, str, None] = None, parents: bool = False,
                           user: Optional[str] = None, group: Optional[str] = None,
                           if_match: Optional[str] = None, if_none_match: bool = False,
                           etag: bool = True) -> FileStat:
        """write_file from the first `size` bytes of the open regular file `fd` (not
        closed here), sent with Content-Length by os.sendfile: the bytes never pass
        through Python, and the daemon checks free space before it reads them. Retried
        like write_file (from the file's start again) unless guarded. A file shorter
        than `size` raises IoError and leaves the old file as it was."""
        req, guard = _write_request(path, mode, parents, user, group, if_match, if_none_match,
                                    etag)
        req.body, req.idempotent = FileBody(fd, size), not guard
        _, _, body = self._t.call(req)
        return FileStat.from_json(json.loads(body.decode("utf-8")))

    def stat(self, path: str, follow: bool = False) -> FileStat:
        target = "/v1/fs/stat?path=" + quote_value(path) + ("&follow=1" if follow else "")
        return FileStat.from_json(self._json("GET", target, idempotent=True))

    def list_dir(self, path: str) -> List[FileStat]:
        doc = self._json("GET", "/v1/fs/list?path=" + quote_value(path), idempotent=True)
        return [FileStat.from_json(e) for e in doc.get("entries") or []]

    def make_dir(self, path: str, mode: Union[int, str, None] = None, parents: bool = False,
              user: Optional[str] = None, group: Optional[str] = None) -> FileStat:
        """POST /v1/fs/mkdir. Retried only with `parents` (then an existing directory
        is a success; without it a retry could see its own first attempt)."""
        body: Dict[str, Any] = {"path": path}
        if mode is not None:
            body["mode"] = _mode_text(mode)
        if parents:
            body["parents"] = True
        if user is not None:
            body["user"] = user
        if group is not None:
            body["group"] = group
        return FileStat.from_json(self._json("POST", "/v1/fs/mkdir", body, idempotent=parents))

    def rename(self, src: str, dst: str, overwrite: Optional[bool] = None, *,
               if_match: Optional[str] = None, if_none_match: bool = False) -> FileStat:
        """POST /v1/fs/rename (never retried once sent). `if_match` guards the source
        (`src` must still have that ETag), `if_none_match` the destination (must
        not exist); PreconditionFailed otherwise, nothing moved."""
        body: Dict[str, Any] = {"from": src, "to": dst}
        if overwrite is not None:
            body["overwrite"] = overwrite
        return FileStat.from_json(self._json("POST", "/v1/fs/rename", body, idempotent=False,
                                             headers=_preconditions(if_match, if_none_match)))

    def remove(self, path: str, recursive: bool = False, *,
               if_match: Optional[str] = None) -> int:
        """DELETE /v1/fs: answers the number of entries removed (never retried once sent).
        With `if_match` only that version of the file goes (else PreconditionFailed)."""
        target = "/v1/fs?path=" + quote_value(path) + ("&recursive=1" if recursive else "")
        return int(self._json("DELETE", target, idempotent=False,
                              headers=_preconditions(if_match, False)).get("removed", 0))

    def edit(self, path: str, edits: Iterable[Union[Tuple[str, str], Dict[str, Any]]] = (),
             *, line_edits: Iterable[Dict[str, Any]] = (),
             if_match: Optional[str] = None) -> EditResult:
        """POST /v1/fs/edit: exact replacements (each `old` must occur exactly `count`
        times, default 1; an (old, new) pair or {"old", "new", "count"}) and line
        replacements ({"start_line", "end_line", "text"}), applied together by one
        atomic replace or not at all. Raises EditMismatch (details name the edit,
        the count found and their lines) or PreconditionFailed. Never retried once
        sent (a retry would meet its own first attempt)."""
        body: Dict[str, Any] = {"path": path}
        items = [e if isinstance(e, dict) else {"old": e[0], "new": e[1]} for e in edits]
        if items:
            body["edits"] = items
        lines = list(line_edits)
        if lines:
            body["line_edits"] = lines
        if if_match is not None:
            body["if_match"] = if_match
        return EditResult.from_json(self._json("POST", "/v1/fs/edit", body, idempotent=False))

    def realpath(self, path: str) -> str:
        return str(self._json("GET", "/v1/fs/realpath?path=" + quote_value(path),
                              idempotent=True)["path"])

    # -- search and glob -----------------------------------------------------

    @staticmethod
    def _walk_query(hidden: bool, gitignore: bool, follow: bool, exclude: Iterable[str],
                    max_results: Optional[int], timeout_ms: Optional[int]) -> str:
        q = ""
        if hidden:
            q += "&hidden=1"
        if not gitignore:
            q += "&gitignore=0"
        if follow:
            q += "&follow=1"
        for e in exclude:
            q += "&exclude=" + quote_value(e)
        if max_results is not None:
            q += "&max_results=%d" % max_results
        if timeout_ms is not None:
            q += "&timeout_ms=%d" % timeout_ms
        return q

    def search(self, path: str, pattern: str, *, fixed: bool = False,
               ignore_case: bool = False, glob: Iterable[str] = (),
               exclude: Iterable[str] = (), hidden: bool = False, gitignore: bool = True,
               follow: bool = False, context: int = 0, max_results: Optional[int] = None,
               max_bytes: Optional[int] = None, max_bytes_per_line: Optional[int] = None,
               timeout_ms: Optional[int] = None,
               on_match: Optional[Callable[[SearchMatch], Any]] = None) -> SearchResult:
        """GET /v1/fs/search: the matching lines below `path` (or in the file `path`),
        then the summary (which names the bound that cut the answer, if one did).
        `on_match` sees each match as it arrives. Retried until the stream starts;
        a stream that ends without its summary raises (TransportError or
        ProtocolError)."""
        target = ("/v1/fs/search?path=" + quote_value(path) + "&pattern=" +
                  quote_value(pattern) + ("&fixed=1" if fixed else "") +
                  ("&ignore_case=1" if ignore_case else ""))
        for g in glob:
            target += "&glob=" + quote_value(g)
        if context:
            target += "&context=%d" % context
        if max_bytes is not None:
            target += "&max_bytes=%d" % max_bytes
        if max_bytes_per_line is not None:
            target += "&max_bytes_per_line=%d" % max_bytes_per_line
        target += self._walk_query(hidden, gitignore, follow, exclude, max_results, timeout_ms)
        resp = self._t.open(Request("GET", target, idempotent=True))
        matches: List[SearchMatch] = []
        summary: Optional[SearchSummary] = None
        pending = b""
        with resp:
            while True:
                chunk = resp.read_chunk(1 << 16)
                if not chunk:
                    break
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    try:
                        doc = json.loads(line.decode("utf-8"))
                    except (ValueError, UnicodeDecodeError) as e:
                        raise ProtocolError("a search line is not JSON: %s" % e) from e
                    kind = doc.get("type") if isinstance(doc, dict) else None
                    if kind == "match":
                        m = SearchMatch.from_json(doc)
                        matches.append(m)
                        if on_match is not None:
                            on_match(m)
                    elif kind == "summary":
                        summary = SearchSummary.from_json(doc)
        if summary is None or pending:
            raise ProtocolError("the search stream ended without its summary line")
        return SearchResult(matches, summary)

    def glob(self, path: str, pattern: str, *, exclude: Iterable[str] = (),
             hidden: bool = False, gitignore: bool = True, follow: bool = False,
             max_results: Optional[int] = None,
             timeout_ms: Optional[int] = None) -> GlobResult:
        """GET /v1/fs/glob: entries below `path` whose relative path matches `pattern`
        (`*`, `?`, `[...]`, `**`, `{a,b}`), sorted by path."""
        target = ("/v1/fs/glob?path=" + quote_value(path) + "&pattern=" + quote_value(pattern) +
                  self._walk_query(hidden, gitignore, follow, exclude, max_results, timeout_ms))
        return GlobResult.from_json(self._json("GET", target, idempotent=True))

    # -- trees ---------------------------------------------------------------

    def upload_dir(self, local: str, remote: str, *, compress: str = "none",
                   parents: bool = False) -> TreeStats:
        """PUT /v1/fs/tar: `local`'s contents extracted under `remote` with full fidelity.

        The tar is built on a worker thread while it is sent; if the local
        walk fails the final chunk is never sent and the daemon keeps
        nothing. A lost connection rebuilds and resends the archive."""
        if compress not in ("none", "gzip"):
            raise InvalidRequest('compress must be "none" or "gzip" (zstd is not in '
                                 "Python's standard library)", details={"field": "compress"})
        target = "/v1/fs/tar?path=" + quote_value(remote) + ("&parents=1" if parents else "")
        for attempt in range(1, self._t.max_attempts + 1):
            stats = TreeStats(0, 0)
            req = Request("PUT", target, body=_tree.tar_chunks(local, compress, stats),
                          headers={"Content-Type": "application/gzip" if compress == "gzip"
                                   else "application/x-tar"})
            try:
                _, _, body = self._t.call(req)
            except AgentdError as e:
                if attempt < self._t.max_attempts and retryable_stream_failure(e):
                    time.sleep(self._t.backoff(attempt))
                    continue
                raise
            doc = json.loads(body.decode("utf-8"))
            return TreeStats(int(doc.get("entries", stats.entries)), stats.bytes)
        raise AssertionError("unreachable")

    def download_dir(self, remote: str, local: str, *, compress: str = "none",
                     policy: str = "fidelity", keep_setid: bool = False) -> TreeStats:
        """GET /v1/fs/tar extracted into `local`, confined and staged (see _tree).

        A cut transfer starts again from scratch in a fresh staging directory."""
        if compress not in ("none", "gzip"):
            raise InvalidRequest('compress must be "none" or "gzip"', details={"field": "compress"})
        target = "/v1/fs/tar?path=%s&compress=%s" % (quote_value(remote), compress)
        for attempt in range(1, self._t.max_attempts + 1):
            resp = self._t.open(Request("GET", target, idempotent=True))
            try:
                with resp:
                    return _tree.extract_tar(lambda: resp.read_chunk(1 << 20), local, policy,
                                             keep_setid)
            except AgentdError as e:
                if attempt < self._t.max_attempts and retryable_stream_failure(e):
                    time.sleep(self._t.backoff(attempt))
                    continue
                raise
        raise AssertionError("unreachable")
