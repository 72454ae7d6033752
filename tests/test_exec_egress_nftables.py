"""The nftables rung of egress policy (docs/SECURITY.md, "Egress"): the same
policies as the cgroup-BPF programs, enforced by nftables rules in the
daemon's network namespace that match the exec's cgroup, and counted in
nftables sets.

The daemon runs with --egress-enforcer nftables (cgroup-BPF works on this
machine, so "auto" would pick it), in the network namespace of
test_exec_egress (the addresses the policies are about, with listeners).
A refused TCP connect answers ECONNREFUSED (a reset), a refused datagram
EPERM (dropped on the way out); each refusal has its control, the same
probe under "all". A last case drops the daemon's capabilities for bpf(2)
and checks that "auto" falls back to this rung."""

import json
import os
import select
import shutil
import socket
import struct
import subprocess
import unittest

import test_exec_egress as base
from lib.agentd_test import Daemon
from lib.exec_util import run, start, wait_exit

PORT = base.PORT
PRIVATE, METADATA, METADATA6, PUBLIC = base.PRIVATE, base.METADATA, base.METADATA6, base.PUBLIC

# Waits on a FIFO for a number N, makes N connects to the metadata address
# (refused by "public": ECONNREFUSED at once) and answers how many were
# refused on a second FIFO; "exit" ends it.
WORKER = r"""
import errno, socket, sys
go, ack = sys.argv[1], sys.argv[2]
while True:
    with open(go) as f:
        line = f.read().strip()
    if line == "exit":
        sys.exit(0)
    refused = 0
    for _ in range(int(line)):
        s = socket.socket()
        try:
            s.connect((%r, %d))
        except OSError as e:
            refused += e.errno == errno.ECONNREFUSED
        finally:
            s.close()
    with open(ack, "w") as f:
        f.write("%%d\n" %% refused)
""" % (METADATA, PORT)


# Starts its arguments with bpf(2) refused (EPERM) by a seccomp filter, as
# a container runtime's profile may refuse it: the daemon keeps its
# capabilities (the cgroup namespace of a policed exec needs CAP_SYS_ADMIN)
# but cannot load a program. x86-64 only.
NO_BPF = r"""
import ctypes, os, sys
class Insn(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte),
                ("k", ctypes.c_uint)]
class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Insn))]
code = [(0x20, 0, 0, 4),            # the architecture
        (0x15, 0, 3, 0xc000003e),   # x86-64, else allow
        (0x20, 0, 0, 0),            # the system call's number
        (0x15, 0, 1, 321),          # bpf
        (0x06, 0, 0, 0x00050001),   # SECCOMP_RET_ERRNO | EPERM
        (0x06, 0, 0, 0x7fff0000)]   # SECCOMP_RET_ALLOW
insns = (Insn * len(code))(*[Insn(*c) for c in code])
prog = Prog(len(code), insns)
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:
    sys.exit("cannot install the seccomp filter: errno %d" % ctypes.get_errno())
os.execv(sys.argv[1], sys.argv[1:])
"""


def nft_tables():
    """The nf_tables tables of the test's network namespace as (family,
    name), read over netlink: a GETTABLE dump (a guest may have no nft
    program)."""
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 12) as s:  # NETLINK_NETFILTER
        s.bind((0, 0))
        # NFNL_SUBSYS_NFTABLES << 8 | NFT_MSG_GETTABLE, NLM_F_REQUEST | NLM_F_DUMP
        s.send(struct.pack("=IHHII", 20, 10 << 8 | 1, 0x301, 1, 0) + bytes(4))
        tables = []
        while True:
            data = s.recv(65536)
            off = 0
            while off + 16 <= len(data):
                length, kind = struct.unpack_from("=IH", data, off)
                if kind == 3:  # NLMSG_DONE
                    return tables
                if kind == 2:  # NLMSG_ERROR
                    raise OSError(-struct.unpack_from("=i", data, off + 16)[0], "GETTABLE")
                a = off + 20  # after nlmsghdr and nfgenmsg
                while a + 4 <= off + length:
                    alen, atype = struct.unpack_from("=HH", data, a)
                    if atype & 0x3fff == 1:  # NFTA_TABLE_NAME
                        tables.append((data[off + 16], data[a + 4:a + alen].rstrip(b"\0").decode()))
                    a += (alen + 3) & ~3
                off += (length + 3) & ~3


class NftablesEgressTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root (the CI runs as root)")
        import tempfile
        cls.tmp = tempfile.TemporaryDirectory()
        base.enter_test_network(os.path.join(cls.tmp.name, "hosts"))
        cls.listeners = []
        # PORT + 1 on the private address listens too: a refusal there is
        # the policy's, not a missing listener's (both answer ECONNREFUSED).
        for family, host, port in ((socket.AF_INET, PRIVATE, PORT),
                                   (socket.AF_INET, PRIVATE, PORT + 1),
                                   (socket.AF_INET, METADATA, PORT),
                                   (socket.AF_INET, PUBLIC, PORT),
                                   (socket.AF_INET, "127.0.0.1", PORT),
                                   (socket.AF_INET6, METADATA6, PORT),
                                   (socket.AF_INET6, "::1", PORT)):
            s = socket.socket(family)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, port))
            s.listen(64)
            cls.listeners.append(s)
        cls.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        cls.udp.bind(("0.0.0.0", 5353))
        cls.daemon = Daemon("--egress-enforcer", "nftables")
        s, health = cls.daemon.json("GET", "/v1/health", auth=False)
        if not health["limits"]["egress_modes"]:
            why = health["limits"].get("egress_why", "")
            cls.daemon.stop()
            raise unittest.SkipTest("the nftables rung does not work here: " + why)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()
        for s in cls.listeners + [cls.udp]:
            s.close()
        cls.tmp.cleanup()

    def probe(self, exec_id, targets, egress, mode="child", daemon=None):
        obj, out, err = run(daemon or self.daemon, exec_id,
                            {"argv": [base.PYTHON, "-c", base.PROBE, mode] + targets,
                             "egress": egress})
        self.assertEqual(obj["exit_code"], 0, err)
        return json.loads(out)

    def egress(self, exec_id, daemon=None):
        s, body = (daemon or self.daemon).json("GET", "/v1/execs/%s/egress" % exec_id)
        self.assertEqual(s, 200, body)
        return body

    def counts(self, report):
        return sorted((d["verdict"], d["protocol"], d["address"], d["port"], d["count"])
                      for d in report["destinations"])

    def test_health_names_the_nftables_enforcer_and_every_mode(self):
        s, body = self.daemon.json("GET", "/v1/health", auth=False)
        self.assertEqual(body["limits"]["egress_enforcer"], "nftables")
        self.assertEqual(body["limits"]["egress_modes"], ["public", "allow", "none", "all"])

    def test_public_refuses_private_and_metadata_in_every_spelling_and_counts_it(self):
        targets = ["tcp:%s:%d" % (PRIVATE, PORT), "tcp:%s:%d" % (METADATA, PORT),
                   "tcp:%s:%d" % (METADATA6, PORT), "tcp6:::ffff:%s:%d" % (METADATA, PORT),
                   "tcp:%s:%d" % (PUBLIC, PORT), "tcp:127.0.0.1:%d" % PORT,
                   "tcp:::1:%d" % PORT, "udp:%s:5353" % PRIVATE,
                   "udp:::ffff:%s:5353" % METADATA]
        control = self.probe("all", targets, {"mode": "all"})
        self.assertEqual(set(control.values()), {"ok"}, control)
        got = self.probe("public", targets, {"mode": "public"})
        refused_tcp, refused_udp = "ECONNREFUSED", "EPERM"
        self.assertEqual(got, {
            targets[0]: refused_tcp, targets[1]: refused_tcp, targets[2]: refused_tcp,
            targets[3]: refused_tcp, targets[4]: "ok", targets[5]: "ok", targets[6]: "ok",
            targets[7]: refused_udp, targets[8]: refused_udp})
        report = self.egress("public")
        self.assertTrue(report["accounting"])
        # The IPv4-mapped spelling leaves as an IPv4 packet: one entry with
        # the plain spelling's, counted twice.
        self.assertEqual(self.counts(report), [
            ("allowed", "tcp", "127.0.0.1", PORT, 1),
            ("allowed", "tcp", "203.0.113.7", PORT, 1),
            ("allowed", "tcp", "::1", PORT, 1),
            ("refused", "tcp", "10.0.0.1", PORT, 1),
            ("refused", "tcp", "169.254.169.254", PORT, 2),
            ("refused", "tcp", "fd00:ec2::254", PORT, 1),
            ("refused", "udp", "10.0.0.1", 5353, 1),
            ("refused", "udp", "169.254.169.254", 5353, 1)])
        self.assertEqual((report["refused"], report["allowed"], report["attempts"],
                          report["overflow"]), (6, 3, 9, 0))
        for d in report["destinations"]:
            self.assertTrue(d["first_at"] <= d["last_at"], d)
        self.assertEqual(self.counts(self.egress("all")), [
            ("allowed", "tcp", "10.0.0.1", PORT, 1),
            ("allowed", "tcp", "127.0.0.1", PORT, 1),
            ("allowed", "tcp", "169.254.169.254", PORT, 2),
            ("allowed", "tcp", "203.0.113.7", PORT, 1),
            ("allowed", "tcp", "::1", PORT, 1),
            ("allowed", "tcp", "fd00:ec2::254", PORT, 1),
            ("allowed", "udp", "10.0.0.1", 5353, 1),
            ("allowed", "udp", "169.254.169.254", 5353, 1)])

    def test_allow_reaches_only_the_listed_cidr_and_port(self):
        targets = ["tcp:%s:%d" % (PRIVATE, PORT), "tcp:%s:%d" % (PRIVATE, PORT + 1),
                   "tcp:%s:%d" % (PUBLIC, PORT), "udp:%s:5353" % PRIVATE]
        control = self.probe("allow-control", targets, {"mode": "all"})
        self.assertEqual(set(control.values()), {"ok"}, control)
        got = self.probe("allow", targets, {"mode": "allow", "allow": ["10.0.0.0/24:%d" % PORT]})
        self.assertEqual(got, {targets[0]: "ok", targets[1]: "ECONNREFUSED",
                               targets[2]: "ECONNREFUSED", targets[3]: "EPERM"})
        self.assertEqual(self.counts(self.egress("allow")), [
            ("allowed", "tcp", PRIVATE, PORT, 1),
            ("refused", "tcp", PRIVATE, PORT + 1, 1),
            ("refused", "tcp", PUBLIC, PORT, 1),
            ("refused", "udp", PRIVATE, 5353, 1)])

    def test_a_double_forked_grandchild_is_policed_and_counted(self):
        targets = ["tcp:%s:%d" % (METADATA, PORT), "tcp:%s:%d" % (PUBLIC, PORT)]
        got = self.probe("grandchild", targets, {"mode": "public"}, mode="grandchild")
        self.assertEqual(got, {targets[0]: "ECONNREFUSED", targets[1]: "ok"})
        self.assertEqual(self.counts(self.egress("grandchild")), [
            ("allowed", "tcp", PUBLIC, PORT, 1), ("refused", "tcp", METADATA, PORT, 1)])

    def test_a_context_run_answers_only_its_own_attempts(self):
        self.addCleanup(self.daemon.json, "DELETE", "/v1/contexts/nft-runs")
        s, ctx = self.daemon.json("POST", "/v1/contexts", {
            "id": "nft-runs", "runtime": "python", "scan_changes": False,
            "egress": {"mode": "public"}})
        self.assertEqual(s, 201, ctx)

        def run_in_context(code):
            s, r = self.daemon.json("POST", "/v1/contexts/nft-runs/run", {"code": code})
            self.assertEqual((s, r.get("exit_code")), (200, 0), r)
            return r["egress"]

        connect = ("import socket\n"
                   "def connect(host, n):\n"
                   "    for _ in range(n):\n"
                   "        s = socket.socket()\n"
                   "        try: s.connect((host, %d))\n"
                   "        except OSError as e: print(host, e.errno)\n"
                   "        finally: s.close()\n" % PORT)
        self.assertEqual(run_in_context(connect)["attempts"], 0)
        first = run_in_context("connect(%r, 2)\nconnect(%r, 1)" % (METADATA, PUBLIC))
        self.assertEqual(self.counts(first), [("allowed", "tcp", PUBLIC, PORT, 1),
                                              ("refused", "tcp", METADATA, PORT, 2)])
        # The same destination again, and a new one: this run's only.
        second = run_in_context("connect(%r, 1)\nconnect(%r, 1)" % (METADATA, PRIVATE))
        self.assertEqual(self.counts(second), [("refused", "tcp", PRIVATE, PORT, 1),
                                               ("refused", "tcp", METADATA, PORT, 1)])
        self.assertEqual((second["refused"], second["allowed"], second["attempts"]), (2, 0, 2))
        self.assertEqual(run_in_context("pass")["attempts"], 0)


    def test_nft_lists_the_ruleset_while_an_execs_sets_exist(self):
        # An operator's `nft list ruleset` on the guest must not crash
        # (nft 1.0.6 segfaults on a set expression it does not know).
        nft = shutil.which("nft")
        if nft is None:
            self.skipTest("no nft program")
        go = os.path.join(self.tmp.name, "list-go")
        os.mkfifo(go)
        wait = "import sys; open(sys.argv[1]).read()"
        start(self.daemon, "listed", {"argv": [base.PYTHON, "-c", wait, go],
                                      "egress": {"mode": "public"}})
        try:
            with open(go, "w") as f:  # opens once the exec runs: its sets exist
                listed = subprocess.run([nft, "list", "ruleset"], capture_output=True, text=True)
                f.write("x")
        finally:
            wait_exit(self.daemon, "listed")
        self.assertEqual(listed.returncode, 0, listed.stderr)
        self.assertIn("table inet agentd", listed.stdout)

    def test_an_outlived_execs_rules_and_the_empty_table_go_with_its_last_process(self):
        # The exec leaves a detached child behind, blocked on a FIFO; its
        # rules stay while it lives. Once it is gone, the next exec's end
        # removes them (its directory is empty, then gone) and the table.
        go = os.path.join(self.tmp.name, "outlive-go")
        pid_file = os.path.join(self.tmp.name, "outlive-pid")
        os.mkfifo(go)
        leave = ("import os, sys\n"
                 "if os.fork() == 0:\n"
                 "    os.setsid()\n"
                 "    fd = os.open('/dev/null', os.O_RDWR)\n"
                 "    for i in (0, 1, 2): os.dup2(fd, i)\n"
                 "    open(sys.argv[2], 'w').write(str(os.getpid()))\n"
                 "    open(sys.argv[1]).read()\n"
                 "    os._exit(0)\n")
        obj, _, err = run(self.daemon, "outlive", {"argv": [base.PYTHON, "-c", leave, go, pid_file],
                                                   "egress": {"mode": "public"}})
        self.assertEqual(obj["exit_code"], 0, err)
        with open(pid_file) as f:
            child = os.pidfd_open(int(f.read()))
        self.addCleanup(os.close, child)
        inet_agentd = (1, "agentd")  # NFPROTO_INET
        self.assertIn(inet_agentd, nft_tables())  # policing the child
        with open(go, "w") as f:
            f.write("x")
        select.select([child], [], [])  # readable: the child has exited
        self.probe("after-outlive", ["tcp:%s:%d" % (PUBLIC, PORT)], {"mode": "public"})
        self.assertNotIn(inet_agentd, nft_tables())

    def test_a_dead_daemons_rules_whose_cgroup_is_gone_go_at_the_next_start(self):
        # A daemon killed while its exec ran; the exec ends, its cgroup goes
        # (as a tenant sweep would remove it). A daemon that never knew that
        # exec starts: the rules can police nothing, and go with the table.
        d = Daemon("--egress-enforcer", "nftables")
        self.addCleanup(d.close)
        go, where = (os.path.join(self.tmp.name, n) for n in ("dead-go", "dead-cgroup"))
        os.mkfifo(go)
        script = ("import os, sys\n"
                  "open(sys.argv[2], 'w').write(str(os.getpid()))\n"
                  "open(sys.argv[1]).read()\n")
        start(d, "orphan", {"argv": [base.PYTHON, "-c", script, go, where],
                            "egress": {"mode": "public"}})
        with open(go, "w") as f:  # opens once the exec is running
            with open(where) as w:
                pid = w.read()
            with open("/proc/%s/cgroup" % pid) as c:  # the exec has its own cgroup namespace
                path = next(line for line in c if line.startswith("0::")).strip()[3:]
            d.kill()
            f.write("x")
        with open("/proc/self/mounts") as f:
            mount = next(line.split()[1] for line in f if line.split()[2] == "cgroup2")
        cgroup = mount + path
        # Wait for the exec's end: cgroup.events changes (POLLPRI) when
        # its last process leaves.
        with open(os.path.join(cgroup, "cgroup.events")) as events:
            poller = select.poll()
            poller.register(events, select.POLLPRI)
            while "populated 1" in events.read():
                poller.poll()
                events.seek(0)
        os.rmdir(cgroup)
        inet_agentd = (1, "agentd")
        self.assertIn(inet_agentd, nft_tables())  # the orphan's rules
        with Daemon("--egress-enforcer", "nftables") as fresh:
            s, health = fresh.json("GET", "/v1/health", auth=False)
            self.assertEqual(health["limits"]["egress_enforcer"], "nftables")
            self.assertNotIn(inet_agentd, nft_tables())

    def test_the_counts_go_on_through_a_daemon_crash(self):
        d = Daemon("--egress-enforcer", "nftables")
        self.addCleanup(d.close)
        go, ack = (os.path.join(self.tmp.name, name) for name in ("go", "ack"))
        os.mkfifo(go)
        os.mkfifo(ack)

        def ask(n):
            with open(go, "w") as f:
                f.write("%d\n" % n)
            with open(ack) as f:
                self.assertEqual(int(f.read()), n)

        def refused():
            s, body = d.json("GET", "/v1/execs/survivor/egress")
            self.assertEqual(s, 200, body)
            self.assertNotIn("incomplete", body)
            return self.counts(body)

        start(d, "survivor", {"argv": [base.PYTHON, "-c", WORKER, go, ack],
                              "egress": {"mode": "public"}})
        ask(2)
        self.assertEqual(refused(), [("refused", "tcp", METADATA, PORT, 2)])
        d.kill()
        ask(3)  # no daemon runs: still refused, and counted
        d.start()
        s, _ = d.json("POST", "/v1/bootstrap", {"token": d.token}, auth=False)
        self.assertEqual(s, 200)
        self.assertEqual(refused(), [("refused", "tcp", METADATA, PORT, 5)])
        ask(1)
        with open(go, "w") as f:
            f.write("exit\n")
        self.assertEqual(wait_exit(d, "survivor")["exit_code"], 0)
        self.assertEqual(refused(), [("refused", "tcp", METADATA, PORT, 6)])

    def test_a_daemon_that_cannot_load_bpf_falls_back_to_nftables(self):
        if os.uname().machine != "x86_64":
            self.skipTest("the seccomp filter is written for x86-64")
        targets = ["tcp:%s:%d" % (METADATA, PORT), "tcp:%s:%d" % (PUBLIC, PORT)]
        with Daemon(wrapper=[base.PYTHON, "-c", NO_BPF]) as d:
            s, body = d.json("GET", "/v1/health", auth=False)
            self.assertEqual(body["limits"]["egress_enforcer"], "nftables", body)
            self.assertEqual(body["limits"]["egress_modes"], ["public", "allow", "none", "all"])
            got = self.fallback_probe(d, targets)
            self.assertEqual(got, {targets[0]: "ECONNREFUSED", targets[1]: "ok"})
        # Control: with every capability, "auto" picks cgroup-BPF (EPERM).
        with Daemon() as d:
            s, body = d.json("GET", "/v1/health", auth=False)
            self.assertEqual(body["limits"]["egress_enforcer"], "bpf", body)
            self.assertEqual(self.fallback_probe(d, targets), {targets[0]: "EPERM", targets[1]: "ok"})

    def fallback_probe(self, d, targets):
        obj, out, err = run(d, "fallback", {"argv": [base.PYTHON, "-c", base.PROBE, "child"] +
                                            targets, "egress": {"mode": "public"}})
        self.assertEqual(obj["exit_code"], 0, err)
        return json.loads(out)


if __name__ == "__main__":
    unittest.main()
