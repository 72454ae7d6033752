"""The conformance suite passes against an isolated root file system guest:
an image of Debian's busybox-static and nothing else of the build machine,
with the static agentd appended as an overlay layer, entered with new mount,
PID, network, UTS and IPC namespaces and chroot, agentd as the namespace's
PID 1 (conformance/guests/rootfs-guest). The suite reaches it through a veth
pair (TCP) and through its Unix socket bind-mounted out of the guest. A
guest is torn down without a trace, even when its start fails. Needs root.
The Debian minbase image is test_conformance_rootfs_debian."""

import os
import unittest

from lib.guests import ROOTFS_GUEST, Guest, GuestStartError, SuiteRun
from lib.rootfs_case import RootfsGuestCase


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
        # A dynamically linked program cannot run in the busybox image.
        with self.assertRaises(GuestStartError) as cm:
            Guest(ROOTFS_GUEST, "--image", "busybox", "--agentd", "/bin/true")
        # This guest's own veth, by name: other tests' guests (the Debian
        # run, the packaging modules' containers) add and remove links on
        # the same host meanwhile, so a before/after count is not this
        # guest's doing.
        if cm.exception.veth:  # the start got as far as its network
            self.assertNotIn(cm.exception.veth, host_links())
        self.assertFalse(os.path.exists(cm.exception.run_dir))


def host_links():
    return set(os.listdir("/sys/class/net"))


del RootfsGuestCase  # only the concrete guests run

if __name__ == "__main__":
    unittest.main()
