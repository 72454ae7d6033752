"""One host process drives 64 guests at once: the C++ AsyncClient (one
event loop on one thread, a connection pool per guest; bench/fleet_drive.cc)
and the Python client (a thread per guest, a Client and its pool per
guest). Each guest is a real agentd on its own port; each must print its
own name, take a file and give it back byte for byte, and run `true` to
completion, with every guest's first call in flight at the same moment."""

import json
import os
import shutil
import subprocess
import tempfile
import threading
import unittest

import lib.pyclient  # noqa: F401  (puts client/python on sys.path)
from agentd_client import Client
from lib.agentd_test import Daemon
from lib.guests import BUILD_DIR

GUESTS = 64
RUNS = 8
FLEET_DRIVE = os.path.join(BUILD_DIR, "bench", "fleet_drive")


class FleetDriveTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="agentd-fleet-drive-")
        cls.daemons = []
        try:
            for i in range(GUESTS):
                cls.daemons.append(Daemon(token="fleet-%d" % i))
        except Exception:
            cls.tearDownClass()
            raise
        cls.targets = os.path.join(cls.tmp, "targets")
        with open(cls.targets, "w") as t:
            for i, d in enumerate(cls.daemons):
                token_file = os.path.join(cls.tmp, "token-%d" % i)
                with open(token_file, "w") as f:
                    f.write(d.token + "\n")
                t.write("http://127.0.0.1:%d %s\n" % (d.port, token_file))

    @classmethod
    def tearDownClass(cls):
        for d in cls.daemons:
            d.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_cpp_async_client_drives_64_guests_from_one_event_loop(self):
        r = subprocess.run([FLEET_DRIVE, self.targets, "check", "--runs", str(RUNS)],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        report = json.loads(r.stdout)
        self.assertEqual(report["failures"], "")
        self.assertEqual((report["guests"], report["ok_guests"]), (GUESTS, GUESTS))
        self.assertEqual(report["max_guests_in_flight"], GUESTS, report)
        self.assertEqual(report["runs"], GUESTS * RUNS)

    def test_cpp_fleet_drive_names_the_guest_that_failed(self):
        # The same fleet with one wrong token: that guest, and only it, fails.
        bad = os.path.join(self.tmp, "targets-bad")
        wrong = os.path.join(self.tmp, "wrong-token")
        with open(wrong, "w") as f:
            f.write("not-the-token\n")
        with open(self.targets) as src, open(bad, "w") as dst:
            lines = src.read().splitlines()
            url = lines[5].split()[0]
            lines[5] = "%s %s" % (url, wrong)
            dst.write("\n".join(lines) + "\n")
        r = subprocess.run([FLEET_DRIVE, bad, "check", "--runs", "1"],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        report = json.loads(r.stdout)
        self.assertEqual(report["ok_guests"], GUESTS - 1)
        self.assertIn(url + ": echo:", report["failures"])
        self.assertIn("unauthorized", report["failures"])

    def test_python_client_drives_64_guests_from_threads_of_one_process(self):
        start = threading.Barrier(GUESTS)
        lock = threading.Lock()
        in_flight = [0, 0]  # now, most at once
        errors = {}

        # The first call of each guest waits in the guest until the gate
        # file exists, and the test makes it once all 64 calls are in
        # flight: they overlap by construction, not by luck.
        gate = os.path.join(self.tmp, "gate")

        def tracked(fn, *args, **kw):
            with lock:
                in_flight[0] += 1
                in_flight[1] = max(in_flight[1], in_flight[0])
                if in_flight[1] == GUESTS and not os.path.exists(gate):
                    open(gate, "w").close()
            try:
                return fn(*args, **kw)
            finally:
                with lock:
                    in_flight[0] -= 1

        def drive(i, d):
            name = "guest-%d" % i
            try:
                with Client("http://127.0.0.1:%d" % d.port, token=d.token) as c:
                    start.wait()
                    r = tracked(c.run, ["sh", "-c",
                                        'while [ ! -e "$1" ]; do sleep 0.01; done; echo "$0"',
                                        name, gate])
                    self.assertEqual((r.exit_code, r.stdout), (0, (name + "\n").encode()))
                    payload = name.encode() + b":" + bytes(range(256)) * 16
                    path = "/tmp/fleet-drive-py-" + name
                    tracked(c.write_file, path, payload)
                    self.assertEqual(tracked(c.read_file, path), payload)
                    tracked(c.remove, path)
                    for _ in range(RUNS):
                        self.assertEqual(tracked(c.run, ["true"]).exit_code, 0)
            except Exception as e:  # noqa: BLE001  (reported per guest below)
                errors[name] = repr(e)
                start.abort()  # the others stop waiting for this one
                open(gate, "w").close()

        threads = [threading.Thread(target=drive, args=(i, d))
                   for i, d in enumerate(self.daemons)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, {})
        self.assertEqual(in_flight[1], GUESTS)


if __name__ == "__main__":
    unittest.main()
