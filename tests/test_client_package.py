"""The installed client package: cmake --install, then an out-of-tree project
finds it with find_package(agentd CONFIG), links agentd::client, and talks
to a live daemon. pkg-config sees it too."""

import os
import shutil
import subprocess
import tempfile
import unittest

from lib.agentd_test import AGENTD_BIN, Daemon

BUILD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(AGENTD_BIN)))
HERE = os.path.dirname(os.path.abspath(__file__))


class ClientPackageTest(unittest.TestCase):
    def test_out_of_tree_consumer_builds_and_runs_against_a_daemon(self):
        tmp = tempfile.mkdtemp(prefix="agentd-package-")
        try:
            prefix = os.path.join(tmp, "prefix")
            subprocess.run(["cmake", "--install", BUILD_DIR, "--prefix", prefix],
                           check=True, capture_output=True)
            build = os.path.join(tmp, "consumer-build")
            subprocess.run(["cmake", "-S", os.path.join(HERE, "client_consumer"), "-B", build,
                            "-G", "Ninja", "-DCMAKE_PREFIX_PATH=" + prefix],
                           check=True, capture_output=True)
            r = subprocess.run(["cmake", "--build", build], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            with Daemon() as d:
                r = subprocess.run([os.path.join(build, "consumer"),
                                    "http://127.0.0.1:%d" % d.port, d.token],
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("protocol=1 bootstrapped=true", r.stdout)
            env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(prefix, "lib", "pkgconfig"))
            r = subprocess.run(["pkg-config", "--libs", "--cflags", "agentd-client"],
                               capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("-lagentd_client", r.stdout)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
