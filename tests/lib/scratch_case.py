"""A daemon test case with a scratch directory: files are set up and read
back on disk, beside the daemon's answers about them."""

import hashlib
import json
import os
import shutil
import tempfile

from lib.agentd_test import DaemonTestCase
from lib.fs_helpers import url


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

    def start_put(self, p, data, headers):
        """Sends the head and all but the last byte: the daemon has checked
        the precondition once and waits for the rest of the body."""
        conn = self.daemon.connection()
        conn.putrequest("PUT", url("/v1/fs/file", path=p))
        for k, v in self.daemon.headers(extra=dict(headers, **{"Content-Length": str(len(data))})).items():
            conn.putheader(k, v)
        conn.endheaders()
        conn.send(data[:-1])
        return conn

    def finish_put(self, conn, data):
        conn.send(data[-1:])
        resp = conn.getresponse()
        body = json.loads(resp.read())
        conn.close()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body
