"""`"network": "none"` (docs/PROTOCOL.md, "No network"): an exec or a run
in a network namespace of its own with only loopback. Each refusal has its
control: the same probe with the guest's network reaches what the
network-less one cannot. The CI runs as root; a daemon without
CAP_SYS_ADMIN shows the refusal."""

import json
import os
import socket
import sys
import unittest

from lib import pyclient  # noqa: F401  (puts client/python on sys.path)
from lib.agentd_test import Daemon, error_code
from lib.exec_util import run

from agentd_client import Client  # noqa: E402

# A Python every user can run (the test's own may live under /root).
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

# Connects to each host:port given and prints {"host:port": "ok" | errno name};
# first starts its own listener on 127.0.0.1 and tries that too ("self"), from
# a double-forked grandchild when asked (descendants inherit the namespace).
PROBE = r"""
import errno, json, os, socket, sys
def attempt(host, port):
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    s.settimeout(20)
    try:
        s.connect((host, port))
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
    finally:
        s.close()
def probe():
    own = socket.socket()
    own.bind(("127.0.0.1", 0))
    own.listen(1)
    out = {"self": attempt("127.0.0.1", own.getsockname()[1])}
    for target in sys.argv[2:]:
        host, port = target.rsplit(":", 1)
        out[target] = attempt(host, int(port))
    return out
if sys.argv[1] == "grandchild":
    r, w = os.pipe()
    if os.fork() == 0:
        if os.fork() == 0:
            os.write(w, json.dumps(probe()).encode())
        os._exit(0)
    os.close(w)
    print(os.read(r, 65536).decode())
else:
    print(json.dumps(probe()))
"""


