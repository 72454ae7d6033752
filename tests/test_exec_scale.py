"""A thousand execs started at once, all accounted for."""

import base64
import os
import threading
import unittest

from lib.agentd_test import Daemon
from lib.exec_util import rss_kib, wait_until


class ThousandExecsTest(unittest.TestCase):
    def test_1000_execs_started_concurrently_all_run_once_and_report(self):
        n, workers = 1000, 25
        with Daemon() as d:
            idle_rss = rss_kib(d.proc.pid)
            results = {}
            lock = threading.Lock()
            barrier = threading.Barrier(workers)

            def worker(w):
                conn = d.connection(timeout=120)
                barrier.wait()
                for i in range(w, n, workers):
                    # Each prints its id, then waits for its stdin to close.
                    s, obj = d.json("PUT", "/v1/execs/many-%d" % i,
                                    {"command": "echo many-%d; exec cat" % i, "stdin_stream": True},
                                    conn=conn)
                    with lock:
                        results[i] = (s, obj)
                conn.close()

            threads = [threading.Thread(target=worker, args=(w,)) for w in range(workers)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual(sorted(s for s, _ in results.values()), [201] * n)
            self.assertEqual(len({obj["pid"] for _, obj in results.values()}), n)
            s, health = d.json("GET", "/v1/health", auth=False)
            self.assertEqual((health["execs"], health["busy"]), (n, True))
            running_rss = rss_kib(d.proc.pid)
            # Let them all finish: close every stdin.
            for i in range(n):
                s, _ = d.json("POST", "/v1/execs/many-%d/stdin?offset=0&eof=1" % i, b"")
                self.assertEqual(s, 200)

            def all_exited():
                s, lst = d.json("GET", "/v1/execs")
                return all(e["state"] == "exited" for e in lst["execs"]) and lst["execs"]

            execs = wait_until(all_exited, timeout=120, interval=0.2, what="all exited")
            self.assertEqual(len(execs), n)
            self.assertEqual({e["exit_code"] for e in execs}, {0})
            for i in (0, 1, 499, 999):
                s, obj = d.json("GET", "/v1/execs/many-%d?stdout_from=0" % i)
                self.assertEqual(base64.b64decode(obj["stdout"]["data_b64"]),
                                 b"many-%d\n" % i)
            s, health = d.json("GET", "/v1/health", auth=False)
            self.assertEqual((health["execs"], health["busy"]), (n, False))
            # A thousand running execs cost the daemon little memory (not
            # measurable under ASan, whose shadow and quarantine are memory).
            if not os.environ.get("AGENTD_UNDER_SANITIZER"):
                self.assertLess(running_rss - idle_rss, 64 * 1024, (idle_rss, running_rss))


if __name__ == "__main__":
    unittest.main()
