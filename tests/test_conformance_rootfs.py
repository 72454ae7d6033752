"""The conformance suite passes against isolated root file system guests:
an image holding nothing of the build machine (Debian's busybox-static, or a
debootstrap minbase tree) with the static agentd appended as an overlay
layer, entered with new mount, PID, network, UTS and IPC namespaces and
chroot, agentd as the namespace's PID 1 (conformance/guests/rootfs-guest).
The suite reaches the busybox guest both through a veth pair (TCP) and
through its Unix socket bind-mounted out of the guest; the Debian guest
through the veth pair. Needs root."""

import os
import unittest

from lib.guests import ROOTFS_GUEST, Guest, GuestConformanceCase, GuestStartError, SuiteRun


@unittest.skipUnless(os.geteuid() == 0, "needs root (namespaces, mounts, veth)")
class RootfsGuestCase(GuestConformanceCase):
    IMAGE = None
    HOSTNAME = "agentd-guest"

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


class BusyboxRootfsGuestTest(RootfsGuestCase):
    IMAGE = "busybox"

    def test_every_check_passes_over_the_bind_mounted_unix_socket(self):
        url = self.guest.info["unix_url"]
        self.assertTrue(url.startswith("unix:" + self.guest.run_dir), url)
        self.assertSuitePasses(SuiteRun(url, self.guest.token_file, *self.guest.suite_args))

    def test_the_image_is_busybox_alone(self):
        code, out = self.guest.sh("readlink /bin/sh; ls /usr/local/bin; cat /etc/passwd")
        self.assertEqual(code, 0, out)
        self.assertEqual(out.split("\n")[:2], ["busybox", "agentd"])
        self.assertIn("nobody:x:65534:65534:", out)


class DebianRootfsGuestTest(RootfsGuestCase):
    IMAGE = "debian"

    def test_the_image_is_a_debian_minbase_tree(self):
        code, out = self.guest.sh("cat /etc/debian_version; readlink -f /bin/sh; "
                                  "dpkg-query -W -f='${Package}\\n' | wc -l")
        self.assertEqual(code, 0, out)
        version, shell, packages = out.split()
        self.assertTrue(version.startswith("12."), out)
        self.assertEqual(shell, "/usr/bin/dash")
        self.assertGreater(int(packages), 50)


@unittest.skipUnless(os.geteuid() == 0, "needs root (namespaces, mounts, veth)")
class RootfsGuestTeardownTest(unittest.TestCase):
    def test_a_stopped_guest_leaves_no_process_veth_or_directory_behind(self):
        guest = Guest(ROOTFS_GUEST, "--image", "busybox")
        with open(os.path.join(guest.run_dir, "guest.pid")) as f:
            pid = int(f.read())
        with open(os.path.join(guest.run_dir, "veth")) as f:
            veth = f.read().strip()
        self.assertTrue(os.path.exists("/proc/%d" % pid))
        self.assertIn(veth, host_links())
        status, err = guest.stop()
        self.assertEqual(status, 0, err)
        self.assertFalse(os.path.exists("/proc/%d" % pid), "the guest's PID 1 is gone")
        self.assertNotIn(veth, host_links())
        self.assertFalse(os.path.exists(guest.run_dir))

    def test_a_guest_whose_daemon_cannot_start_is_torn_down(self):
        before = host_links()
        # A dynamically linked program cannot run in the busybox image.
        with self.assertRaises(GuestStartError) as cm:
            Guest(ROOTFS_GUEST, "--image", "busybox", "--agentd", "/bin/true")
        self.assertEqual(host_links(), before)
        self.assertFalse(os.path.exists(cm.exception.run_dir))


def host_links():
    return set(os.listdir("/sys/class/net"))


del RootfsGuestCase  # only the concrete guests run

if __name__ == "__main__":
    unittest.main()
