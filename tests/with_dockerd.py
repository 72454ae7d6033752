"""with_dockerd.py COMMAND...: runs COMMAND with a private Docker engine
(tests/lib/dockerd.py) that has a debian:12 image (tests/lib/debian_image.py),
through DOCKER, DOCKER_HOST, DOCKER_BUILDKIT=0 and DOCKER_BUILD_NETWORK=host
(the engine has no bridge; builds reach the Debian mirror through the
host's network). When the engine cannot run here it says why and runs
COMMAND without them. Exits with COMMAND's status. The CTest release build
runs packaging/build-release --check-reproducible=docker under it."""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import debian_image, dockerd  # noqa: E402


def main(argv):
    if not argv:
        print("usage: with_dockerd.py COMMAND...", file=sys.stderr)
        return 2
    engine = dockerd.Dockerd()
    env = dict(os.environ)
    try:
        try:
            engine.start()
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
