"""agentctl exec --egress MODE [--allow CIDR:PORT|HOST:PORT] [--deny ...]
[--dns] and agentctl egress ID against a live daemon (docs/PROTOCOL.md,
"Egress"). The probe connects to a documentation address: under "none" the
policy refuses it with EPERM before any route is looked up, so no network
of the machine is touched. Host names are "localhost" (the guest's
/etc/hosts) and a name under ".invalid", which never resolves."""

import os
import socket
import sys
import unittest

from test_agentctl_exec import AgentctlTestCase

PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
CONNECT = ("import errno, socket\ns = socket.socket()\n"
           "try:\n    s.connect(('192.0.2.7', 443)); print('reached')\n"
           "except OSError as e:\n    print(errno.errorcode[e.errno])\n")


class EgressCommandTest(AgentctlTestCase):
    def setUp(self):
        s, health = self.daemon.json("GET", "/v1/health", auth=False)
        if not health["limits"]["egress_modes"]:
            self.skipTest("no egress mode works here: " + health["limits"].get("egress_why", ""))

    def test_exec_with_an_egress_policy_and_its_accounting(self):
        r = self.ctl("exec", "--id", "ctl-egress", "--egress", "none", "--allow",
                     "203.0.113.0/24:443", "--deny", "127.0.0.2", "--", PYTHON, "-c", CONNECT)
        self.assertEqual((r.returncode, r.stdout), (0, b"EPERM\n"), r.stderr)
        r = self.ctl("egress", "ctl-egress")
        self.assertEqual(r.returncode, 0, r.stderr)
        text = r.stdout.decode()
        self.assertIn("ctl-egress: 1 attempts, 0 allowed, 1 refused", text)
        self.assertRegex(text, r"refused\s+tcp\s+192\.0\.2\.7:443\s+1\s")
        r, env = self.envelope("egress", "ctl-egress")
        self.assertEqual(env["result"]["policy"], {"mode": "none", "allow": ["203.0.113.0/24:443"],
                                                   "deny": ["127.0.0.2"], "dns": False})

    def test_the_exec_object_names_the_policy(self):
        r, env = self.envelope("start", "--id", "ctl-egress-start", "--egress", "public", "--dns",
                               "--", "true")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(env["result"]["egress"]["mode"], "public")
        self.assertTrue(env["result"]["egress"]["dns"])

    def test_allow_takes_a_host_name_and_the_exec_names_its_addresses(self):
        try:
            local = {a[4][0] for a in socket.getaddrinfo("localhost", None, type=socket.SOCK_STREAM)}
        except socket.gaierror as e:
            self.skipTest("localhost does not resolve here: %s" % e)
        if "127.0.0.1" not in local:
            self.skipTest("localhost is not 127.0.0.1 here: %s" % sorted(local))
        listeners = []
        for _ in range(2):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            s.listen(4)
            listeners.append(s)
            self.addCleanup(s.close)
        allowed, other = (s.getsockname()[1] for s in listeners)
        probe = ("import errno, socket\n"
                 "for port in (%d, %d):\n"
                 "    s = socket.socket()\n"
                 "    try:\n        s.connect(('127.0.0.1', port)); print('reached')\n"
                 "    except OSError as e:\n        print(errno.errorcode[e.errno])\n"
                 % (allowed, other))
        # Loopback is denied as a whole; the name's rule (a /32 with a
        # port) is more specific, so only its port gets through.
        r, env = self.envelope("exec", "--id", "ctl-egress-name", "--egress", "allow",
                               "--allow", "localhost:%d" % allowed, "--deny", "127.0.0.0/8",
                               "--", PYTHON, "-c", probe)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(env["result"]["stdout"], "reached\nEPERM\n", env)
        r, env = self.envelope("egress", "ctl-egress-name")
        self.assertEqual(r.returncode, 0, r.stderr)
        resolved = env["result"]["policy"]["resolved"]
        self.assertEqual(list(resolved), ["localhost"])
        self.assertIn("127.0.0.1", resolved["localhost"])
        r = self.ctl("egress", "ctl-egress-name")
        self.assertRegex(r.stdout.decode(), r"resolved at start: localhost (\S+ )*127\.0\.0\.1")
        r = self.ctl("poll", "ctl-egress-name")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout.decode(), r"resolved\s+localhost (\S+ )*127\.0\.0\.1")
        # The same policy on a context's interpreter.
        r = self.ctl("context", "create", "ctl-egress-ctx", "--egress", "allow",
                     "--allow", "localhost:%d" % allowed, "--deny", "127.0.0.0/8")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.addCleanup(self.ctl, "context", "delete", "ctl-egress-ctx")
        r, env = self.envelope("context", "run", "ctl-egress-ctx", probe)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(env["result"]["stdout"], "reached\nEPERM\n", env)

    def test_a_host_name_that_does_not_resolve_runs_nothing(self):
        r, env = self.envelope("exec", "--id", "ctl-egress-unresolved", "--egress", "all",
                               "--deny", "no-such-host.invalid:443", "--", "true")
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(env["error"]["code"], "egress_name_unresolved", env)
        self.assertEqual(env["error"]["name"], "no-such-host.invalid")
        r = self.ctl("poll", "ctl-egress-unresolved")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(b"exec_not_found", r.stderr)

    def test_rules_without_a_mode_are_a_usage_error(self):
        r = self.ctl("exec", "--allow", "10.0.0.0/8", "--", "true")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(b"need --egress", r.stderr)

    def test_an_exec_without_a_policy_has_no_accounting(self):
        r = self.ctl("exec", "--id", "ctl-plain", "--", "true")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.ctl("egress", "ctl-plain")
        self.assertIn(b"no egress accounting", r.stdout)


if __name__ == "__main__":
    unittest.main()
