"""The conformance suite passes against an isolated root file system guest
made of a Debian bookworm tree (debootstrap --variant=minbase, built once
into the cache) with the static agentd appended, exactly as the busybox guest
of test_conformance_rootfs: own namespaces, chroot, agentd as PID 1, reached
through a veth pair. A separate module so that ctest runs it alongside the
others: a cold cache spends a minute or more in debootstrap. Needs root."""

import unittest

from lib.rootfs_case import RootfsGuestCase


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


del RootfsGuestCase  # only the concrete guest runs

if __name__ == "__main__":
    unittest.main()
