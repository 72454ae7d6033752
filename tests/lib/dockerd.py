"""A private Docker engine for one test: Debian's docker.io dockerd started by
hand with iptables and the bridge off, its own data root, exec root and
socket, and stopped (with everything it mounted) by close(). start() raises
unittest.SkipTest when the engine cannot run on this machine. A data root
given by the caller outlives the engine (its images and build cache serve
the next engine started on it, never two at once); the default one is
removed with the engine."""

import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

DOCKERD = "/usr/sbin/dockerd"
DOCKER = "/usr/bin/docker"  # the client of the same package (BuildKit-free builds)


class Dockerd:
    def __init__(self, data_root=None):
        self.dir = tempfile.mkdtemp(prefix="agentd-dockerd-")
        self.data_root = data_root or os.path.join(self.dir, "data")
        self.socket = os.path.join(self.dir, "docker.sock")
        self.proc = None
        self.log = os.path.join(self.dir, "dockerd.log")

    def start(self, timeout=40):
        if os.geteuid() != 0:
            raise unittest.SkipTest("dockerd needs root")
        if not (os.access(DOCKERD, os.X_OK) and os.access(DOCKER, os.X_OK)):
            raise unittest.SkipTest("Debian's docker.io (dockerd, docker) is not installed")
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [DOCKERD, "--iptables=false", "--ip6tables=false", "--ip-masq=false",
                 "--bridge=none", "--data-root", self.data_root,
                 "--exec-root", os.path.join(self.dir, "exec"),
                 "--pidfile", os.path.join(self.dir, "dockerd.pid"),
                 "-H", "unix://" + self.socket, "--log-level", "warn"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        deadline = time.monotonic() + timeout
        while self.docker("version", check=False, timeout=10).returncode != 0:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                tail = open(self.log, errors="replace").read()[-2000:]
                self.close()
                raise unittest.SkipTest("dockerd cannot run here:\n" + tail)
            time.sleep(0.3)
        return self

    def docker(self, *args, check=True, timeout=300, input=None):
        env = dict(os.environ, DOCKER_BUILDKIT="0", DOCKER_CONFIG=self.dir)
        r = subprocess.run([DOCKER, "-H", "unix://" + self.socket] + list(args), env=env,
                           input=input, capture_output=True, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError("docker %s failed (%d):\n%s%s" % (
                " ".join(args), r.returncode, r.stdout.decode(errors="replace"),
                r.stderr.decode(errors="replace")))
        return r

    def close(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # dockerd stops containerd and unmounts
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self._unmount_leftovers()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _unmount_leftovers(self):
        with open("/proc/self/mounts") as f:
            points = [line.split()[1] for line in f if self.dir in line.split()[1]]
        for point in sorted(points, key=len, reverse=True):
            subprocess.run(["umount", "-l", point], capture_output=True)
