"""Query parameters are read strictly on every route (docs/PROTOCOL.md,
"Conventions"): a parameter the route does not define, one given twice, or
one with a malformed escape is 400 invalid_request naming it in `field`,
and the request does nothing. (tests/test_openapi.py walks every described
operation the same way; this module checks per route family that nothing
happened.)"""

import json
import os
import shutil
import tempfile
import unittest

from lib.agentd_test import DaemonTestCase, error_code
from lib.exec_util import start, wait_exit


class QueryTestCase(DaemonTestCase):
    def assertRefusedNaming(self, field, method, target, body=None, auth=True, headers=None):
        status, _, data = self.daemon.request(method, target, body, auth=auth, headers=headers)
        doc = json.loads(data) if data else None
        self.assertEqual((status, error_code(doc)), (400, "invalid_request"),
                         "%s %s: %r" % (method, target, data[:300]))
        self.assertEqual(doc["error"].get("field"), field, "%s %s" % (method, target))


class StartWaitTypoRegressionTest(QueryTestCase):
    """Issue 19: `wait=30000` (for `wait_ms`) used to start the command and
    answer at once, without waiting."""

    def test_start_with_wait_typo_for_wait_ms_is_refused_and_starts_nothing(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        marker = os.path.join(tmp, "ran")
        body = {"argv": ["sh", "-c", "echo ran > " + marker]}
        self.assertRefusedNaming("wait", "PUT", "/v1/execs/typo-wait?wait=30000", body)
        status, doc = self.daemon.json("GET", "/v1/execs/typo-wait")
        self.assertEqual((status, error_code(doc)), (404, "exec_not_found"), doc)
        # The control: spelled right, the same start runs and waits for the exit.
        status, doc = self.daemon.json("PUT", "/v1/execs/typo-wait?wait_ms=30000&until=exit", body)
        self.assertEqual(status, 201, doc)
        self.assertEqual(doc["state"], "exited", doc)
        self.assertTrue(os.path.exists(marker))


class ExecRoutesTest(QueryTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        start(cls.daemon, "q-done", {"argv": ["echo", "hi"]})
        wait_exit(cls.daemon, "q-done")
        start(cls.daemon, "q-live", {"argv": ["cat"], "stdin_stream": True})
        start(cls.daemon, "q-pty", {"argv": ["cat"], "pty": {"rows": 24, "cols": 80}})

    @classmethod
    def tearDownClass(cls):
        for exec_id in ("q-live", "q-pty"):
            cls.daemon.json("POST", "/v1/execs/%s/kill" % exec_id, {"signal": "KILL"})
        super().tearDownClass()

    def test_every_exec_route_refuses_an_unknown_parameter_by_name(self):
        for method, target, body in (
                ("GET", "/v1/execs?bogus=1", None),
                ("GET", "/v1/execs/q-done?stdout_from=0&bogus=1", None),
                ("GET", "/v1/execs/q-done/stdout?from=0&bogus=1", None),
                ("GET", "/v1/execs/q-done/stderr?bogus=1", None),
                ("GET", "/v1/execs/q-done/events?bogus=1", None),
                ("POST", "/v1/execs/q-live/stdin?offset=0&bogus=1", b"lost"),
                ("POST", "/v1/execs/q-pty/resize?bogus=1", {"rows": 30, "cols": 100}),
                ("POST", "/v1/execs/q-live/kill?bogus=1", {"signal": "KILL"}),
                ("POST", "/v1/execs/q-done/ack?bogus=1", None)):
            with self.subTest(target=target):
                self.assertRefusedNaming("bogus", method, target, body)
        # Nothing happened: no stdin reached cat, it was not killed, the
        # record was not acked.
        status, doc = self.daemon.json("GET", "/v1/execs/q-live?stdout_from=0")
        self.assertEqual((status, doc["state"], doc["stdout_bytes"]), (200, "running", 0), doc)
        status, doc = self.daemon.json("GET", "/v1/execs/q-done")
        self.assertEqual(status, 200, doc)

    def test_a_misspelled_poll_parameter_is_refused_not_ignored(self):
        self.assertRefusedNaming("stdout_form", "GET", "/v1/execs/q-done?stdout_form=0")
        self.assertRefusedNaming("wait", "GET", "/v1/execs/q-live?wait=10000")

    def test_a_parameter_given_twice_is_refused_by_name(self):
        self.assertRefusedNaming("wait_ms", "GET", "/v1/execs/q-done?wait_ms=1&wait_ms=2")
        self.assertRefusedNaming("offset", "POST", "/v1/execs/q-live/stdin?offset=0&offset=0", b"x")

    def test_a_malformed_value_is_refused_by_name(self):
        self.assertRefusedNaming("max_bytes", "GET", "/v1/execs/q-done?max_bytes=0")
        self.assertRefusedNaming("follow", "GET", "/v1/execs/q-done/stdout?follow=yes")
        self.assertRefusedNaming("until", "GET", "/v1/execs/q-done?until=never")
        self.assertRefusedNaming("stdout_from", "GET", "/v1/execs/q-done?stdout_from=%zz")


class FileRoutesTest(QueryTestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="agentd-query-")
        self.addCleanup(shutil.rmtree, self.root)
        with open(os.path.join(self.root, "f"), "w") as f:
            f.write("x\n")

    def test_every_file_route_refuses_an_unknown_parameter_by_name(self):
        r = self.root
        for method, target, body in (
                ("GET", "/v1/fs/file?path=%s/f&bogus=1" % r, None),
                ("PUT", "/v1/fs/file?path=%s/new&bogus=1" % r, b"data"),
                ("GET", "/v1/fs/stat?path=%s&bogus=1" % r, None),
                ("GET", "/v1/fs/list?path=%s&bogus=1" % r, None),
                ("GET", "/v1/fs/realpath?path=%s&bogus=1" % r, None),
                ("POST", "/v1/fs/mkdir?bogus=1", {"path": r + "/made"}),
                ("POST", "/v1/fs/rename?bogus=1", {"from": r + "/f", "to": r + "/g"}),
                ("DELETE", "/v1/fs?path=%s/f&bogus=1" % r, None),
                ("GET", "/v1/fs/tar?path=%s&bogus=1" % r, None),
                ("PUT", "/v1/fs/tar?path=%s/t&parents=1&bogus=1" % r, b""),
                ("GET", "/v1/fs/watch?path=%s&bogus=1" % r, None)):
            with self.subTest(target=target):
                self.assertRefusedNaming("bogus", method, target, body)
        self.assertEqual(sorted(os.listdir(r)), ["f"], "nothing was written, moved or removed")

    def test_a_parameter_given_twice_or_malformed_is_refused_by_name(self):
        self.assertRefusedNaming("path", "GET", "/v1/fs/stat?path=%s&path=/" % self.root)
        self.assertRefusedNaming("path", "GET", "/v1/fs/stat?path=%zz")


class OtherRoutesTest(QueryTestCase):
    def test_run_ports_health_metrics_and_bootstrap_refuse_an_unknown_parameter(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        marker = os.path.join(tmp, "ran")
        self.assertRefusedNaming("bogus", "POST", "/v1/run?bogus=1",
                                 {"runtime": "shell", "code": "echo ran > " + marker})
        self.assertFalse(os.path.exists(marker))
        self.assertRefusedNaming("bogus", "GET", "/v1/ports?bogus=1")
        self.assertRefusedNaming("bogus", "GET", "/v1/ports/%d/connect?bogus=1" % self.daemon.port,
                                 headers={"Connection": "Upgrade", "Upgrade": "tcp"})
        self.assertRefusedNaming("bogus", "GET", "/v1/metrics?bogus=1")
        self.assertRefusedNaming("bogus", "GET", "/v1/health?bogus=1", auth=False)
        self.assertRefusedNaming("bogus", "POST", "/v1/bootstrap?bogus=1",
                                 {"token": self.daemon.token}, auth=False)

    def test_a_refusal_still_needs_the_token_first(self):
        status, _, data = self.daemon.request("GET", "/v1/execs?bogus=1", auth=False)
        self.assertEqual((status, error_code(json.loads(data))), (401, "unauthorized"))


if __name__ == "__main__":
    unittest.main()
