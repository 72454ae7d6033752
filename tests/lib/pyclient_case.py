"""One daemon per test class, a scratch directory and a Python client per
test: the set-up the Python client's integration modules share."""

import shutil
import tempfile
import unittest

from lib import pyclient  # noqa: F401  (puts client/python on sys.path)
from lib.agentd_test import Daemon

import agentd_client as ac


class DaemonPerClassCase(unittest.TestCase):
    """One daemon for the test class, at `self.url`."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()
        cls.url = "http://127.0.0.1:%d" % cls.daemon.port

    @classmethod
    def tearDownClass(cls):
        cls.daemon.close()


class PyClientCase(DaemonPerClassCase):
    SCRATCH_PREFIX = "agentd-pyclient-"

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix=self.SCRATCH_PREFIX)
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.c = ac.Client(self.url, token="test-token")
        self.addCleanup(self.c.close)
