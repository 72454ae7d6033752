"""An image named debian:12 on a private engine (tests/lib/dockerd.py),
without a registry: the debootstrap minbase tree of tests/lib/rootfs.py,
given the apt sources of Docker's official debian:12 image (bookworm,
bookworm-updates, bookworm-security), so a `FROM debian:12` stage installs
what it would from the official image."""

import os
import subprocess
import tempfile

from lib import rootfs

SOURCES = """Types: deb
URIs: {mirror}
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: {security}
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""


def import_debian12(engine, tag="debian:12"):
    tree = rootfs.debian_minbase()
    mirror = rootfs.MIRROR.rstrip("/")
    security = os.environ.get("DEBIAN_SECURITY_MIRROR", "http://deb.debian.org/debian-security")
    with tempfile.TemporaryDirectory(prefix="agentd-debian12-") as tmp:
        extra = os.path.join(tmp, "etc", "apt", "sources.list.d")
        os.makedirs(extra)
        with open(os.path.join(extra, "debian.sources"), "w") as f:
            f.write(SOURCES.format(mirror=mirror, security=security))
        for d in ("etc", "etc/apt", "etc/apt/sources.list.d"):
            os.chmod(os.path.join(tmp, d), 0o755)
        image = os.path.join(tmp, "image.tar")
        subprocess.run(["tar", "-C", tree, "--exclude=./etc/apt/sources.list", "-cf", image,
                        "."], check=True)
        subprocess.run(["tar", "-C", tmp, "--owner=0", "--group=0", "-rf", image,
                        "./etc/apt/sources.list.d/debian.sources"], check=True)
        with open(image, "rb") as f:
            engine.docker("import", "--change", 'CMD ["bash"]', "-", tag, input=f.read())
    return tag
