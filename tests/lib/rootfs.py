"""Root filesystems for the packaging tests, and running agentd inside one.

debian_minbase() is a `debootstrap --variant=minbase bookworm` tree, built
once and cached under $AGENTD_CI_CACHE (default /var/cache/agentd-ci, the
same place and name the guest scripts use). busybox_tree() makes a tree of
Debian's static busybox with one symlink per applet in a fresh directory
(milliseconds; not cached). GuestRoot runs a command in a writable overlay
of a tree, inside its own mount and PID namespaces, so nothing outlives it:
no mount, no process.
"""

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import threading

CACHE = os.environ.get("AGENTD_CI_CACHE", "/var/cache/agentd-ci")
MIRROR = os.environ.get("DEBIAN_MIRROR", "http://deb.debian.org/debian")


def debian_minbase():
    path = os.path.join(CACHE, "rootfs", "debian-bookworm-minbase")
    if os.path.isdir(path):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(os.path.join(CACHE, "rootfs", ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.isdir(path):
            return path
        tmp = tempfile.mkdtemp(prefix=".build.", dir=os.path.dirname(path))
        os.chmod(tmp, 0o755)
        r = subprocess.run(["debootstrap", "--variant=minbase", "bookworm", tmp, MIRROR],
                           capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise AssertionError("debootstrap failed:\n" + r.stdout[-3000:] + r.stderr[-3000:])
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for name in os.listdir(os.path.join(tmp, junk)):
                full = os.path.join(tmp, junk, name)
                if os.path.isfile(full):
                    os.unlink(full)
        try:
            os.rename(tmp, path)
        except OSError:
            if not os.path.isdir(path):  # else the guest scripts built it meanwhile
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    return path


def busybox_tree(dest, busybox="/bin/busybox"):
    """A minimal image: busybox, its applets, /etc/passwd and /etc/group."""
    os.makedirs(os.path.join(dest, "bin"))
    shutil.copy(busybox, os.path.join(dest, "bin", "busybox"))
    applets = subprocess.run([busybox, "--list"], capture_output=True, text=True,
                             check=True).stdout.split()
    for applet in applets:
        if applet != "busybox":
            os.symlink("busybox", os.path.join(dest, "bin", applet))
    for d in ("etc", "tmp", "root", "proc", "dev", "run"):
        os.makedirs(os.path.join(dest, d), exist_ok=True)
    os.chmod(os.path.join(dest, "tmp"), 0o1777)
    with open(os.path.join(dest, "etc", "passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\n")
    with open(os.path.join(dest, "etc", "group"), "w") as f:
        f.write("root:x:0:\n")
    return dest


_OVERLAY_SCRIPT = (
    'set -e; mount -t overlay overlay -o "lowerdir=$1,upperdir=$2,workdir=$3" "$4"; '
    'tar -xpf "$5" -C "$4"; root=$4; shift 5; exec chroot "$root" "$@"')


def _overlay_argv(lower, work, layer, argv):
    for d in ("upper", "ovl-work", "merged"):
        os.makedirs(os.path.join(work, d), exist_ok=True)
    return (["unshare", "--mount", "--pid", "--fork", "--kill-child", "sh", "-c",
             _OVERLAY_SCRIPT, "sh", lower, os.path.join(work, "upper"),
             os.path.join(work, "ovl-work"), os.path.join(work, "merged"), layer] + list(argv))


def overlay_run(lower, work, layer, argv, timeout=120):
    """Runs argv to completion in an overlay of `lower` with `layer` applied;
    what it wrote stays in WORK/upper. Returns the CompletedProcess."""
    return subprocess.run(_overlay_argv(lower, work, layer, argv), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)


class GuestRoot:
    """An overlay of `lower` with `layer` (a tar) extracted on top, and
    `argv` run in it by chroot, in new mount and PID namespaces. The upper
    directory is a host path (`upper`), so files the guest writes are visible
    after it stops; the lower tree is never written."""

    def __init__(self, lower, layer, argv):
        self.work = tempfile.mkdtemp(prefix="agentd-guestroot-")
        self.upper = os.path.join(self.work, "upper")
        self.proc = subprocess.Popen(_overlay_argv(lower, self.work, layer, argv),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.lines = []
        self.port = None
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.lines.append(line)
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("msg") == "listening" and "port" in entry and self.port is None:
                self.port = entry["port"]
            if entry.get("msg") == "ready":
                self._ready.set()
        self._ready.set()

    def wait_ready(self, timeout=20):
        self._ready.wait(timeout)
        if self.port is None:
            raise AssertionError("agentd did not start in the guest root:\n" +
                                 "\n".join(self.lines))
        return self.port

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()  # --kill-child takes the namespace down with it
        self.proc.wait(20)
        self._reader.join(10)  # the pipe reaches EOF once the namespace is gone
        self.proc.stdout.close()
        if not self._reader.is_alive():
            self.proc.stderr.close()
        shutil.rmtree(self.work, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
