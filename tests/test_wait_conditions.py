"""Waiting for a port and for a path: GET /v1/ports?wait_for=PORT and
GET /v1/fs/stat?until=exists|gone answer the moment the condition holds
(or at wait_ms, saying it does not), refuse bad parameters naming them,
and a path wait is confined like every fs route."""

import os
import shutil
import tempfile
import threading
import unittest
import urllib.parse

from lib.agentd_test import Daemon, DaemonTestCase, error_code
from lib.echo_server import free_port
from lib.exec_util import start


def url(route, **params):
    return route + "?" + urllib.parse.urlencode(params)


class Background:
    """A request answered on another thread (the test meanwhile acts)."""

    def __init__(self, daemon, path):
        self.result = None
        self.thread = threading.Thread(target=self._run, args=(daemon, path))
        self.thread.start()

    def _run(self, daemon, path):
        self.result = daemon.json("GET", path, timeout=120)

    def join(self):
        self.thread.join(150)
        assert not self.thread.is_alive(), "the wait did not answer"
        return self.result


class WaitForPortTest(DaemonTestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="agentd-waitport-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def test_a_port_wait_answers_once_the_port_listens(self):
        port = free_port()
        marker = os.path.join(self.dir, "go")
        listen = ("import os, socket, time\n"
                  "while not os.path.exists(%r): time.sleep(0.01)\n"
                  "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                  "s.bind(('127.0.0.1', %d)); s.listen(); time.sleep(600)\n" % (marker, port))
        start(self.daemon, "listener", {"argv": ["python3", "-c", listen]})
        self.addCleanup(self.daemon.json, "POST", "/v1/execs/listener/kill", {"signal": "KILL"})
        status, body = self.daemon.json("GET", url("/v1/ports", wait_for=port, wait_ms=0))
        self.assertEqual((status, body["wait_for"], body["listening"]), (200, port, False), body)
        # Only the listen can end this wait before its 120 s deadline, and
        # the answer says the port listens.
        waiting = Background(self.daemon, url("/v1/ports", wait_for=port, wait_ms=120000))
        open(marker, "w").close()
        status, body = waiting.join()
        self.assertEqual(status, 200, body)
        self.assertTrue(body["listening"], body)
        self.assertIn(port, [p["port"] for p in body["ports"]])

    def test_a_port_that_never_listens_answers_at_the_deadline_saying_so(self):
        port = free_port()
        status, body = self.daemon.json("GET", url("/v1/ports", wait_for=port, wait_ms=50))
        self.assertEqual(status, 200, body)
        self.assertEqual((body["wait_for"], body["listening"]), (port, False))
        self.assertNotIn(port, [p["port"] for p in body["ports"]])

    def test_bad_port_wait_parameters_are_refused_naming_the_field(self):
        for query, field in (("wait_for=0", "wait_for"), ("wait_for=65536", "wait_for"),
                             ("wait_ms=10", "wait_ms"), ("wait_for=80&wait_ms=300001", "wait_ms"),
                             ("wait_for=80&until=x", "until")):
            status, body = self.daemon.json("GET", "/v1/ports?" + query)
            self.assertError(status, body, 400, "invalid_request")
            self.assertEqual(body["error"]["field"], field, query)


class WaitForPathTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.base = tempfile.mkdtemp(prefix="agentd-waitpath-")
        cls.root = os.path.join(cls.base, "root")
        cls.outside = os.path.join(cls.base, "outside")
        os.makedirs(cls.root)
        os.makedirs(cls.outside)
        os.symlink("../outside", os.path.join(cls.root, "out"))
        cls.daemon = Daemon("--fs-root", cls.root)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.close()
        shutil.rmtree(cls.base, ignore_errors=True)

    def r(self, *parts):
        return os.path.join(self.root, *parts)

    def test_until_exists_answers_once_the_path_and_its_parents_appear(self):
        target = self.r("later", "deeper", "ready.txt")
        status, body = self.daemon.json("GET", url("/v1/fs/stat", path=target, until="exists"))
        self.assertEqual(status, 200, body)
        self.assertEqual((body["exists"], body["met"], body["until"]), (False, False, "exists"))
        waiting = Background(self.daemon, url("/v1/fs/stat", path=target, until="exists",
                                              wait_ms=120000))
        os.makedirs(os.path.dirname(target))
        # Appears whole (written aside, renamed in): the wait may answer the
        # moment the name exists, so an open-then-write could be seen empty.
        with open(target + ".part", "w") as f:
            f.write("12345")
        os.rename(target + ".part", target)
        status, body = waiting.join()
        self.assertEqual(status, 200, body)
        self.assertEqual((body["exists"], body["met"]), (True, True), body)
        self.assertEqual((body["type"], body["size"]), ("file", 5))

    def test_until_gone_answers_once_the_path_is_removed(self):
        target = self.r("lock")
        open(target, "w").close()
        waiting = Background(self.daemon, url("/v1/fs/stat", path=target, until="gone",
                                              wait_ms=120000))
        os.unlink(target)
        status, body = waiting.join()
        self.assertEqual(status, 200, body)
        self.assertEqual((body["exists"], body["met"], body["until"]), (False, True, "gone"))
        self.assertEqual(body["path"], target)

    def test_a_condition_that_already_holds_answers_at_once(self):
        os.makedirs(self.r("here"), exist_ok=True)
        status, body = self.daemon.json("GET", url("/v1/fs/stat", path=self.r("here"),
                                                   until="exists", wait_ms=300000))
        self.assertEqual((body["met"], body["type"]), (True, "dir"), body)
        status, body = self.daemon.json("GET", url("/v1/fs/stat", path=self.r("nothing"),
                                                   until="gone", wait_ms=300000))
        self.assertEqual((body["met"], body["exists"]), (True, False), body)

    def test_a_path_that_never_appears_answers_at_the_deadline_saying_so(self):
        status, body = self.daemon.json("GET", url("/v1/fs/stat", path=self.r("never"),
                                                   until="exists", wait_ms=50))
        self.assertEqual((status, body["met"], body["exists"]), (200, False, False), body)

    def test_a_path_wait_is_confined(self):
        for p in (self.r("out", "x"), self.root + "/../outside/x", "/etc/hostname"):
            status, body = self.daemon.json("GET", url("/v1/fs/stat", path=p, until="exists",
                                                       wait_ms=300000))
            self.assertEqual((status, error_code(body)), (400, "unsafe_path"), (p, body))
        # A file appearing outside does not satisfy a wait through the link.
        open(os.path.join(self.outside, "x"), "w").close()
        status, body = self.daemon.json("GET", url("/v1/fs/stat", path=self.r("out", "x"),
                                                   until="exists", wait_ms=0))
        self.assertEqual((status, error_code(body)), (400, "unsafe_path"), body)

    def test_bad_path_wait_parameters_are_refused_naming_the_field(self):
        for query, field in (({"until": "maybe"}, "until"), ({"wait_ms": "5"}, "wait_ms"),
                             ({"until": "gone", "wait_ms": "300001"}, "wait_ms")):
            status, body = self.daemon.json("GET", url("/v1/fs/stat", path=self.r("x"), **query))
            self.assertEqual((status, error_code(body)), (400, "invalid_request"), body)
            self.assertEqual(body["error"]["field"], field, query)


if __name__ == "__main__":
    unittest.main()
