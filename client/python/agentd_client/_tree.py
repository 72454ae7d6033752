"""Tree transfers: a pax tar built from a local directory, and confined,
staged extraction of the daemon's tar into a local directory.

Extraction applies the daemon's own upload rules (docs/PROTOCOL.md, "Trees:
upload") on the client side, so a hostile or broken daemon cannot make the
client write outside the target directory:

- absolute member names and any ``..`` component are refused;
- a member whose path crosses a symlink (or a non-directory) is refused:
  every parent is opened component by component with ``O_NOFOLLOW``
  relative to a directory descriptor, and leaves are created with
  ``O_EXCL | O_NOFOLLOW``, so nothing is ever written through a symlink;
- a hard link must name an earlier non-directory member of the same archive;
- character and block devices, FIFOs and other kinds are refused;
- everything is extracted into a private staging directory inside the
  target (``.agentd-download-<hex>``, mode 0700) and moved into place only
  when the whole archive was accepted; a refusal, a malformed archive or a
  cut connection removes the staging directory.

Two policies:

- ``"fidelity"`` (default): modes (except setuid/setgid on regular files,
  dropped unless ``keep_setid``), nanosecond mtimes, symlinks with their
  targets verbatim (relative, absolute or dangling: they are never followed
  by the extraction), hard links, empty directories.
- ``"data"``: the rules of Python's ``tarfile.data_filter`` on top of the
  above: symlinks whose target is absolute or leaves the tree are refused,
  regular files get owner read/write and lose group/other write and the
  high bits, directories get 0755.

What this does *not* guarantee: the target directory itself and its
ancestors are trusted (a symlink there is followed, as the caller named
it); another process of the same user writing inside the target while the
download merges can race the final renames.
"""

from __future__ import annotations

import errno
import os
import queue
import stat
import tarfile
import threading
from typing import IO, Any, Callable, Dict, Iterator, List, Optional, Set, Tuple, cast

from .errors import AgentdError, InvalidArchive, IoError, UnsafePath
from .types import TreeStats

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_CHUNK = 256 * 1024
_END = object()


def _unsafe(member: str, reason: str) -> UnsafePath:
    return UnsafePath('archive member "%s" refused: %s' % (member, reason),
                      details={"member": member, "reason": reason})


def symlink_escapes(parts: List[str], target: str) -> bool:
    """True when symlink member `parts` pointing at `target` leaves the tree (lexically)."""
    if target.startswith("/"):
        return True
    depth = len(parts) - 1  # the symlink's directory, below the root
    for comp in target.split("/"):
        if comp in ("", "."):
            continue
        depth += -1 if comp == ".." else 1
        if depth < 0:
            return True
    return False


def split_member(name: str) -> Optional[List[str]]:
    """The components of a relative member name; None when it is unsafe."""
    if not name or name.startswith("/"):
        return None
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        return None
    return parts


# -- building a tar from a local directory ----------------------------------

class _Stopped(Exception):
    pass


class _QueueWriter:
    """A file object for tarfile's stream mode that hands 256 KiB blocks to a queue."""

    def __init__(self, q: "queue.Queue[Any]", stop: threading.Event) -> None:
        self._q = q
        self._stop = stop
        self._buf = bytearray()

    def write(self, data: bytes) -> int:
        self._buf += data
        if len(self._buf) >= _CHUNK:
            self.flush()
        return len(data)

    def flush(self) -> None:
        if self._buf:
            block, self._buf = bytes(self._buf), bytearray()
            self.put(block)

    def put(self, item: Any) -> None:
        while True:
            if self._stop.is_set():
                raise _Stopped()
            try:
                self._q.put(item, timeout=0.1)
                return
            except queue.Full:
                continue


