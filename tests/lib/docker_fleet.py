"""Many containers with agentd injected, on a private Docker engine
(tests/lib/dockerd.py): a busybox image built here without a registry,
agentd riding in a named volume (packaging/agentd-inject --print, asked
once; its `docker run` is then repeated per container), each guest's
socket in a host directory bind-mounted into it. Used by
tests/test_packaging_fleet.py and bench/fleet.

    with DockerFleet(agentd_binary, workdir) as fleet:
        guests = fleet.start(32)          # [(name, socket path)]
        ...
Closing removes every container, the image and the volume, then stops the
engine (which deletes its data root): nothing outlives a failed run.
"""

import os
import shlex
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

from lib import dockerd, rootfs

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INJECT = os.path.join(REPO, "packaging", "agentd-inject")
IMAGE = "local/fleet-busybox"
SOCKET_IN_GUEST = "/run/agentd-sock/agentd.sock"
# The image's own command: a service that stays up (the workload agentd
# runs as PID 1 under --init).
WORKLOAD = "trap 'exit 0' TERM; while true; do sleep 1 & wait $!; done"


class DockerFleet:
    def __init__(self, agentd_binary, workdir, prefix="fleet"):
        self.workdir = workdir
        self.prefix = prefix
        self.engine = dockerd.Dockerd()
        self.binary = os.path.join(workdir, "agentd")
        self.token = "fleet-" + os.urandom(8).hex()
        self.token_file = os.path.join(workdir, "token")
        self.names = []
        self.volume = None
        self._run_argv = None
        self._agentd_binary = agentd_binary

    def __enter__(self):
        try:
            self.open()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def docker(self, *args, **kw):
        return self.engine.docker(*args, **kw)

    def open(self):
        """Starts the engine, builds the image and plans the injected run."""
        self.engine.start()
        subprocess.run(["strip", "-o", self.binary, self._agentd_binary], check=True)
        with open(self.token_file, "w") as f:
            f.write(self.token + "\n")
        os.chmod(self.token_file, 0o600)
        base = rootfs.busybox_tree(os.path.join(self.workdir, "busybox"))
        tar = subprocess.run(["tar", "-C", base, "-cf", "-", "."], capture_output=True,
                             check=True).stdout
        self.docker("import", "--change", "CMD " + WORKLOAD, "-", IMAGE, input=tar)
        env = dict(os.environ, DOCKER="%s -H unix://%s" % (dockerd.DOCKER, self.engine.socket),
                   DOCKER_CONFIG=self.engine.dir, DOCKER_BUILDKIT="0")
        r = subprocess.run([INJECT, "--print", "--binary", self.binary, "--token-file",
                            self.token_file, "--listen", "unix:" + SOCKET_IN_GUEST, IMAGE,
                            "-d", "--network", "none", "--name", "@NAME@", "-v",
                            "@SOCK@:/run/agentd-sock"],
                           capture_output=True, text=True, env=env, timeout=300)
        if r.returncode != 0:
            raise AssertionError("agentd-inject --print failed:\n" + r.stderr)
        argv = shlex.split(r.stdout)
        self._run_argv = argv[argv.index("run"):]  # after `docker -H ...`
        mount = [a for a in argv if a.startswith("type=volume,src=")][0]
        self.volume = mount.split(",")[1][len("src="):]

    def create(self, count, parallel=4):
        """Creates `count` containers (not started); returns [(name, socket)]."""
        def create_one(i):
            name = "%s-%d" % (self.prefix, i)
            sock_dir = os.path.join(self.workdir, "sock-%d" % i)
            os.makedirs(sock_dir, exist_ok=True)
            argv = [a.replace("@NAME@", name).replace("@SOCK@", sock_dir)
                    for a in self._run_argv]
            create = ["create"] + [a for a in argv[1:] if a not in ("-d", "--detach")]
            self.names.append(name)
            self.docker(*create)
            return name, os.path.join(sock_dir, "agentd.sock")
        with ThreadPoolExecutor(parallel) as pool:
            return list(pool.map(create_one, range(count)))

    def start(self, names, parallel=4):
        """Starts containers; returns {name: monotonic time its start was asked}."""
        def start_one(name):
            asked = time.monotonic()
            self.docker("start", name)
            return name, asked
        with ThreadPoolExecutor(parallel) as pool:
            return dict(pool.map(start_one, names))

    def stop(self, names, parallel=4):
        with ThreadPoolExecutor(parallel) as pool:
            list(pool.map(lambda n: self.docker("stop", "-t", "30", n), names))

    def close(self):
        try:
            if self.engine.proc is not None and self.engine.proc.poll() is None:
                if self.names:
                    self.docker("rm", "-f", *self.names, check=False, timeout=120)
                self.docker("image", "rm", "-f", IMAGE, check=False)
                if self.volume:
                    self.docker("volume", "rm", "-f", self.volume, check=False)
        finally:
            self.engine.close()
