#!/usr/bin/env python3
"""Runs a command beside scripts/dev's daemon on a stock guest, so README
snippets can run exactly as printed:

    stock_guest.py AGENTD_BIN [--share DIR]... -- CMD [ARG...]

In private mount and network namespaces (root only), a fresh root is made:
the host's top-level directories bound in, an empty /tmp, and no
/workspace (a stock guest has none). There, as scripts/dev does, a
development token is written to /tmp/agentd-dev/token and the daemon
listens on 127.0.0.1:7700 (this network namespace's own loopback, so no
other daemon is in the way); then CMD runs, and its exit status is this
script's. The host's file system is not changed outside the namespace's
own tmpfs mounts. Host directories under /tmp that CMD needs (--share;
the daemon's, this repository's and CMD's own are shared anyway) appear at
the same paths.
"""

import http.client
import os
import secrets
import subprocess
import sys
import tempfile
import time

# Top-level entries not bound from the host: a fresh /tmp, and neither
# /workspace nor the container's leftovers.
NOT_BOUND = {"tmp", "workspace", "lost+found", "old_root"}
DEV_DIR = "/tmp/agentd-dev"  # scripts/dev's default AGENTD_DEV_DIR


def available():
    """None when this can run here, else why not."""
    if os.geteuid() != 0:
        return "needs root (mount and network namespaces)"
    if subprocess.run(["unshare", "--mount", "--net", "true"], capture_output=True).returncode:
        return "unshare --mount --net is refused here"
    return None


def fresh_root(root, shares):
    """A tmpfs on `root` with the host's top-level directories bound in,
    and `shares` under /tmp (inside the namespace)."""
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", root], check=True)
    for name in os.listdir("/"):
        src, dst = os.path.join("/", name), os.path.join(root, name)
        if name in NOT_BOUND:
            continue
        if os.path.islink(src):
            os.symlink(os.readlink(src), dst)
        elif os.path.isdir(src):
            os.mkdir(dst)
            subprocess.run(["mount", "--rbind", src, dst], check=True)
    os.mkdir(os.path.join(root, "tmp"), 0o1777)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", os.path.join(root, "tmp")], check=True)
    for share in shares:
        if share.startswith("/tmp/") and os.path.isdir(share):
            os.makedirs(root + share, exist_ok=True)
            subprocess.run(["mount", "--rbind", share, root + share], check=True)
    return root


def wait_ready(daemon):
    while daemon.poll() is None:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", 7700, timeout=5)
            conn.request("GET", "/v1/health")
            if conn.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.02)
    raise SystemExit("stock_guest: agentd exited with %s" % daemon.returncode)


def inside(agentd, shares, cmd):
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    os.chroot(fresh_root(os.environ["AGENTD_STOCK_GUEST_ROOT"], shares))
    os.chdir("/")
    os.makedirs(DEV_DIR, 0o700)
    token = os.path.join(DEV_DIR, "token")
    with open(os.open(token, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(secrets.token_hex(16) + "\n")
    daemon = subprocess.Popen([agentd, "--listen", "127.0.0.1:7700", "--token-file", token,
                               "--state-dir", os.path.join(DEV_DIR, "state"), "--log-level",
                               "warn"], stdin=subprocess.DEVNULL)
    try:
        wait_ready(daemon)
        return subprocess.run(cmd).returncode
    finally:
        daemon.terminate()
        daemon.wait(30)


def parse(argv):
    """(agentd, shares, cmd) of the command line."""
    if len(argv) < 2 or "--" not in argv[2:]:
        raise SystemExit(__doc__)
    agentd, rest = os.path.realpath(argv[1]), argv[2:]
    sep = rest.index("--")
    opts, cmd = rest[:sep], rest[sep + 1:]
    if not cmd or len(opts) % 2 or any(o != "--share" for o in opts[::2]):
        raise SystemExit(__doc__)
    here = os.path.dirname(os.path.realpath(__file__))
    shares = [os.path.realpath(d) for d in opts[1::2]] + [
        os.path.dirname(agentd), os.path.dirname(os.path.dirname(here))]
    for arg in cmd:  # a script CMD runs (its directory), when it is one
        if os.path.isabs(arg) and os.path.isfile(arg):
            shares.append(os.path.dirname(os.path.realpath(arg)))
    return agentd, shares, cmd


def main(argv):
    agentd, shares, cmd = parse(argv)
    if os.environ.get("AGENTD_STOCK_GUEST_INSIDE") == "1":
        return inside(agentd, shares, cmd)
    why = available()
    if why:
        print("stock_guest: %s" % why, file=sys.stderr)
        return 77
    # The mount point of the fresh root: an empty directory the namespace
    # mounts on (the host never sees what is mounted there), removed after.
    root = tempfile.mkdtemp(prefix="agentd-stock-guest-")
    try:
        return subprocess.run(["unshare", "--mount", "--net", "--propagation", "private",
                               sys.executable, os.path.abspath(__file__)] + argv[1:],
                              env=dict(os.environ, AGENTD_STOCK_GUEST_INSIDE="1",
                                       AGENTD_STOCK_GUEST_ROOT=root)).returncode
    finally:
        os.rmdir(root)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
