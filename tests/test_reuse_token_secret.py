"""A reset's next token where --token-file cannot be replaced: a Docker
secret or a Kubernetes Secret volume is a read-only or bind-mounted file
that rename(2) cannot cover. The daemon keeps the next token in its state
dir against the file's identity: the reset succeeds, the file is left as
it is, a crash and restart keep the next token (the previous one is never
revived), and an operator who writes a new token into the file wins."""

import os
import shutil
import subprocess
import tempfile
import unittest

from lib.agentd_test import Daemon, new_token


def mount(*args):
    subprocess.run(["mount", *args], check=True, capture_output=True)


@unittest.skipUnless(os.geteuid() == 0, "bind mounts need root")
class TokenSecretTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="agentd-secret-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.path = os.path.join(self.dir, "token")
        with open(self.path, "w") as f:
            f.write("operator-token\n")
        os.chmod(self.path, 0o600)
        # The file becomes a mount point of itself, as a bind-mounted secret
        # is: rename over it fails with EBUSY.
        mount("--bind", self.path, self.path)
        self.addCleanup(subprocess.run, ["umount", "-l", self.path], capture_output=True)
        self.d = Daemon("--token-file", self.path, token="operator-token", bootstrap=False)
        self.addCleanup(self.d.close)

    def reset(self, reset_id, token):
        status, report = self.d.json("POST", "/v1/reset",
                                     {"reset_id": reset_id, "next": {"token": token}})
        self.assertEqual((status, report.get("clean")), (200, True), report)
        self.d.token = token

    def answers(self, token):
        saved, self.d.token = self.d.token, token
        try:
            return self.d.json("GET", "/v1/execs")[0]
        finally:
            self.d.token = saved

    def test_a_read_only_secret_takes_resets_and_a_crash_never_revives_an_old_token(self):
        mount("-o", "remount,bind,ro", self.path)  # a Secret volume: read-only
        first, second = new_token(), new_token()
        self.reset("r1", first)
        self.assertEqual((self.answers(first), self.answers("operator-token")), (200, 401))
        with open(self.path) as f:
            self.assertEqual(f.read(), "operator-token\n")  # the file is left as it is
        self.d.restart()  # SIGKILL, then a start on the same state dir
        self.assertEqual((self.answers(first), self.answers("operator-token")), (200, 401))
        # Later resets keep rotating; each restart keeps the newest.
        self.reset("r2", second)
        self.d.restart()
        self.assertEqual([self.answers(t) for t in (second, first, "operator-token")],
                         [200, 401, 401])

    def test_a_token_the_operator_writes_into_the_file_wins_over_the_kept_one(self):
        rotated = new_token()
        self.reset("r1", rotated)
        with open(self.path, "w") as f:  # in place, through the mount
            f.write("operator-token-2\n")
        self.d.restart()
        self.assertEqual((self.answers("operator-token-2"), self.answers(rotated)), (200, 401))
        # And the stale record is gone: the next restart still has the file's.
        self.d.restart()
        self.assertEqual(self.answers("operator-token-2"), 200)

    def test_a_file_replaceable_again_after_a_restart_takes_the_token_itself(self):
        rotated = new_token()
        self.reset("r1", rotated)
        subprocess.run(["umount", self.path], check=True)  # now a plain file again
        self.d.restart()  # (a daemon tries the file again once per start)
        self.assertEqual(self.answers(rotated), 200)
        self.reset("r2", new_token())
        with open(self.path) as f:
            self.assertEqual(f.read().strip(), self.d.token)
        self.assertFalse(os.path.exists(os.path.join(self.d.state_dir, "rotated-token")))


if __name__ == "__main__":
    unittest.main()
