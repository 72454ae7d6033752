"""SIGKILL of the daemon at random moments under load (execs starting and
printing, file writes, tree uploads), then a restart on the same state dir.
Every exec the client saw exited comes back with its output byte for byte;
every record reads back (no torn metadata); an exec caught mid-output runs
on under its holder and ends with all of its output and exit status; no temporary file is left in the state dir or
in the directories being written."""

import os
import random
import shutil
import tempfile
import threading
import time
import unittest

from lib.agentd_test import Daemon
from lib.exec_util import wait_exit
from lib.fs_helpers import member, tar_bytes, url

ROUNDS = 4
SEED = 1729


def expected_output(n):
    return b"".join(b"%d\n" % i for i in range(1, n + 1))


def leftovers(root):
    """Temporaries anywhere below root."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            if name.endswith(".tmp") or name.startswith(".agentd-"):
                out.append(os.path.relpath(os.path.join(dirpath, name), root))
    return out


class Load:
    """Threads that keep the daemon busy until it dies; they record what the
    client was told before that."""

    def __init__(self, d, round_no, files_dir):
        self.d = d
        self.round = round_no
        self.files_dir = files_dir
        self.started = {}  # exec id -> lines it prints
        self.seen_exited = {}  # exec id -> exec object as polled
        self.files = {}  # path -> content the daemon answered 200 for
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=f, daemon=True)
                        for f in (self.execs, self.polls, self.writes, self.trees)]

    def run(self):
        for t in self.threads:
            t.start()

    def join(self):
        for t in self.threads:
            t.join(30)

    def execs(self):
        i = 0
        while True:
            i += 1
            exec_id = "r%d-e%d" % (self.round, i)
            n = 20000 * (i % 5 + 1)
            with self.lock:
                self.started[exec_id] = n
            try:
                self.d.json("PUT", "/v1/execs/" + exec_id, {"argv": ["seq", str(n)]}, timeout=5)
            except OSError:
                return

    def polls(self):
        while True:
            with self.lock:
                ids = [e for e in self.started if e not in self.seen_exited]
            try:
                for exec_id in ids:
                    s, obj = self.d.json("GET", "/v1/execs/" + exec_id, timeout=5)
                    if s == 200 and obj["state"] == "exited":
                        with self.lock:
                            self.seen_exited[exec_id] = obj
                time.sleep(0.01)
            except OSError:
                return

    def writes(self):
        i = 0
        while True:
            i += 1
            path = os.path.join(self.files_dir, "f%d" % (i % 7))
            content = os.urandom(256 * 1024 * (i % 4 + 1))
            try:
                s, _, _ = self.d.request("PUT", url("/v1/fs/file", path=path), content, timeout=5)
            except OSError:
                return
            if s == 200:
                with self.lock:
                    self.files[path] = content

    def trees(self):
        i = 0
        while True:
            i += 1
            archive = tar_bytes([(member("t%d/m%d" % (i % 3, k)), os.urandom(64 * 1024))
                                 for k in range(16)])
            try:
                self.d.json("PUT", url("/v1/fs/tar", path=self.files_dir), archive, timeout=5)
            except OSError:
                return


class CrashRestartTest(unittest.TestCase):
    def test_sigkill_under_load_loses_nothing_the_client_was_told(self):
        rng = random.Random(SEED)
        files_dir = tempfile.mkdtemp(prefix="agentd-crash-files-")
        d = Daemon("--ack-ttl-sec", "3600")
        survived = {"exited_intact": 0, "caught_running": 0, "files": 0}
        try:
            for round_no in range(ROUNDS):
                load = Load(d, round_no, files_dir)
                load.run()
                time.sleep(rng.uniform(0.5, 2.5))
                d.kill()
                load.join()
                d.start()
                s, _ = d.json("POST", "/v1/bootstrap", {"token": d.token}, auth=False)
                self.assertEqual(s, 200)
                self.check_round(d, load, survived)
                self.assertEqual(leftovers(d.state_dir), [])
                self.assertEqual(leftovers(files_dir), [])
        finally:
            d.close()
            shutil.rmtree(files_dir, ignore_errors=True)
        self.assertGreater(survived["exited_intact"], 5, survived)
        print("\ncrash rounds: %d, %r" % (ROUNDS, survived))

    def check_round(self, d, load, survived):
        s, listed = d.json("GET", "/v1/execs")
        self.assertEqual(s, 200)
        records = {e["id"]: e for e in listed["execs"]}
        for exec_id, seen in load.seen_exited.items():
            self.assertEqual(records[exec_id], seen, exec_id)
            s, _, out = d.request("GET", "/v1/execs/%s/stdout" % exec_id)
            self.assertEqual(out, expected_output(load.started[exec_id]), exec_id)
            survived["exited_intact"] += 1
        for exec_id, obj in records.items():
            if not exec_id.startswith("r%d-" % load.round) or exec_id in load.seen_exited:
                continue
            # Caught running: its holder kept it (proc/exec_holder.h), so it
            # ends with its true status and all of its output.
            caught = obj["state"] == "running"
            obj = wait_exit(d, exec_id)
            self.assertEqual((obj["exit_code"], obj["killed_by"]), (0, None), obj)
            s, _, out = d.request("GET", "/v1/execs/%s/stdout" % exec_id)
            self.assertEqual(out, expected_output(load.started[exec_id]), exec_id)
            survived["caught_running"] += caught
        for path, content in load.files.items():
            with open(path, "rb") as f:
                data = f.read()
            # The last answered write, or a later one that was committed
            # whole before the kill (never a mix, never a torn file).
            self.assertTrue(data == content or len(data) % (256 * 1024) == 0, path)
            survived["files"] += 1


if __name__ == "__main__":
    unittest.main()
