"""Helpers for the file and tree tests: URLs, trees on disk, tar archives.

Trees are described entry by entry (type, mode, link target, content hash,
hard-link identity, mtime) so two trees can be compared exactly.
"""

import contextlib
import hashlib
import io
import os
import stat
import subprocess
import tarfile
import tempfile
import urllib.parse


def url(route, **params):
    """/v1/fs/... with query parameters, each value percent-encoded."""
    return route + "?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote)


def snapshot(root):
    """{relative path: description} for every entry below root (not root itself).

    A description is a tuple: ("dir", mode, mtime_ns), ("file", mode, sha256,
    mtime_ns, inode group), or ("symlink", target, mtime_ns). Hard links show
    as files sharing an inode group: the sorted names of all entries of the
    tree that share the inode.
    """
    entries = {}
    inodes = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                entries[rel] = ("symlink", os.readlink(full), st.st_mtime_ns)
            elif stat.S_ISDIR(st.st_mode):
                entries[rel] = ("dir", stat.S_IMODE(st.st_mode), st.st_mtime_ns)
            elif stat.S_ISREG(st.st_mode):
                with open(full, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
                entries[rel] = ["file", stat.S_IMODE(st.st_mode), digest, st.st_mtime_ns]
                inodes.setdefault((st.st_dev, st.st_ino), []).append(rel)
            else:
                entries[rel] = ("other", stat.S_IFMT(st.st_mode))
    for names in inodes.values():
        group = tuple(sorted(names))
        for rel in names:
            entries[rel] = tuple(entries[rel]) + (group,)
    return entries


def listing(root):
    """Every path below root, including the daemon's temporaries if any."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            out.append(os.path.relpath(os.path.join(dirpath, name), root))
    return sorted(out)


def make_rich_tree(root):
    """A tree with every kind of entry a harness moves around."""
    os.makedirs(root, exist_ok=True)

    def write(rel, data, mode=0o644):
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, mode)
        return path

    write("README.md", b"# project\n")
    write("bin/run.sh", b"#!/bin/sh\necho run\n", 0o755)
    write("secret.key", b"k" * 64, 0o600)
    write("readonly.txt", b"do not edit\n", 0o444)
    write("empty.txt", b"")
    write("data/blob.bin", os.urandom(3 << 20))
    write("src/main.c", b"int main(void) { return 0; }\n")
    write("h\u00e9llo w\u00f6rld/\u65e5\u672c\u8a9e.txt", "\u00fc\n".encode())
    write("odd/-leading-dash", b"x")
    write("odd/back\\slash", b"x")
    write("odd/new\nline", b"x")
    write("odd/star*and?q", b"x")
    write("odd/" + "n" * 200, b"long component")
    write("odd/not-utf8-\udcff\udcfe", b"raw bytes in the name")
    write("deep/" + "/".join("d%02d" % i for i in range(30)) + "/leaf", b"deep")
    os.makedirs(os.path.join(root, "empty-dir"))
    os.makedirs(os.path.join(root, "nested/empty/too"))
    os.makedirs(os.path.join(root, "shared"))
    os.chmod(os.path.join(root, "shared"), 0o2775)  # setgid directory
    os.makedirs(os.path.join(root, "tmp"))
    os.chmod(os.path.join(root, "tmp"), 0o1777)  # sticky
    os.symlink("README.md", os.path.join(root, "link-rel"))
    os.symlink("../README.md", os.path.join(root, "bin/link-up"))
    os.symlink("/etc/hostname", os.path.join(root, "link-abs"))
    os.symlink("does/not/exist", os.path.join(root, "link-dangling"))
    os.symlink("src", os.path.join(root, "link-dir"))
    os.link(os.path.join(root, "src/main.c"), os.path.join(root, "hardlink-main.c"))
    os.link(os.path.join(root, "src/main.c"), os.path.join(root, "bin/another-main.c"))
    os.makedirs(os.path.join(root, "ro-dir"))
    write("ro-dir/inside.txt", b"inside a read-only dir\n")
    # mtimes with nanoseconds, set deepest first so directories keep theirs.
    t = 1_600_000_000_123_456_789
    for dirpath, dirnames, filenames in sorted(os.walk(root), key=lambda w: -w[0].count("/")):
        for name in filenames + dirnames:
            full = os.path.join(dirpath, name)
            os.utime(full, ns=(t, t), follow_symlinks=False)
            t += 1_000_000_007
    os.chmod(os.path.join(root, "ro-dir"), 0o555)
    os.utime(os.path.join(root, "ro-dir"), ns=(t, t))


def tar_of_dir(root, compression=""):
    """GNU tar's archive of root's contents (names relative, with "./")."""
    args = ["tar", "-C", root, "--format=pax", "-c"]
    if compression == "gz":
        args.append("-z")
    elif compression == "zst":
        args.append("--zstd")
    args.append(".")
    return subprocess.run(args, check=True, stdout=subprocess.PIPE).stdout


def tar_bytes(members, fmt=tarfile.PAX_FORMAT, mode="w"):
    """An archive built in memory: members are (TarInfo, data or None)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode, format=fmt) as t:
        for info, data in members:
            if data is not None:
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
            else:
                t.addfile(info)
    return buf.getvalue()


def member(name, kind=tarfile.REGTYPE, linkname="", mode=0o644, mtime=1_500_000_000):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.mode = mode
    info.mtime = mtime
    return info


@contextlib.contextmanager
def tmpfs(size, inodes=None):
    """A small tmpfs mounted for the test (needs root); yields its path or None."""
    path = tempfile.mkdtemp(prefix="agentd-tmpfs-")
    options = "size=%d" % size + (",nr_inodes=%d" % inodes if inodes else "")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", path],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
    try:
        yield path if mounted else None
    finally:
        if mounted:
            subprocess.run(["umount", "-l", path], check=False)
        os.rmdir(path)


def daemon_memory(pid):
    """(VmRSS, VmHWM) of a process in bytes."""
    values = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) * 1024
    return values["VmRSS"], values["VmHWM"]
