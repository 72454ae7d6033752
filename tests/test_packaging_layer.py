"""packaging/append-agentd --layer: a layer tarball that adds agentd to a
root filesystem with no Docker at all. Applied to a debootstrap minbase tree
and to a busybox-only tree, agentd runs there as PID 1 and serves."""

import hashlib
import http.client
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
import unittest

from lib.agentd_test import AGENTD_BIN
from lib import rootfs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
APPEND = os.path.join(ROOT, "packaging", "append-agentd")
AS_ROOT = os.geteuid() == 0 and shutil.which("unshare") is not None


def make_layer(path, binary=AGENTD_BIN, *extra):
    subprocess.run([APPEND, "--layer", path, "--binary", binary] + list(extra), check=True,
                   capture_output=True)
    return path


class Http:
    def __init__(self, port, token="layer-token"):
        self.port, self.token = port, token

    def call(self, method, path, body=None, auth=True):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            headers = {"Authorization": "Bearer " + self.token} if auth else {}
            conn.request(method, path, json.dumps(body) if body is not None else None, headers)
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def run(self, exec_id, argv):
        status, body = self.call("PUT", "/v1/execs/" + exec_id, {"argv": argv})
        assert status == 201, (status, body)
        deadline = time.monotonic() + 30
        while True:
            status, body = self.call("GET", "/v1/execs/%s?wait_ms=5000" % exec_id)
            obj = json.loads(body)
            if obj["state"] == "exited":
                break
            assert time.monotonic() < deadline, obj
        status, out = self.call("GET", "/v1/execs/%s/stdout" % exec_id)
        return obj["exit_code"], out


class LayerTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="agentd-layer-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_the_layer_holds_only_the_binary_owned_by_root_and_executable(self):
        layer = make_layer(os.path.join(self.tmp, "layer.tar"))
        with tarfile.open(layer) as tar:
            members = tar.getmembers()
            self.assertEqual([m.name for m in members], ["usr/local/bin/agentd"])
            m = members[0]
            self.assertEqual((m.mode, m.uid, m.gid, m.type), (0o755, 0, 0, tarfile.REGTYPE))
            data = tar.extractfile(m).read()
        with open(AGENTD_BIN, "rb") as f:
            self.assertEqual(hashlib.sha256(data).digest(), hashlib.sha256(f.read()).digest())

    def test_the_layer_is_the_same_bytes_every_time_and_may_be_gzipped(self):
        a = make_layer(os.path.join(self.tmp, "a.tar.gz"))
        time.sleep(1.1)  # a timestamp would differ now
        b = make_layer(os.path.join(self.tmp, "b.tar.gz"))
        with open(a, "rb") as fa, open(b, "rb") as fb:
            self.assertEqual(fa.read(), fb.read())
        with tarfile.open(a, "r:gz") as tar:
            self.assertEqual(tar.getnames(), ["usr/local/bin/agentd"])

    def test_the_layer_path_can_be_chosen_but_not_outside_the_image(self):
        layer = make_layer(os.path.join(self.tmp, "l.tar"), AGENTD_BIN, "--path", "/agentd")
        with tarfile.open(layer) as tar:
            self.assertEqual(tar.getnames(), ["agentd"])
        r = subprocess.run([APPEND, "--layer", os.path.join(self.tmp, "x.tar"), "--binary",
                            AGENTD_BIN, "--path", "/usr/../../etc/agentd"], capture_output=True)
        self.assertEqual(r.returncode, 2)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "x.tar")))

    def serve_in(self, lower, probe_argv):
        """Applies the layer to `lower`, runs agentd --init there, checks it."""
        layer = make_layer(os.path.join(self.tmp, "layer.tar"))
        before = sorted(os.listdir(lower))
        argv = ["/usr/local/bin/agentd", "--init", "--listen", "127.0.0.1:0",
                "--state-dir", "/run/agentd", "--", "sleep", "600"]
        with rootfs.GuestRoot(lower, layer, argv) as guest:
            api = Http(guest.wait_ready())
            status, body = api.call("GET", "/v1/health", auth=False)
            self.assertEqual(status, 200, body)
            self.assertEqual(json.loads(body)["status"], "ok")
            status, _ = api.call("POST", "/v1/bootstrap", {"token": api.token}, auth=False)
            self.assertEqual(status, 200)
            code, out = api.run("probe", probe_argv)
            self.assertEqual(code, 0)
            self.assertTrue(os.path.exists(os.path.join(guest.upper, "usr/local/bin/agentd")))
        self.assertEqual(sorted(os.listdir(lower)), before, "the lower tree was written")
        self.assertFalse(os.path.exists(os.path.join(lower, "usr/local/bin/agentd")))
        return out

    @unittest.skipUnless(AS_ROOT and shutil.which("debootstrap"), "needs root and debootstrap")
    def test_agentd_serves_from_a_debootstrap_minbase_tree(self):
        out = self.serve_in(rootfs.debian_minbase(), ["cat", "/etc/debian_version"])
        self.assertTrue(out.startswith(b"12."), out)

    @unittest.skipUnless(AS_ROOT and os.path.exists("/bin/busybox"), "needs root and busybox")
    def test_agentd_serves_from_a_busybox_only_tree(self):
        tree = rootfs.busybox_tree(os.path.join(self.tmp, "busybox-root"))
        self.assertFalse(os.path.exists(os.path.join(tree, "usr")))  # the layer makes usr/
        out = self.serve_in(tree, ["sh", "-c", "busybox | head -n 1"])
        self.assertTrue(out.startswith(b"BusyBox v"), out)


if __name__ == "__main__":
    unittest.main()
