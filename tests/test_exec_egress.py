"""Egress policy and accounting per exec (docs/PROTOCOL.md, "Egress";
docs/SECURITY.md, "Egress").

The test process enters a network namespace of its own before it starts
the daemon, and puts the addresses the policies are about on its loopback:
a private address (10.0.0.1), the metadata addresses (169.254.169.254 and
fd00:ec2::254) and a documentation address standing in for a public one
(203.0.113.7). Listeners on each make every destination reachable, so each
refusal has its control: the same probe under "all" connects. The host's
network is never touched. The CI runs as root; without root or cgroup2 the
module is skipped with the reason the daemon gives."""

import asyncio
import ctypes
import json
import os
import socket
import subprocess
import sys
import tempfile
import unittest

from lib import pyclient  # noqa: F401  (puts client/python on sys.path)
from lib.agentd_test import Daemon, error_code
from lib.exec_util import read_stream, run, start, wait_exit

import agentd_client as ac  # noqa: E402
from agentd_client import Client  # noqa: E402
from agentd_client.aio import AsyncClient  # noqa: E402

PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
CLONE_NEWNET = 0x40000000

PRIVATE = "10.0.0.1"
METADATA = "169.254.169.254"
METADATA6 = "fd00:ec2::254"
PUBLIC = "203.0.113.7"
PORT = 8080
# Host names the test's own /etc/hosts (bound over the real one in a mount
# namespace of the test process) gives the private and public addresses.
PRIVATE_NAME = "egress-private.test"
PUBLIC_NAME = "egress-public.test"
# A name a test moves from PRIVATE to PUBLIC while an exec runs.
MOVING_NAME = "egress-moving.test"

# Tries each target and prints {target: "ok" | errno name}. Targets:
# tcp:HOST:PORT (a v6 socket when HOST has a ':'), tcp6:HOST:PORT (always a
# v6 socket: "::ffff:a.b.c.d" spellings), udp:HOST:PORT (sendto), raw, ping.
# "grandchild" as the first argument: from a double-forked grandchild.
PROBE = r"""
import errno, json, os, socket, sys
def name(e):
    return errno.errorcode.get(e.errno, str(e.errno))
def attempt(target):
    kind, _, rest = target.partition(":")
    try:
        if kind == "raw":
            socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP).close()
            return "ok"
        if kind == "ping":
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP).close()
            return "ok"
        host, port = rest.rsplit(":", 1)
        v6 = kind == "tcp6" or ":" in host
        family = socket.AF_INET6 if v6 else socket.AF_INET
        if kind == "udp":
            s = socket.socket(family, socket.SOCK_DGRAM)
            try:
                s.sendto(b"x", (host, int(port)))
            finally:
                s.close()
            return "ok"
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(20)
        try:
            s.connect((host, int(port)))
        finally:
            s.close()
        return "ok"
    except OSError as e:
        return name(e)
def probe(targets):
    return {t: attempt(t) for t in targets}
if sys.argv[1] == "grandchild":
    r, w = os.pipe()
    if os.fork() == 0:
        if os.fork() == 0:
            os.write(w, json.dumps(probe(sys.argv[2:])).encode())
        os._exit(0)
    os.close(w)
    print(os.read(r, 65536).decode())
else:
    print(json.dumps(probe(sys.argv[2:])))
"""


CLONE_NEWNS = 0x00020000


def write_hosts(hosts_file, base, moving_to):
    """The test's /etc/hosts: the machine's, and the test's names (written
    in place: the bind mount holds the file's inode)."""
    with open(hosts_file, "w") as f:
        f.write(base + "\n%s %s\n%s %s\n%s %s\n" % (PRIVATE, PRIVATE_NAME, PUBLIC, PUBLIC_NAME,
                                                  moving_to, MOVING_NAME))