def tar_chunks(local: str, compress: str, stats: TreeStats) -> Iterator[bytes]:
    """The pax tar of `local`'s contents (names relative to it), in blocks.

    A worker thread builds it through tarfile's stream mode; memory stays
    bounded by a small queue whatever the tree's size. A local failure
    raises (IoError) before the archive's end, so the caller never sends a
    complete body for a partial tree.
    """
    root = os.path.abspath(local)
    if not os.path.isdir(root):
        raise IoError("local directory %s does not exist" % local, details={"path": local})
    q: "queue.Queue[Any]" = queue.Queue(maxsize=8)
    stop = threading.Event()

    def fix(info: tarfile.TarInfo) -> tarfile.TarInfo:
        st = os.lstat(os.path.join(root, info.name))
        sec, nsec = divmod(st.st_mtime_ns, 10**9)
        info.mtime = sec
        if nsec:
            info.pax_headers = dict(info.pax_headers, mtime="%d.%09d" % (sec, nsec))
        stats.entries += 1
        if info.isreg():
            stats.bytes += info.size
        return info

    def work() -> None:
        writer = _QueueWriter(q, stop)
        try:
            mode = "w|gz" if compress == "gzip" else "w|"
            with tarfile.open(fileobj=cast(IO[bytes], writer), mode=mode, format=tarfile.PAX_FORMAT,
                              encoding="utf-8", errors="surrogateescape") as tf:
                for name in sorted(os.listdir(root)):
                    tf.add(os.path.join(root, name), arcname=name, filter=fix)
            writer.flush()
            writer.put(_END)
        except _Stopped:
            pass
        except BaseException as e:  # handed to the consumer below
            try:
                writer.put(e if isinstance(e, AgentdError) else IoError(
                    "cannot archive %s: %s" % (local, e),
                    details={"path": getattr(e, "filename", None) or local,
                             "errno": getattr(e, "errno", None)}))
            except _Stopped:
                pass

    worker = threading.Thread(target=work, name="agentd-tar-writer", daemon=True)
    worker.start()
    try:
        while True:
            item = q.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        worker.join()


# -- confined extraction ----------------------------------------------------

def _remove_tree(parent_fd: int, name: str) -> None:
    """Removes `name` under `parent_fd`, never following a symlink."""
    try:
        os.unlink(name, dir_fd=parent_fd)
        return
    except FileNotFoundError:
        return
    except (IsADirectoryError, PermissionError, OSError):
        pass
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError:
        return
    try:
        os.fchmod(fd, 0o700)
        for child in os.listdir(fd):
            _remove_tree(fd, child)
    finally:
        os.close(fd)
    try:
        os.rmdir(name, dir_fd=parent_fd)
    except OSError:
        pass


