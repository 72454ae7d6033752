"""GET /v1/fs/watch: inotify changes under a directory as Server-Sent Events."""

import os
import shutil
import signal
import tempfile
import time
import unittest

from lib.agentd_test import Daemon, DaemonTestCase, error_code
from lib.sse_reader import SseStream


def events_until(stream, want, timeout=10):
    """Collects (kind, data) until `want(collected)` holds."""
    got = []
    deadline = time.monotonic() + timeout
    while not want(got):
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError("events so far: %r" % got)
        item = stream.next(timeout=left)
        if item is None:
            got.append(("<end>", None))
            break
        got.append((item[0], item[1]))
    return got


class WatchTest(DaemonTestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="agentd-watch-")
        self.streams = []

    def tearDown(self):
        for s in self.streams:
            s.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def watch(self, path, recursive=False):
        s = SseStream(self.daemon, "/v1/fs/watch?path=%s&recursive=%d" % (path, recursive))
        self.streams.append(s)
        return s

    def p(self, *parts):
        return os.path.join(self.dir, *parts)

    def test_create_modify_rename_remove_arrive_in_order(self):
        s = self.watch(self.dir)
        self.assertEqual(s.status, 200)
        with open(self.p("a.txt"), "w") as f:
            f.write("one")
        with open(self.p("a.txt"), "a") as f:
            f.write("two")
        os.rename(self.p("a.txt"), self.p("b.txt"))
        os.unlink(self.p("b.txt"))
        got = events_until(s, lambda g: any(k == "removed" for k, _ in g))
        # Two writes are one `modified` when the daemon reads them in one
        # batch, two when it reads between them.
        got = [g for i, g in enumerate(got) if i == 0 or g != got[i - 1]]
        kinds = [k for k, _ in got]
        self.assertEqual(kinds, ["created", "modified", "renamed", "removed"], got)
        self.assertEqual(got[0][1], {"path": self.p("a.txt"), "type": "file"})
        self.assertEqual(got[1][1], {"path": self.p("a.txt"), "type": "file"})
        self.assertEqual(got[2][1], {"path": self.p("b.txt"), "type": "file",
                                     "from": self.p("a.txt")})
        self.assertEqual(got[3][1], {"path": self.p("b.txt"), "type": "file"})

    def test_event_ids_increase(self):
        s = self.watch(self.dir)
        for i in range(5):
            open(self.p("f%d" % i), "w").close()
        ids = []
        while len(ids) < 5:
            ev = s.next()
            ids.append(int(ev[2]))
        self.assertEqual(ids, sorted(ids))
        self.assertEqual(len(set(ids)), 5)

    def test_a_new_subdirectory_and_its_files_are_seen_when_recursive(self):
        s = self.watch(self.dir, recursive=True)
        # Made in one go: the file may land before the new directory's
        # watch does; the daemon's scan of the new directory reports it.
        os.makedirs(self.p("sub", "deeper"))
        with open(self.p("sub", "deeper", "x.txt"), "w") as f:
            f.write("x")
        want = ("created", {"path": self.p("sub", "deeper", "x.txt"), "type": "file"})
        got = events_until(s, lambda g: want in g)
        self.assertIn(("created", {"path": self.p("sub"), "type": "dir"}), got)
        # And later changes deep inside are watched too.
        with open(self.p("sub", "deeper", "x.txt"), "a") as f:
            f.write("y")
        got = events_until(s, lambda g: any(k == "modified" for k, _ in g))
        self.assertEqual(got[-1], ("modified", {"path": self.p("sub", "deeper", "x.txt"),
                                                "type": "file"}))

    def test_without_recursive_only_the_top_directory_is_watched(self):
        os.mkdir(self.p("sub"))
        s = self.watch(self.dir)
        open(self.p("sub", "inner"), "w").close()
        open(self.p("top"), "w").close()
        got = events_until(s, lambda g: len(g) >= 1)
        self.assertEqual(got, [("created", {"path": self.p("top"), "type": "file"})])

    def test_a_renamed_directory_reports_new_paths_below_it(self):
        os.makedirs(self.p("old", "in"))
        s = self.watch(self.dir, recursive=True)
        os.rename(self.p("old"), self.p("new"))
        open(self.p("new", "in", "f"), "w").close()
        got = events_until(s, lambda g: any(k == "created" for k, _ in g))
        self.assertEqual(got, [
            ("renamed", {"path": self.p("new"), "type": "dir", "from": self.p("old")}),
            ("created", {"path": self.p("new", "in", "f"), "type": "file"})])

    def test_a_move_out_of_the_tree_is_a_removal(self):
        outside = tempfile.mkdtemp(prefix="agentd-watch-out-")
        self.addCleanup(shutil.rmtree, outside, True)
        open(self.p("leaving"), "w").close()
        s = self.watch(self.dir)
        os.rename(self.p("leaving"), os.path.join(outside, "left"))
        got = events_until(s, lambda g: len(g) >= 1)
        self.assertEqual(got, [("removed", {"path": self.p("leaving"), "type": "file"})])

    def test_removing_the_watched_directory_ends_the_stream(self):
        s = self.watch(self.dir)
        shutil.rmtree(self.dir)
        got = events_until(s, lambda g: g and g[-1][0] == "<end>")
        self.assertIn(("removed", {"path": self.dir, "type": "dir"}), got)

    def test_missing_path_file_and_relative_path_are_refused(self):
        s = self.watch(self.p("missing"))
        self.assertEqual((s.status, error_code(s.body)), (404, "not_found"))
        open(self.p("file"), "w").close()
        s = self.watch(self.p("file"))
        self.assertEqual((s.status, error_code(s.body)), (400, "not_a_directory"))
        s = self.watch("relative/dir")
        self.assertEqual((s.status, error_code(s.body)), (400, "invalid_request"))

    def test_watch_needs_the_token(self):
        status, body = self.daemon.json("GET", "/v1/fs/watch?path=/tmp", auth=False)
        self.assertEqual((status, error_code(body)), (401, "unauthorized"))


class WatchLimitsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="agentd-watch-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def test_a_daemon_stopped_with_a_watch_open_exits_cleanly(self):
        # Regression: the open stream's frame outlived the router that held
        # the watch count, a use after free that ASan (scripts/test-sanitized)
        # turns into an abort and a non-zero exit.
        d = Daemon("--shutdown-grace-ms", "100")
        self.addCleanup(d.close)
        stream = SseStream(d, "/v1/fs/watch?path=" + self.dir)
        self.addCleanup(stream.close)
        self.assertEqual(stream.status, 200)
        self.assertEqual(d.stop(), 0)

    def test_watch_streams_beyond_the_daemon_limit_are_refused(self):
        with Daemon("--max-watches", "2") as d:
            streams = [SseStream(d, "/v1/fs/watch?path=" + self.dir) for _ in range(2)]
            try:
                self.assertEqual([s.status for s in streams], [200, 200])
                third = SseStream(d, "/v1/fs/watch?path=" + self.dir)
                self.assertEqual((third.status, error_code(third.body)),
                                 (503, "too_many_watches"))
                self.assertEqual(third.body["error"]["limit"], 2)
                # A slot comes back when its stream ends.
                streams.pop().close()
                deadline = time.monotonic() + 10
                while True:
                    again = SseStream(d, "/v1/fs/watch?path=" + self.dir)
                    if again.status == 200 or time.monotonic() > deadline:
                        break
                    time.sleep(0.1)
                streams.append(again)
                self.assertEqual(again.status, 200)
            finally:
                for s in streams:
                    s.close()

    def test_a_tree_with_more_directories_than_the_limit_is_refused(self):
        for i in range(5):
            os.makedirs(os.path.join(self.dir, "d%d" % i))
        with Daemon("--watch-max-dirs", "3") as d:
            s = SseStream(d, "/v1/fs/watch?recursive=1&path=" + self.dir)
            self.assertEqual((s.status, error_code(s.body)), (503, "too_many_watches"))
            self.assertEqual(s.body["error"]["limit"], 3)
            s = SseStream(d, "/v1/fs/watch?recursive=0&path=" + self.dir)
            self.assertEqual(s.status, 200)
            s.close()

    def test_new_directories_beyond_the_limit_are_reported_as_overflow(self):
        with Daemon("--watch-max-dirs", "2") as d:
            s = SseStream(d, "/v1/fs/watch?recursive=1&path=" + self.dir)
            try:
                os.mkdir(os.path.join(self.dir, "a"))
                os.mkdir(os.path.join(self.dir, "b"))
                got = events_until(s, lambda g: any(k == "overflow" for k, _ in g))
                self.assertIn(("overflow", {"reason": "directory_limit"}), got)
            finally:
                s.close()

    def test_watch_is_confined_to_the_fs_root(self):
        with Daemon("--fs-root", self.dir) as d:
            s = SseStream(d, "/v1/fs/watch?path=/etc")
            self.assertEqual((s.status, error_code(s.body)), (400, "unsafe_path"))
            os.symlink("/etc", os.path.join(self.dir, "escape"))
            s = SseStream(d, "/v1/fs/watch?path=%s/escape" % self.dir)
            self.assertEqual((s.status, error_code(s.body)), (400, "unsafe_path"))

    @unittest.skipUnless(os.geteuid() == 0, "needs root to lower the kernel's inotify queue")
    def test_a_kernel_queue_overflow_is_an_explicit_event(self):
        knob = "/proc/sys/fs/inotify/max_queued_events"
        with open(knob) as f:
            saved = f.read().strip()
        with Daemon() as d:
            with open(knob, "w") as f:
                f.write("16")  # read when the watch's inotify instance is made
            try:
                s = SseStream(d, "/v1/fs/watch?path=" + self.dir)
            finally:
                with open(knob, "w") as f:
                    f.write(saved)
            try:
                self.assertEqual(s.status, 200)
                # The daemon is stopped while 200 files appear: its queue of
                # 16 must overflow, and the stream must say so.
                os.kill(d.proc.pid, signal.SIGSTOP)
                try:
                    for i in range(200):
                        open(os.path.join(self.dir, "f%03d" % i), "w").close()
                finally:
                    os.kill(d.proc.pid, signal.SIGCONT)
                got = events_until(s, lambda g: any(k == "overflow" for k, _ in g))
                self.assertIn(("overflow", {"reason": "kernel_queue"}), got)
            finally:
                s.close()


if __name__ == "__main__":
    unittest.main()
