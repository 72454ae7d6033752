"""with_dockerd.py [--data-root DIR] COMMAND...: runs COMMAND with a private Docker engine
(tests/lib/dockerd.py) that has a debian:12 image (tests/lib/debian_image.py),
through DOCKER, DOCKER_HOST, DOCKER_BUILDKIT=0 and DOCKER_BUILD_NETWORK=host
(the engine has no bridge; builds reach the Debian mirror through the
host's network). When the engine cannot run here it says why and runs
COMMAND without them. Exits with COMMAND's status. The CTest release build
runs packaging/build-release --check-reproducible=docker under it.

--data-root DIR keeps the engine's images and build cache in DIR for the
next run (one engine at a time: a lock file beside DIR); its debian:12 is
imported once, so the layers built on it stay valid. scripts/test fills
the cache with build-release --prepare-docker while the tree compiles."""

import fcntl
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import debian_image, dockerd  # noqa: E402


def main(argv):
    data_root = None
    if argv[:1] == ["--data-root"] and len(argv) > 1:
        data_root = os.path.abspath(argv[1])
        argv = argv[2:]
    if not argv:
        print("usage: with_dockerd.py [--data-root DIR] COMMAND...", file=sys.stderr)
        return 2
    if data_root:
        os.makedirs(os.path.dirname(data_root), exist_ok=True)
        # Held until this process exits (the descriptor is not inherited).
        fcntl.flock(os.open(data_root + ".lock", os.O_CREAT | os.O_WRONLY, 0o600), fcntl.LOCK_EX)
    engine = dockerd.Dockerd(data_root)
    env = dict(os.environ)
    try:
        try:
            engine.start()
            if engine.docker("image", "inspect", "debian:12", check=False).returncode != 0:
                debian_image.import_debian12(engine)
            env.update(DOCKER=dockerd.DOCKER, DOCKER_HOST="unix://" + engine.socket,
                       DOCKER_BUILDKIT="0", DOCKER_CONFIG=engine.dir, DOCKER_BUILD_NETWORK="host")
        except (unittest.SkipTest, AssertionError) as e:
            print("with_dockerd: no Docker engine here: %s" % str(e).strip().splitlines()[0],
                  file=sys.stderr)
            env["DOCKER_HOST"] = "unix:///nonexistent/agentd-no-engine.sock"
        return subprocess.run(argv, env=env).returncode
    finally:
        engine.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