class _Extractor:
    def __init__(self, stage_fd: int, policy: str, keep_setid: bool) -> None:
        self.stage_fd = stage_fd
        self.policy = policy
        self.keep_setid = keep_setid
        self.nondirs: Set[Tuple[str, ...]] = set()
        self.dirs: Dict[Tuple[str, ...], Tuple[int, int]] = {}
        self.stats = TreeStats(0, 0)

    def _open_parent(self, parts: List[str], member: str, create: bool = True) -> int:
        """A descriptor of the staged directory holding parts[-1], opened without
        following any symlink (missing parents are created when `create`)."""
        fd = os.dup(self.stage_fd)
        try:
            for i, comp in enumerate(parts[:-1]):
                try:
                    nfd = os.open(comp, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    os.mkdir(comp, 0o700, dir_fd=fd)  # a missing parent: 0755 at the end
                    self.dirs.setdefault(tuple(parts[:i + 1]), (0o755, -1))
                    nfd = os.open(comp, _DIR_FLAGS, dir_fd=fd)
                except OSError as e:
                    if e.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise _unsafe(member, "its path crosses a symlink or a non-directory")
                    raise
                os.close(fd)
                fd = nfd
            return fd
        except BaseException:
            os.close(fd)
            raise

    def _clear(self, pfd: int, leaf: str, key: Tuple[str, ...], keep_dir: bool) -> bool:
        """Makes room for a member; True when an existing directory is kept (merged)."""
        try:
            st = os.stat(leaf, dir_fd=pfd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        if keep_dir and stat.S_ISDIR(st.st_mode):
            return True
        _remove_tree(pfd, leaf)
        self.nondirs = {k for k in self.nondirs if k[:len(key)] != key}
        self.dirs = {k: v for k, v in self.dirs.items() if k[:len(key)] != key}
        return False

    def _file_mode(self, mode: int) -> int:
        mode &= 0o7777
        if self.policy == "data":
            mode = (mode | 0o600) & ~(stat.S_IWGRP | stat.S_IWOTH | 0o7000)
            if not mode & stat.S_IXUSR:
                mode &= ~(stat.S_IXGRP | stat.S_IXOTH)
        elif not self.keep_setid:
            mode &= ~0o6000
        return mode

    def member(self, tf: tarfile.TarFile, info: tarfile.TarInfo) -> None:
        name = info.name
        parts = split_member(name)
        if parts is None:
            raise _unsafe(name, 'absolute name or ".." component')
        if not (info.isreg() or info.isdir() or info.issym() or info.islnk()):
            raise _unsafe(name, "device, FIFO and socket entries are refused")
        self.stats.entries += 1
        if not parts:
            if info.isdir():
                return  # the directory itself: its contents only
            raise _unsafe(name, "a non-directory member names the target directory")
        key = tuple(parts)
        mtime_ns = _mtime_ns(info)
        pfd = self._open_parent(parts, name)
        leaf = parts[-1]
        try:
            if info.isdir():
                if not self._clear(pfd, leaf, key, keep_dir=True):
                    os.mkdir(leaf, 0o700, dir_fd=pfd)
                mode = 0o755 if self.policy == "data" else info.mode & 0o7777
                self.dirs[key] = (mode, mtime_ns)
                return
            self._clear(pfd, leaf, key, keep_dir=False)
            if info.issym():
                self._symlink(pfd, leaf, parts, info, mtime_ns)
            elif info.islnk():
                self._hardlink(pfd, leaf, info)
            else:
                self._regular(tf, pfd, leaf, info, mtime_ns)
            self.nondirs.add(key)
        finally:
            os.close(pfd)

    def _symlink(self, pfd: int, leaf: str, parts: List[str], info: tarfile.TarInfo,
                 mtime_ns: int) -> None:
        target = info.linkname
        if self.policy == "data" and symlink_escapes(parts, target):
            raise _unsafe(info.name, "symlink target leaves the tree")
        os.symlink(target, leaf, dir_fd=pfd)
        if mtime_ns >= 0:
            os.utime(leaf, ns=(mtime_ns, mtime_ns), dir_fd=pfd, follow_symlinks=False)

    def _hardlink(self, pfd: int, leaf: str, info: tarfile.TarInfo) -> None:
        target = split_member(info.linkname)
        if not target or tuple(target) not in self.nondirs:
            raise _unsafe(info.name, "hard link to something that is not an earlier member")
        tfd = self._open_parent(target, info.name, create=False)
        try:
            os.link(target[-1], leaf, src_dir_fd=tfd, dst_dir_fd=pfd, follow_symlinks=False)
        finally:
            os.close(tfd)

    def _regular(self, tf: tarfile.TarFile, pfd: int, leaf: str, info: tarfile.TarInfo,
                 mtime_ns: int) -> None:
        fd = os.open(leaf, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW |
                     getattr(os, "O_CLOEXEC", 0), 0o600, dir_fd=pfd)
        try:
            src = tf.extractfile(info)
            if src is not None:
                while True:
                    block = src.read(_CHUNK)
                    if not block:
                        break
                    view = memoryview(block)
                    while view:
                        n = os.write(fd, view)
                        view = view[n:]
                    self.stats.bytes += len(block)
            os.fchmod(fd, self._file_mode(info.mode))
            if mtime_ns >= 0:
                os.utime(fd, ns=(mtime_ns, mtime_ns))
        finally:
            os.close(fd)

    def finish_dirs(self) -> None:
        """Directory modes and mtimes last, deepest first (read-only ones were filled)."""
        for key in sorted(self.dirs, key=len, reverse=True):
            mode, mtime_ns = self.dirs[key]
            fd = self._open_parent(list(key) + [""], "/".join(key), create=False)
            try:
                os.fchmod(fd, mode)
                if mtime_ns >= 0:
                    os.utime(fd, ns=(mtime_ns, mtime_ns))
            finally:
                os.close(fd)


def _mtime_ns(info: tarfile.TarInfo) -> int:
    text = info.pax_headers.get("mtime")
    if text:
        whole, _, frac = text.partition(".")
        try:
            sign = -1 if whole.startswith("-") else 1
            return int(whole) * 10**9 + sign * int((frac + "000000000")[:9])
        except ValueError:
            pass
    return int(info.mtime * 10**9) if info.mtime is not None else -1


def _merge(from_fd: int, to_fd: int) -> None:
    """Moves staged entries into place: directories merge, anything else replaces."""
    for name in os.listdir(from_fd):
        src = os.stat(name, dir_fd=from_fd, follow_symlinks=False)
        try:
            dst: Optional[os.stat_result] = os.stat(name, dir_fd=to_fd, follow_symlinks=False)
        except FileNotFoundError:
            dst = None
        if dst is not None and stat.S_ISDIR(src.st_mode) and stat.S_ISDIR(dst.st_mode):
            sub_from = os.open(name, _DIR_FLAGS, dir_fd=from_fd)
            try:
                sub_to = os.open(name, _DIR_FLAGS, dir_fd=to_fd)
                try:
                    _merge(sub_from, sub_to)
                    os.fchmod(sub_to, stat.S_IMODE(src.st_mode))
                    os.utime(sub_to, ns=(src.st_atime_ns, src.st_mtime_ns))
                finally:
                    os.close(sub_to)
            finally:
                os.close(sub_from)
            continue
        try:
            os.replace(name, name, src_dir_fd=from_fd, dst_dir_fd=to_fd)
        except OSError as e:
            if dst is None or e.errno not in (errno.EISDIR, errno.ENOTDIR, errno.ENOTEMPTY,
                                              errno.EEXIST):
                raise
            _remove_tree(to_fd, name)  # a directory stands where a non-directory goes
            os.replace(name, name, src_dir_fd=from_fd, dst_dir_fd=to_fd)


class _ChunkReader:
    """A read()-able view of a sequence of byte blocks, for tarfile's stream mode."""

    def __init__(self, next_block: Callable[[], bytes]) -> None:
        self._next = next_block
        self._buf = b""
        self._eof = False

    def read(self, n: int = -1) -> bytes:
        while not self._eof and (n < 0 or len(self._buf) < n):
            block = self._next()
            if not block:
                self._eof = True
            self._buf += block
        if n < 0:
            out, self._buf = self._buf, b""
        else:
            out, self._buf = self._buf[:n], self._buf[n:]
        return out


def extract_tar(next_block: Callable[[], bytes], local: str, policy: str = "fidelity",
                keep_setid: bool = False) -> TreeStats:
    """Extracts the tar (plain or gzip) read from `next_block` into `local`, confined and staged."""
    if policy not in ("fidelity", "data"):
        raise ValueError('policy must be "fidelity" or "data"')
    os.makedirs(local, exist_ok=True)
    root_fd = os.open(local, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    stage = ".agentd-download-" + os.urandom(8).hex()
    try:
        os.mkdir(stage, 0o700, dir_fd=root_fd)
        try:
            stage_fd = os.open(stage, _DIR_FLAGS, dir_fd=root_fd)
            try:
                ex = _Extractor(stage_fd, policy, keep_setid)
                try:
                    with tarfile.open(fileobj=cast(IO[bytes], _ChunkReader(next_block)),
                                      mode="r|*", encoding="utf-8",
                                      errors="surrogateescape") as tf:
                        for info in tf:
                            ex.member(tf, info)
                except (tarfile.TarError, EOFError, OSError) as e:
                    if isinstance(e, OSError) and not isinstance(e, EOFError) and \
                            not isinstance(e, tarfile.TarError) and e.errno is not None:
                        raise IoError("cannot extract into %s: %s" % (local, e),
                                      details={"path": local, "errno": e.errno}) from e
                    raise InvalidArchive("malformed archive: %s" % e,
                                         details={"reason": str(e)}) from e
                ex.finish_dirs()
                _merge(stage_fd, root_fd)
                return ex.stats
            finally:
                os.close(stage_fd)
        finally:
            _remove_tree(root_fd, stage)
    finally:
        os.close(root_fd)
