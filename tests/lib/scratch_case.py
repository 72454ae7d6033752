"""A daemon test case with a scratch directory: files are set up and read
back on disk, beside the daemon's answers about them."""

import hashlib
import os
import shutil
import tempfile

from lib.agentd_test import DaemonTestCase


def tag_of(data):
    """The ETag the daemon answers for content `data` (docs/PROTOCOL.md, "ETags")."""
    return '"sha256:' + hashlib.sha256(data).hexdigest() + '"'


class ScratchDirTestCase(DaemonTestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="agentd-scratch-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, rel):
        return os.path.join(self.dir, rel)

    def put_file(self, rel, data, mode=None):
        with open(self.path(rel), "wb") as f:
            f.write(data)
        if mode is not None:
            os.chmod(self.path(rel), mode)
        return self.path(rel)

    def read(self, rel):
        with open(self.path(rel), "rb") as f:
            return f.read()

    def leftovers(self):
        """The daemon's temporaries left in the scratch directory."""
        return [n for n in os.listdir(self.dir) if n.startswith(".agentd-tmp-")]
