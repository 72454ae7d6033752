"""The conformance suite passes against a real VM: QEMU (software emulation)
booting Debian's cloud kernel with an initramfs of busybox, the virtio-net
modules and the static agentd, which is the VM's PID 1; the suite reaches it
through a port forwarded over user-mode networking (conformance/vm/vm-guest).
Needs root (the download cache lives in /var/cache/agentd-ci)."""

import json
import os
import shutil
import unittest

from lib.guests import VM_GUEST, Guest, GuestConformanceCase, SuiteRun


@unittest.skipUnless(os.geteuid() == 0, "needs root (the kernel cache is in /var/cache)")
class VmGuestTest(GuestConformanceCase):
    # The initramfs is busybox alone: no python3, no bun.
    EXPECTED_SKIPS = {
        "run: a python exception is answered with type, line and keys present": "no python3",
        "run: a context keeps a variable between two runs": "no python3",
        "run: a ts context keeps a declaration between two runs": "no bun",
    }

    @classmethod
    def setUpClass(cls):
        if not shutil.which("qemu-system-x86_64"):
            raise RuntimeError("qemu-system-x86_64 is missing (scripts/install-deps installs it)")
        # Hard bounds: ctest kills this module at 600 s (tests/CMakeLists.txt);
        # the boot gets 240 s and the suite 300 s, and whatever happens to this
        # process, QEMU's watchdog powers the VM off after 570 s.
        cls.guest = Guest(VM_GUEST, "--boot-timeout", "180", "--lifetime", "570", timeout=240)
        print("\nVM started in %.1f s (boot to first health answer: %s ms)"
              % (cls.guest.start_seconds, cls.guest.info["boot_ms"]))

    @classmethod
    def tearDownClass(cls):
        status, err = cls.guest.stop()
        if status != 0:
            raise AssertionError("the VM did not stop: " + err)

    def test_every_check_passes_through_the_forwarded_port(self):
        self.assertRegex(self.guest.url, r"^http://127\.0\.0\.1:\d+$")
        self.assertSuitePasses(SuiteRun(self.guest.url, self.guest.token_file,
                                        *self.guest.suite_args, timeout=300))

    def test_limits_use_the_vms_cgroup2(self):
        status, body = self.guest.call("GET", "/v1/health")
        self.assertEqual(status, 200)
        limits = json.loads(body)["limits"]
        self.assertEqual(limits["mechanism"], "cgroup2")
        self.assertIn("cpus", limits["supported"])
        code, out = self.guest.sh("cat /proc/self/cgroup /proc/self/oom_score_adj; "
                                  "cat /proc/1/oom_score_adj")
        self.assertEqual(code, 0, out)
        # An exec without limits runs where the daemon put it; its OOM score
        # is high and the daemon's, PID 1, low.
        lines = out.split()
        self.assertTrue(lines[0].startswith("0::/"), out)
        self.assertEqual(lines[1:], ["500", "-900"])

    def test_the_daemon_is_pid_1_of_a_vm_running_debians_cloud_kernel(self):
        code, out = self.guest.sh("cat /proc/1/comm; uname -r; hostname; "
                                  "ip -o -4 addr show dev eth0 | awk '{print $4}'; "
                                  "basename $(readlink /sys/class/net/eth0/device/driver)")
        self.assertEqual(code, 0, out)
        comm, release, hostname, address, driver = out.split()
        self.assertEqual(comm, "agentd", "agentd is PID 1 of the VM")
        self.assertTrue(release.endswith("-cloud-amd64"), release)
        self.assertEqual(release, self.guest.info["kernel_release"])
        self.assertEqual(hostname, "agentd-vm")
        self.assertEqual(address, "10.0.2.15/24")
        self.assertEqual(driver, "virtio_net")


if __name__ == "__main__":
    unittest.main()