def outside_address():
    """An address of this machine that is not loopback (the route towards a
    documentation address picks it), or None on a machine without one."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.1", 9))
        address = s.getsockname()[0]
    except OSError:
        return None
    finally:
        s.close()
    return None if address.startswith("127.") else address


class NetworkNoneTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root (the CI runs as root)")
        cls.daemon = Daemon()
        # A listener on every address: reachable from the guest's network
        # by loopback and by the machine's outside address.
        cls.listener = socket.socket()
        cls.listener.bind(("0.0.0.0", 0))
        cls.listener.listen(64)
        cls.port = cls.listener.getsockname()[1]

    @classmethod
    def tearDownClass(cls):
        cls.listener.close()
        cls.daemon.stop()

    def probe(self, exec_id, targets, mode="child", **body):
        obj, out, err = run(self.daemon, exec_id,
                            dict(body, argv=[PYTHON, "-c", PROBE, mode] + targets))
        self.assertEqual(obj["exit_code"], 0, err)
        return obj, json.loads(out)

    def test_the_guests_loopback_is_out_of_reach_and_its_own_works(self):
        targets = ["127.0.0.1:%d" % self.daemon.port, "127.0.0.1:%d" % self.port]
        obj, plain = self.probe("control", targets)
        self.assertEqual(plain, {"self": "ok", targets[0]: "ok", targets[1]: "ok"})
        self.assertNotIn("network", obj)
        obj, none = self.probe("none", targets, network="none")
        self.assertEqual(none, {"self": "ok", targets[0]: "ECONNREFUSED",
                                targets[1]: "ECONNREFUSED"})
        self.assertEqual(obj["network"], "none")

    def test_an_outside_address_is_unreachable_at_once(self):
        address = outside_address()
        if address is None:
            self.skipTest("this machine has no address besides loopback")
        target = "%s:%d" % (address, self.port)
        _, plain = self.probe("outside-control", [target])
        self.assertEqual(plain[target], "ok")
        _, none = self.probe("outside-none", [target], network="none")
        self.assertEqual(none[target], "ENETUNREACH")

    def test_a_double_forked_descendant_has_no_network_either(self):
        target = "127.0.0.1:%d" % self.port
        _, plain = self.probe("gc-control", [target], mode="grandchild")
        self.assertEqual(plain[target], "ok")
        _, none = self.probe("gc-none", [target], mode="grandchild", network="none")
        self.assertEqual(none, {"self": "ok", target: "ECONNREFUSED"})

    def test_a_restricted_exec_without_network(self):
        target = "127.0.0.1:%d" % self.port
        obj, none = self.probe("restricted-none", [target], network="none",
                               profile="restricted")
        self.assertEqual(none, {"self": "ok", target: "ECONNREFUSED"})
        self.assertEqual((obj["profile"], obj["network"]), ("restricted", "none"))

    def test_a_run_without_network_says_so(self):
        code = ("import socket\ntry:\n    socket.create_connection(('127.0.0.1', %d), 20)\n"
                "    print('reached')\nexcept OSError as e:\n    print(e.strerror)\n" % self.port)
        s, body = self.daemon.json("POST", "/v1/run", {"runtime": "python", "code": code,
                                                      "network": "none"})
        self.assertEqual(s, 200, body)
        self.assertEqual((body["stdout"], body["network"]), ("Connection refused\n", "none"))
        s, body = self.daemon.json("POST", "/v1/run", {"runtime": "python", "code": code})
        self.assertEqual((body["stdout"], "network" in body), ("reached\n", False))

    def test_any_other_value_is_refused_naming_the_field(self):
        for value in ("host", "", 1, None):
            s, body = self.daemon.json("PUT", "/v1/execs/bad-network",
                                       {"argv": ["true"], "network": value})
            if value is None:
                # null is "not given", as for every optional member.
                self.assertIn(s, (200, 201), body)
                continue
            self.assertEqual((s, error_code(body)), (400, "invalid_request"), body)
            self.assertEqual(body["error"]["field"], "network")
        s, body = self.daemon.json("POST", "/v1/run", {"runtime": "shell", "code": "true",
                                                      "network": "everything"})
        self.assertEqual((s, error_code(body), body["error"]["field"]),
                         (400, "invalid_request", "network"))

    def test_health_lists_network_as_supported(self):
        s, body = self.daemon.json("GET", "/v1/health", auth=False)
        self.assertIn("network", body["limits"]["supported"])
        self.assertNotIn("network_why", body["limits"])

    def test_the_python_client_carries_it(self):
        c = Client("http://127.0.0.1:%d" % self.daemon.port, token=self.daemon.token)
        try:
            info = c.start_exec("py-none", ["true"], network="none")
            self.assertEqual(info.network, "none")
            self.assertIsNone(c.start_exec("py-net", ["true"]).network)
            r = c.run_code("shell", "cat /proc/net/dev | tail -n +3 | cut -d: -f1",
                           network="none")
            self.assertEqual((r.stdout.split(), r.network), (["lo"], "none"))
        finally:
            c.close()


class NetworkNoneUnavailableTest(unittest.TestCase):
    def test_a_daemon_that_cannot_make_network_namespaces_refuses_and_says_why(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to drop CAP_SYS_ADMIN (the CI runs as root)")
        drop = ["setpriv", "--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin", "--"]
        with Daemon(wrapper=drop) as d:
            s, body = d.json("GET", "/v1/health", auth=False)
            self.assertNotIn("network", body["limits"]["supported"])
            self.assertIn("CAP_SYS_ADMIN", body["limits"]["network_why"])
            s, body = d.json("PUT", "/v1/execs/x", {"argv": ["true"], "network": "none"})
            self.assertEqual((s, error_code(body)), (400, "limit_unsupported"), body)
            self.assertEqual(body["error"]["field"], "network")
            self.assertIn("CAP_SYS_ADMIN", body["error"]["message"])
            # Nothing ran: the id is free for a start with the guest's network.
            obj, _, _ = run(d, "x", {"argv": ["true"]})
            self.assertEqual(obj["exit_code"], 0)


if __name__ == "__main__":
    unittest.main()