def enter_test_network(hosts_file):
    """A network namespace for this test process (and the daemon it starts)
    with the addresses the policies are about on its loopback, and a mount
    namespace whose /etc/hosts names them. Returns the machine's hosts text."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET | CLONE_NEWNS) != 0:
        raise unittest.SkipTest("cannot create a network namespace: errno %d" % ctypes.get_errno())
    with open("/etc/hosts") as f:
        hosts = f.read()
    write_hosts(hosts_file, hosts, PRIVATE)
    subprocess.run(["mount", "--make-rprivate", "/"], check=True)
    subprocess.run(["mount", "--bind", hosts_file, "/etc/hosts"], check=True)
    # ICMP "ping" sockets for every group, so the control can open one.
    with open("/proc/sys/net/ipv4/ping_group_range", "w") as f:
        f.write("0 2147483647")
    for cmd in (["ip", "link", "set", "lo", "up"],
                ["ip", "addr", "add", PRIVATE + "/32", "dev", "lo"],
                ["ip", "addr", "add", METADATA + "/32", "dev", "lo"],
                ["ip", "addr", "add", PUBLIC + "/32", "dev", "lo"],
                ["ip", "-6", "addr", "add", METADATA6 + "/128", "dev", "lo", "nodad"]):
        subprocess.run(cmd, check=True)
    return hosts


class EgressTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root (the CI runs as root)")
        cls.tmp = tempfile.TemporaryDirectory()
        cls.hosts_file = os.path.join(cls.tmp.name, "hosts")
        cls.hosts = enter_test_network(cls.hosts_file)
        cls.listeners = []
        for family, host in ((socket.AF_INET, PRIVATE), (socket.AF_INET, METADATA),
                             (socket.AF_INET, PUBLIC), (socket.AF_INET, "127.0.0.1"),
                             (socket.AF_INET6, METADATA6), (socket.AF_INET6, "::1")):
            s = socket.socket(family)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, PORT))
            s.listen(64)
            cls.listeners.append(s)
        cls.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        cls.udp.bind(("0.0.0.0", 5353))
        cls.daemon = Daemon()
        s, health = cls.daemon.json("GET", "/v1/health", auth=False)
        if not health["limits"]["egress_modes"]:
            why = health["limits"].get("egress_why", "")
            cls.daemon.stop()
            raise unittest.SkipTest("no egress mode works here: " + why)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()
        for s in cls.listeners + [cls.udp]:
            s.close()
        cls.tmp.cleanup()

    def probe(self, exec_id, targets, egress, mode="child", **body):
        obj, out, err = run(self.daemon, exec_id,
                            dict(body, argv=[PYTHON, "-c", PROBE, mode] + targets,
                                 egress=egress))
        self.assertEqual(obj["exit_code"], 0, err)
        return obj, json.loads(out)

    def egress(self, exec_id):
        s, body = self.daemon.json("GET", "/v1/execs/%s/egress" % exec_id)
        self.assertEqual(s, 200, body)
        return body

    def entry(self, report, address, port, protocol="tcp", verdict="refused"):
        for d in report["destinations"]:
            if (d["address"], d["port"], d["protocol"], d["verdict"]) == (address, port, protocol,
                                                                           verdict):
                return d
        self.fail("no %s %s:%d %s in %r" % (protocol, address, port, verdict, report))

    TARGETS = ["tcp:%s:%d" % (PRIVATE, PORT), "tcp:%s:%d" % (METADATA, PORT),
               "tcp:%s:%d" % (METADATA6, PORT), "tcp6:::ffff:%s:%d" % (METADATA, PORT),
               "tcp:%s:%d" % (PUBLIC, PORT), "tcp:127.0.0.1:%d" % PORT, "tcp:::1:%d" % PORT,
               "udp:%s:5353" % PRIVATE, "udp:::ffff:%s:5353" % METADATA, "ping"]

    def test_public_refuses_private_and_metadata_in_every_spelling_and_counts_it(self):
        _, control = self.probe("all", self.TARGETS, {"mode": "all"})
        self.assertEqual(set(control.values()), {"ok"}, control)
        obj, public = self.probe("public", self.TARGETS + ["raw"], {"mode": "public"})
        self.assertEqual(public, {
            "tcp:%s:%d" % (PRIVATE, PORT): "EPERM",
            "tcp:%s:%d" % (METADATA, PORT): "EPERM",
            "tcp:%s:%d" % (METADATA6, PORT): "EPERM",
            "tcp6:::ffff:%s:%d" % (METADATA, PORT): "EPERM",
            "tcp:%s:%d" % (PUBLIC, PORT): "ok",
            "tcp:127.0.0.1:%d" % PORT: "ok",
            "tcp:::1:%d" % PORT: "ok",
            "udp:%s:5353" % PRIVATE: "EPERM",
            "udp:::ffff:%s:5353" % METADATA: "EPERM",
            "raw": "EPERM",
            "ping": "EPERM"})
        self.assertEqual(obj["egress"]["mode"], "public")
        report = self.egress("public")
        self.assertTrue(report["accounting"])
        self.assertEqual(report["policy"]["mode"], "public")
        # The raw socket is refused by the capability the exec lost
        # (CAP_NET_RAW), before any hook: refused, not counted.
        self.assertEqual(report["refused"], 7, report)
        self.assertEqual(report["allowed"], 3, report)
        self.assertEqual(report["attempts"], 10)
        metadata = self.entry(report, METADATA, PORT)
        self.assertEqual((metadata["count"], metadata["family"]), (1, "ipv4"))
        self.assertTrue(metadata["first_at"] <= metadata["last_at"])
        # The IPv4-mapped spelling, through an IPv6 socket, under its own name.
        mapped = self.entry(report, "::ffff:" + METADATA, PORT)
        self.assertEqual(mapped["family"], "ipv6")
        self.entry(report, METADATA6, PORT)
        self.assertEqual(self.entry(report, PRIVATE, 5353, "udp")["family"], "ipv4")
        # A UDP send to the mapped spelling reaches the IPv4 hook as IPv4.
        self.entry(report, METADATA, 5353, "udp")
        self.entry(report, PUBLIC, PORT, verdict="allowed")
        self.assertEqual(self.entry(report, "", 0, "icmp")["count"], 1)
        # The control was counted too, all of it allowed.
        control_report = self.egress("all")
        self.assertEqual((control_report["refused"], control_report["allowed"]), (0, 9))

    def test_none_reaches_only_loopback(self):
        targets = ["tcp:%s:%d" % (PUBLIC, PORT), "tcp:127.0.0.1:%d" % PORT,
                   "udp:%s:5353" % PUBLIC]
        _, none = self.probe("none", targets, {"mode": "none"})
        self.assertEqual(none, {targets[0]: "EPERM", targets[1]: "ok", targets[2]: "EPERM"})
        report = self.egress("none")
        self.assertEqual((report["refused"], report["allowed"]), (2, 1))

    def test_allow_reaches_only_the_listed_cidr_and_port(self):
        targets = ["tcp:%s:%d" % (PRIVATE, PORT), "tcp:%s:%d" % (PRIVATE, PORT + 1),
                   "tcp:%s:%d" % (PUBLIC, PORT), "tcp:%s:%d" % (METADATA, PORT)]
        _, got = self.probe("allow", targets, {"mode": "allow",
                                               "allow": ["10.0.0.0/24:%d" % PORT]})
        # Port + 1 is allowed by nothing: refused by the policy, not by the
        # absent listener (that would be ECONNREFUSED).
        self.assertEqual(got, {targets[0]: "ok", targets[1]: "EPERM", targets[2]: "EPERM",
                               targets[3]: "EPERM"})

    def test_allow_takes_a_host_name_resolved_once_and_named_in_the_exec(self):
        targets = ["tcp:%s:%d" % (PRIVATE, PORT), "tcp:%s:%d" % (PRIVATE, PORT + 1),
                   "tcp:%s:%d" % (PUBLIC, PORT)]
        # Control: the same name as a literal address rule answers the same.
        _, literal = self.probe("allow-literal", targets,
                                {"mode": "allow", "allow": ["%s:%d" % (PRIVATE, PORT)]})
        obj, named = self.probe("allow-name", targets,
                                {"mode": "allow", "allow": ["%s:%d" % (PRIVATE_NAME, PORT)]})
        self.assertEqual(named, {targets[0]: "ok", targets[1]: "EPERM", targets[2]: "EPERM"})
        self.assertEqual(named, literal)
        self.assertEqual(obj["egress"]["allow"], ["%s:%d" % (PRIVATE_NAME, PORT)])
        self.assertEqual(obj["egress"]["resolved"], {PRIVATE_NAME: [PRIVATE]})
        s, again = self.daemon.json("GET", "/v1/execs/allow-name")
        self.assertEqual(again["egress"]["resolved"], {PRIVATE_NAME: [PRIVATE]})
        self.assertEqual(self.egress("allow-name")["policy"]["resolved"], {PRIVATE_NAME: [PRIVATE]})
        self.assertNotIn("resolved", self.egress("allow-literal")["policy"])

    def test_a_name_is_resolved_once_at_start_and_later_answers_are_not_followed(self):
        targets = ["tcp:%s:%d" % (PRIVATE, PORT), "tcp:%s:%d" % (PUBLIC, PORT)]
        fifo = os.path.join(self.tmp.name, "go")
        os.mkfifo(fifo)
        self.addCleanup(os.unlink, fifo)
        self.addCleanup(write_hosts, self.hosts_file, self.hosts, PRIVATE)
        # The probe waits for the test's word (the fifo) before it connects.
        obj = start(self.daemon, "moving", {
            "argv": ["sh", "-c", 'read go < "$0"; exec "$@"', fifo, PYTHON, "-c", PROBE,
                     "child"] + targets,
            "egress": {"mode": "allow", "allow": ["%s:%d" % (MOVING_NAME, PORT)]}})[1]
        self.assertEqual(obj["egress"]["resolved"], {MOVING_NAME: [PRIVATE]})
        write_hosts(self.hosts_file, self.hosts, PUBLIC)
        # Control: an exec started now resolves the name to its new address.
        _, moved = self.probe("moved", targets,
                              {"mode": "allow", "allow": ["%s:%d" % (MOVING_NAME, PORT)]})
        self.assertEqual(moved, {targets[0]: "EPERM", targets[1]: "ok"})
        with open(fifo, "w") as f:
            f.write("go\n")
        wait_exit(self.daemon, "moving")
        got = json.loads(read_stream(self.daemon, "moving"))
        self.assertEqual(got, {targets[0]: "ok", targets[1]: "EPERM"})
        self.assertEqual(self.egress("moving")["policy"]["resolved"], {MOVING_NAME: [PRIVATE]})

    def test_a_repeated_start_answers_the_exec_without_resolving_again(self):
        body = {"argv": ["true"], "egress": {"mode": "allow",
                                             "allow": ["%s:%d" % (MOVING_NAME, PORT)]}}
        self.addCleanup(write_hosts, self.hosts_file, self.hosts, PRIVATE)
        s, first = self.daemon.json("PUT", "/v1/execs/repeat-name", body)
        self.assertEqual(s, 201, first)
        write_hosts(self.hosts_file, self.hosts, PUBLIC)
        s, again = self.daemon.json("PUT", "/v1/execs/repeat-name", body)
        self.assertEqual(s, 200, again)
        self.assertEqual(again["egress"]["resolved"], {MOVING_NAME: [PRIVATE]})

    def test_a_context_is_policed_and_resolves_its_names_at_create_and_at_reset(self):
        code = ("import socket\n"
                "for host in (%r, %r):\n"
                "    s = socket.socket()\n"
                "    try: s.connect((host, %d)); print(host, 'ok')\n"
                "    except OSError as e: print(host, e.errno)\n" % (PRIVATE, PUBLIC, PORT))
        reached = lambda host: "%s ok" % host  # noqa: E731
        refused = lambda host: "%s 1" % host  # noqa: E731  (EPERM)
        self.addCleanup(write_hosts, self.hosts_file, self.hosts, PRIVATE)
        self.addCleanup(self.daemon.json, "DELETE", "/v1/contexts/egress-ctx")
        s, ctx = self.daemon.json("POST", "/v1/contexts", {
            "id": "egress-ctx", "runtime": "python", "scan_changes": False,
            "egress": {"mode": "allow", "allow": ["%s:%d" % (MOVING_NAME, PORT)]}})
        self.assertEqual(s, 201, ctx)

        def run_in_context():
            s, r = self.daemon.json("POST", "/v1/contexts/egress-ctx/run", {"code": code})
            self.assertEqual((s, r["exit_code"]), (200, 0), r)
            return r["stdout"].splitlines()

        self.assertEqual(run_in_context(), [reached(PRIVATE), refused(PUBLIC)])
        # The name moves: the running interpreter keeps the address it had.
        write_hosts(self.hosts_file, self.hosts, PUBLIC)
        self.assertEqual(run_in_context(), [reached(PRIVATE), refused(PUBLIC)])
        # A reset starts a fresh interpreter, which resolves the name again.
        s, ctx = self.daemon.json("POST", "/v1/contexts/egress-ctx/reset")
        self.assertEqual(s, 200, ctx)
        self.assertEqual(run_in_context(), [refused(PRIVATE), reached(PUBLIC)])
        s, body = self.daemon.json("POST", "/v1/contexts", {
            "id": "egress-ctx-unresolved", "runtime": "python",
            "egress": {"mode": "all", "deny": ["no-such-host.invalid"]}})
        self.assertEqual((s, error_code(body)), (400, "egress_name_unresolved"), body)
        s, _ = self.daemon.json("GET", "/v1/contexts/egress-ctx-unresolved")
        self.assertEqual(s, 404)

    def test_a_context_run_answers_only_its_own_attempts(self):
        self.addCleanup(self.daemon.json, "DELETE", "/v1/contexts/egress-runs")
        s, ctx = self.daemon.json("POST", "/v1/contexts", {
            "id": "egress-runs", "runtime": "python", "scan_changes": False,
            "egress": {"mode": "public"}})
        self.assertEqual(s, 201, ctx)

        def run_in_context(code, **extra):
            s, r = self.daemon.json("POST", "/v1/contexts/egress-runs/run",
                                    dict(extra, code=code))
            self.assertEqual((s, r.get("exit_code")), (200, 0), r)
            return r

        connect = ("import socket\n"
                   "def connect(host, n):\n"
                   "    for _ in range(n):\n"
                   "        s = socket.socket(socket.AF_INET6 if ':' in host else socket.AF_INET)\n"
                   "        try: s.connect((host, %d))\n"
                   "        except OSError as e: print(host, e.errno)\n"
                   "        finally: s.close()\n" % PORT)
        r = run_in_context(connect)
        self.assertEqual((r["egress"]["accounting"], r["egress"]["attempts"]), (True, 0), r)
        r = run_in_context("connect(%r, 2)\nconnect('127.0.0.1', 1)" % METADATA)
        self.assertEqual((r["egress"]["refused"], r["egress"]["allowed"]), (2, 1), r)
        self.assertEqual(self.entry(r["egress"], METADATA, PORT)["count"], 2)
        self.assertIn("network: 2 connections to %s:%d refused by policy public" % (METADATA, PORT),
                      r["summary"])
        # The next run answers its own attempts only, not the context's so far.
        r = run_in_context("connect(%r, 1)" % PRIVATE, egress={"mode": "public"})
        self.assertEqual((r["egress"]["refused"], r["egress"]["allowed"]), (1, 0), r)
        self.assertEqual([(d["address"], d["count"]) for d in r["egress"]["destinations"]],
                         [(PRIVATE, 1)], r)
        self.assertEqual(r["egress"]["policy"]["mode"], "public")
        # Another policy for one run is refused, naming both; nothing runs.
        s, body = self.daemon.json("POST", "/v1/contexts/egress-runs/run",
                                   {"code": "connect(%r, 1)" % METADATA,
                                    "egress": {"mode": "all"}})
        self.assertEqual((s, error_code(body), body["error"]["field"]),
                         (400, "invalid_request", "egress"), body)
        self.assertIn('"mode":"all"', body["error"]["message"])
        self.assertIn('"mode":"public"', body["error"]["message"])
        r = run_in_context("pass")
        self.assertEqual(r["egress"]["attempts"], 0, r)
        s, ctx = self.daemon.json("GET", "/v1/contexts/egress-runs")
        self.assertEqual(ctx["runs"], 4, ctx)  # the refused one never ran

    def test_deny_takes_a_host_name(self):
        targets = ["tcp:%s:%d" % (PUBLIC, PORT), "tcp:%s:%d" % (PRIVATE, PORT)]
        _, got = self.probe("deny-name", targets, {"mode": "all", "deny": [PUBLIC_NAME]})
        self.assertEqual(got, {targets[0]: "EPERM", targets[1]: "ok"})

    def test_a_name_that_does_not_resolve_is_refused_naming_it(self):
        s, body = self.daemon.json("PUT", "/v1/execs/unresolved",
                                   {"argv": ["true"], "egress": {
                                       "mode": "allow",
                                       "allow": ["%s:%d" % (PRIVATE_NAME, PORT),
                                                 "no-such-host.invalid:443"]}})
        self.assertEqual((s, error_code(body)), (400, "egress_name_unresolved"), body)
        self.assertEqual(body["error"]["name"], "no-such-host.invalid")
        self.assertEqual(body["error"]["field"], "egress")
        s, _ = self.daemon.json("GET", "/v1/execs/unresolved")
        self.assertEqual(s, 404)
        # The same through /v1/run.
        s, body = self.daemon.json("POST", "/v1/run", {
            "runtime": "python", "code": "pass",
            "egress": {"mode": "all", "deny": ["no-such-host.invalid"]}})
        self.assertEqual((s, error_code(body)), (400, "egress_name_unresolved"), body)

    def test_names_are_bounded_and_resolved_is_not_sent(self):
        names = ["h%d.invalid:80" % i for i in range(9)]
        s, body = self.daemon.json("PUT", "/v1/execs/many-names",
                                   {"argv": ["true"], "egress": {"mode": "allow", "allow": names}})
        self.assertEqual((s, error_code(body)), (400, "invalid_request"), body)
        self.assertEqual(body["error"]["max_names"], 8)
        s, body = self.daemon.json("PUT", "/v1/execs/sent-resolved", {
            "argv": ["true"], "egress": {"mode": "allow", "allow": [PRIVATE_NAME],
                                         "resolved": {PRIVATE_NAME: [PUBLIC]}}})
        self.assertEqual((s, error_code(body)), (400, "invalid_request"), body)

    def test_deny_narrows_a_mode(self):
        targets = ["tcp:%s:%d" % (PUBLIC, PORT), "tcp:%s:%d" % (PRIVATE, PORT)]
        _, got = self.probe("deny", targets, {"mode": "all", "deny": [PUBLIC + "/32"]})
        self.assertEqual(got, {targets[0]: "EPERM", targets[1]: "ok"})

    def test_a_double_forked_grandchild_is_policed_and_counted(self):
        targets = ["tcp:%s:%d" % (METADATA, PORT), "tcp:%s:%d" % (PUBLIC, PORT)]
        _, got = self.probe("grandchild", targets, {"mode": "public"}, mode="grandchild")
        self.assertEqual(got, {targets[0]: "EPERM", targets[1]: "ok"})
        self.assertEqual(self.entry(self.egress("grandchild"), METADATA, PORT)["count"], 1)

    def test_a_non_root_exec_cannot_move_itself_out_of_its_cgroup(self):
        # As another user the exec can write no cgroup.procs (they are
        # root's), and its bounding set lacks the capabilities to attach or
        # detach BPF programs; the policy still holds afterwards. (A root
        # exec can move itself unless cgroup2 is mounted with nsdelegate:
        # docs/SECURITY.md, "Egress policy".)
        script = (
            "import glob, os, socket\n"
            "for f in glob.glob('/sys/fs/cgroup/**/cgroup.procs', recursive=True):\n"
            "    if not os.path.exists(os.path.join(os.path.dirname(f), 'cgroup.controllers')):\n"
            "        continue  # cgroup v1: not where the programs are\n"
            "    try:\n"
            "        with open(f, 'w') as w: w.write('0')\n"
            "    except OSError: pass\n"
            "print([l for l in open('/proc/self/cgroup') if l.startswith('0::')][0].strip())\n"
            "s = socket.socket()\n"
            "try:\n"
            "    s.connect(('%s', %d)); print('reached')\n"
            "except OSError as e: print(e.strerror)\n"
            "print(open('/proc/self/status').read().split('CapBnd:')[1].split()[0])\n"
            % (METADATA, PORT))
        obj, out, err = run(self.daemon, "escape", {"argv": [PYTHON, "-c", script],
                                                   "user": "nobody",
                                                   "egress": {"mode": "public"}})
        lines = out.decode().splitlines()
        self.assertEqual(lines[0], "0::/", err)  # still at its namespace's root
        self.assertEqual(lines[1], "Operation not permitted", err)
        bounding = int(lines[-1], 16)
        for cap in (12, 13, 21, 39):  # NET_ADMIN, NET_RAW, SYS_ADMIN, BPF
            self.assertFalse(bounding & (1 << cap), hex(bounding))

    def test_zero_attempts_is_answered_explicitly(self):
        run(self.daemon, "quiet", {"argv": ["true"], "egress": {"mode": "public"}})
        report = self.egress("quiet")
        self.assertEqual((report["accounting"], report["attempts"], report["destinations"]),
                         (True, 0, []))
        run(self.daemon, "unpoliced", {"argv": ["true"]})
        report = self.egress("unpoliced")
        self.assertEqual((report["accounting"], report["attempts"]), (False, 0))
        self.assertNotIn("policy", report)
        s, body = self.daemon.json("GET", "/v1/execs/nonesuch/egress")
        self.assertEqual((s, error_code(body)), (404, "exec_not_found"), body)

    def test_accounting_is_live_while_the_exec_runs(self):
        script = ("import socket, sys, time\ns = socket.socket()\n"
                  "try: s.connect(('%s', %d))\nexcept OSError: pass\n"
                  "print('tried', flush=True)\nsys.stdin.read()\n" % (METADATA, PORT))
        s, _ = self.daemon.json("PUT", "/v1/execs/live", {"argv": [PYTHON, "-c", script],
                                                          "egress": {"mode": "public"},
                                                          "stdin_stream": True})
        self.assertIn(s, (200, 201))
        s, obj = self.daemon.json("GET", "/v1/execs/live?wait_ms=20000&until=match&pattern=tried")
        self.assertEqual(s, 200, obj)
        self.assertEqual(self.entry(self.egress("live"), METADATA, PORT)["count"], 1)
        s, _ = self.daemon.json("POST", "/v1/execs/live/stdin?offset=0&eof=true", b"")
        self.assertEqual(s, 200)

    def test_bad_policies_are_refused_naming_the_field_and_the_bound(self):
        cases = [
            ({"mode": "private"}, None),
            ({"allow": ["10.0.0.0/8"]}, None),
            ({"mode": "allow", "allow": ["10.0.0.0/33"]}, None),
            ({"mode": "allow", "allow": ["pypi.internal/24:443"]}, None),
            ({"mode": "allow", "allow": ["pypi.internal:0"]}, None),
            ({"mode": "allow", "allow": ["10.0.0.1:80"] * 65}, ("max_entries", 64)),
            ({"mode": "allow", "deny": ["1" * 129]}, ("max_bytes", 128)),
            ("public", None),
        ]
        for egress, bound in cases:
            s, body = self.daemon.json("PUT", "/v1/execs/bad-egress",
                                       {"argv": ["true"], "egress": egress})
            self.assertEqual((s, error_code(body)), (400, "invalid_request"), (egress, body))
            self.assertEqual(body["error"]["field"], "egress")
            if bound:
                self.assertEqual(body["error"][bound[0]], bound[1])

    def test_the_python_client_carries_it(self):
        c = Client("http://127.0.0.1:%d" % self.daemon.port, token=self.daemon.token)
        try:
            script = "import socket\ntry: socket.create_connection(('%s', %d), 20)\nexcept OSError: pass\n" % (
                PRIVATE, PORT)
            info = c.start_exec("py-egress", [PYTHON, "-c", script],
                                egress={"mode": "public", "deny": ["198.51.100.0/24"]})
            self.assertEqual(info.egress["mode"], "public")
            self.assertEqual(info.egress["deny"], ["198.51.100.0/24"])
            wait_exit(self.daemon, "py-egress")
            report = c.exec_egress("py-egress")
            self.assertTrue(report.accounting)
            self.assertEqual((report.refused, report.destinations[0].address,
                              report.destinations[0].verdict), (1, PRIVATE, "refused"))
            self.assertIsNone(c.start_exec("py-plain", ["true"]).egress)
            self.assertEqual(c.start_exec("py-plain-2", ["true"]).egress_resolved, {})
        finally:
            c.close()

    def test_the_python_clients_carry_host_names(self):
        rule = "%s:%d" % (PRIVATE_NAME, PORT)
        c = Client("http://127.0.0.1:%d" % self.daemon.port, token=self.daemon.token)
        try:
            info = c.start_exec("py-name", ["true"], egress={"mode": "allow", "allow": [rule]})
            self.assertEqual(info.egress_resolved, {PRIVATE_NAME: [PRIVATE]})
            wait_exit(self.daemon, "py-name")
            self.assertEqual(c.exec_egress("py-name").resolved, {PRIVATE_NAME: [PRIVATE]})
            with self.assertRaises(ac.EgressNameUnresolved) as cm:
                c.start_exec("py-unresolved", ["true"],
                             egress={"mode": "all", "deny": ["no-such-host.invalid"]})
            self.assertEqual(cm.exception.details["name"], "no-such-host.invalid")
            r = c.run_code("python", "pass", egress={"mode": "allow", "allow": [rule]})
            self.assertEqual(r.egress.resolved, {PRIVATE_NAME: [PRIVATE]})
            with self.assertRaises(ac.EgressNameUnresolved):
                c.create_context("py-ctx-unresolved",
                                 egress={"mode": "all", "deny": ["no-such-host.invalid"]})
        finally:
            c.close()

        async def with_aio():
            async with AsyncClient("http://127.0.0.1:%d" % self.daemon.port,
                                   token=self.daemon.token) as a:
                info = await a.start_exec("aio-name", ["true"],
                                          egress={"mode": "allow", "allow": [rule]})
                self.assertEqual(info.egress_resolved, {PRIVATE_NAME: [PRIVATE]})
                with self.assertRaises(ac.EgressNameUnresolved):
                    await a.start_exec("aio-unresolved", ["true"],
                                       egress={"mode": "all", "deny": ["no-such-host.invalid"]})
        asyncio.run(with_aio())

    def test_a_run_answers_its_egress_and_its_summary_names_the_refusal(self):
        code = ("import socket\nfor _ in range(2):\n"
                "    try: socket.create_connection(('%s', %d), 20)\n"
                "    except OSError: pass\n" % (METADATA, PORT))
        s, body = self.daemon.json("POST", "/v1/run", {"runtime": "python", "code": code,
                                                      "egress": {"mode": "public"}})
        self.assertEqual(s, 200, body)
        self.assertRegex(body["summary"], r"^exit 0 in \d+ ms; network: 2 connections to "
                         r"169\.254\.169\.254:8080 refused by policy public$")
        self.assertEqual((body["egress"]["refused"], body["egress"]["destinations_omitted"]),
                         (2, 0))
        s, body = self.daemon.json("POST", "/v1/run", {"runtime": "shell", "code": "true"})
        self.assertNotIn("egress", body)
        self.assertNotIn("network:", body["summary"])

    def test_metrics_count_attempts_by_verdict_without_addresses(self):
        self.probe("metrics", ["tcp:%s:%d" % (METADATA, PORT)], {"mode": "public"})
        s, _, data = self.daemon.request("GET", "/v1/metrics")
        text = data.decode()
        lines = [l for l in text.splitlines() if l.startswith("agentd_egress_attempts_total{")]
        refused = [l for l in lines if 'verdict="refused"' in l]
        self.assertEqual(len(refused), 1, lines)
        self.assertGreaterEqual(float(refused[0].split()[-1]), 1)
        self.assertNotIn(METADATA, "\n".join(lines))

    def test_health_lists_every_mode(self):
        s, body = self.daemon.json("GET", "/v1/health", auth=False)
        self.assertEqual(body["limits"]["egress_modes"], ["public", "allow", "none", "all"])
        self.assertNotIn("egress_why", body["limits"])
        self.assertEqual(body["limits"]["egress_enforcer"], "bpf")


class EgressUnavailableTest(unittest.TestCase):
    def test_a_daemon_without_bpf_refuses_and_says_why(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to drop capabilities (the CI runs as root)")
        drop = ["setpriv", "--bounding-set", "-sys_admin,-bpf", "--inh-caps",
                "-sys_admin,-bpf", "--"]
        # The cgroup-BPF rung only: "auto" would fall back to nftables rules
        # (test_exec_egress_nftables).
        with Daemon("--egress-enforcer", "bpf", wrapper=drop) as d:
            s, body = d.json("GET", "/v1/health", auth=False)
            self.assertEqual(body["limits"]["egress_modes"], [])
            self.assertIn("cgroup-BPF", body["limits"]["egress_why"])
            self.assertNotIn("egress_enforcer", body["limits"])
            s, body = d.json("PUT", "/v1/execs/x", {"argv": ["true"],
                                                    "egress": {"mode": "public"}})
            self.assertEqual((s, error_code(body)), (400, "limit_unsupported"), body)
            self.assertEqual(body["error"]["field"], "egress")
            # A name is not looked up for a policy that cannot hold.
            s, body = d.json("PUT", "/v1/execs/y", {"argv": ["true"], "egress": {
                "mode": "all", "deny": ["no-such-host.invalid"]}})
            self.assertEqual((s, error_code(body)), (400, "limit_unsupported"), body)
            obj, _, _ = run(d, "x", {"argv": ["true"]})
            self.assertEqual(obj["exit_code"], 0)


if __name__ == "__main__":
    unittest.main()
