"""What every isolated root file system guest (conformance/guests/rootfs-guest)
must show, whatever its image: the whole suite passes over the veth pair, the
daemon is PID 1 of namespaces of its own, nothing of the build machine is
visible and nothing but the daemon is appended to the image. Test modules
subclass RootfsGuestCase with IMAGE set."""

import json
import os
import unittest

from lib.guests import ROOTFS_GUEST, Guest, GuestConformanceCase, SuiteRun


@unittest.skipUnless(os.geteuid() == 0, "needs root (namespaces, mounts, veth)")
class RootfsGuestCase(GuestConformanceCase):
    IMAGE = None
    HOSTNAME = "agentd-guest"
    # The guest has no /sys, so no cgroup file system: its limits are
    # rlimits, and the checks that need a cgroup cannot run.
    # Neither image (busybox, debootstrap minbase) has python3 or bun.
    EXPECTED_SKIPS = {
        "limits: a memory limit kills and names its value": "no cgroup file system",
        "limits: a pids limit ends a fork bomb": "no cgroup file system",
        "hostile: an exec under egress none cannot connect out, and it is counted":
            "no cgroup2 file system for the egress programs",
        "run: a python exception is answered with type, line and keys present": "no python3",
        "run: a context keeps a variable between two runs": "no python3",
        "run: a ts context keeps a declaration between two runs": "no bun",
    }

    @classmethod
    def setUpClass(cls):
        cls.guest = Guest(ROOTFS_GUEST, "--image", cls.IMAGE)
        print("\n%s guest started in %.1f s" % (cls.IMAGE, cls.guest.start_seconds))

    @classmethod
    def tearDownClass(cls):
        status, err = cls.guest.stop()
        # SIGTERM to PID 1 of the guest is a clean shutdown, exit status 0.
        if status != 0:
            raise AssertionError("the guest did not stop cleanly: " + err)

    def test_every_check_passes_over_tcp_through_a_veth_pair(self):
        self.assertRegex(self.guest.url, r"^http://10\.213\.\d+\.\d+:7700$")
        self.assertSuitePasses(
            SuiteRun(self.guest.url, self.guest.token_file, *self.guest.suite_args))

    def test_the_daemon_is_pid_1_of_an_isolated_guest(self):
        code, out = self.guest.sh(
            "cat /proc/1/comm /proc/sys/kernel/hostname; ls /proc | grep -c '^[0-9]'; "
            "sed 1,2d /proc/net/dev | cut -d: -f1; "
            "test -e /work -o -e /usr/lib/gcc && echo host-visible || echo sealed")
        lines = out.split()
        self.assertEqual(code, 0, out)
        self.assertEqual(lines[0], "agentd", "PID 1 of the guest is agentd")
        self.assertEqual(lines[1], self.HOSTNAME, "the guest has its own UTS namespace")
        # Only the daemon, the shell and its children: a PID namespace of its own.
        self.assertLess(int(lines[2]), 10, out)
        self.assertEqual(sorted(lines[3:-1]), ["eth0", "lo"], "a network namespace of its own")
        self.assertEqual(lines[-1], "sealed", "nothing of the build machine is in the guest")

    def test_limits_fall_back_to_rlimits_without_cgroups(self):
        status, body = self.guest.call("GET", "/v1/health")
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body)["limits"]["mechanism"], "rlimit")

    def test_every_namespace_of_the_daemon_is_its_own(self):
        kinds = ["mnt", "pid", "net", "uts", "ipc"]
        code, out = self.guest.sh("; ".join("readlink /proc/1/ns/" + k for k in kinds))
        self.assertEqual(code, 0, out)
        host = [os.readlink("/proc/self/ns/" + k) for k in kinds]
        for kind, guest_ns, host_ns in zip(kinds, out.split(), host):
            self.assertRegex(guest_ns, r"^%s:\[\d+\]$" % kind)
            self.assertNotEqual(guest_ns, host_ns, kind)

    def test_nothing_but_the_daemon_is_appended_to_the_image(self):
        upper = os.path.join(self.guest.run_dir, "upper")
        found = []
        for dirpath, _, files in os.walk(upper):
            found += [os.path.relpath(os.path.join(dirpath, f), upper) for f in files]
        # The suite wrote its scratch files in the guest's /tmp (a tmpfs) and
        # the daemon its state in /run (a tmpfs): the image layer holds the
        # daemon alone.
        self.assertEqual(found, ["usr/local/bin/agentd"])
        # And the suite removed its scratch directory.
        code, out = self.guest.sh("ls -A /tmp")
        self.assertNotIn("agentd-conformance-", out)
