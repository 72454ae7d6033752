"""Ranged line reads: start_line/end_line exactly as the contract says."""

import os
import shutil
import subprocess
import tempfile
import unittest

from lib.agentd_test import DaemonTestCase
from lib.fs_helpers import url


def reference(data, start, end):
    """1-based inclusive lines, through EOF; the last line may lack "\\n"."""
    lines = split_lf(data)
    start = start or 1
    end = end or len(lines)
    return b"".join(lines[start - 1:end])


def split_lf(data):
    parts = data.split(b"\n")
    lines = [p + b"\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


class LineRangeTest(DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.dir = tempfile.mkdtemp(prefix="agentd-lines-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)
        super().tearDownClass()

    def file(self, name, data):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def lines(self, path, start=None, end=None):
        params = {"path": path}
        if start is not None:
            params["start_line"] = str(start)
        if end is not None:
            params["end_line"] = str(end)
        status, _, body = self.daemon.request("GET", url("/v1/fs/file", **params))
        return status, body

    def check(self, data, ranges):
        path = self.file("f", data)
        for start, end in ranges:
            status, body = self.lines(path, start, end)
            self.assertEqual(status, 200, (start, end, body[:200]))
            self.assertEqual(body, reference(data, start, end), (start, end))

    def test_empty_file_has_no_lines(self):
        path = self.file("empty", b"")
        for start, end in [(1, None), (1, 1), (3, 7), (None, 2)]:
            self.assertEqual(self.lines(path, start, end), (200, b""))

    def test_last_line_without_newline(self):
        self.check(b"one\ntwo\nthree", [(3, 3), (2, None), (1, 2), (3, 10), (4, None), (None, 1)])
        path = self.file("nonl", b"one\ntwo\nthree")
        self.assertEqual(self.lines(path, 3, 3), (200, b"three"))

    def test_trailing_newline_does_not_add_a_line(self):
        path = self.file("nl", b"a\nb\n")
        self.assertEqual(self.lines(path, 2, 2), (200, b"b\n"))
        self.assertEqual(self.lines(path, 3), (200, b""))

    def test_crlf_lines_are_byte_identical(self):
        data = b"first\r\nsecond\r\n\r\nfourth\r\n"
        path = self.file("crlf", data)
        self.assertEqual(self.lines(path, 2, 3), (200, b"second\r\n\r\n"))
        self.assertEqual(self.lines(path, 4), (200, b"fourth\r\n"))

    def test_end_past_eof_reads_through_eof_and_start_past_eof_is_empty(self):
        path = self.file("short", b"1\n2\n3\n")
        self.assertEqual(self.lines(path, 2, 1000), (200, b"2\n3\n"))
        self.assertEqual(self.lines(path, 4, 1000), (200, b""))
        self.assertEqual(self.lines(path, 10**12), (200, b""))

    def test_invalid_ranges_are_400_invalid_range(self):
        path = self.file("any", b"x\n")
        for start, end in [(0, None), (-1, 2), (3, 2), ("abc", None), (None, 0), (1, "z")]:
            params = {"path": path}
            if start is not None:
                params["start_line"] = str(start)
            if end is not None:
                params["end_line"] = str(end)
            s, b = self.daemon.json("GET", url("/v1/fs/file", **params))
            self.assertError(s, b, 400, "invalid_range")

    def test_a_single_10_mib_line(self):
        line = b"x" * (10 << 20)
        path = self.file("big", b"before\n" + line + b"\nafter")
        status, body = self.lines(path, 2, 2)
        self.assertEqual(status, 200)
        self.assertEqual(len(body), len(line) + 1)
        self.assertEqual(body, line + b"\n")
        self.assertEqual(self.lines(path, 3), (200, b"after"))
        path = self.file("oneline", line)
        self.assertEqual(self.lines(path, 1, 1)[1], line)
        self.assertEqual(self.lines(path, 2)[1], b"")

    def test_many_lines_match_sed(self):
        data = b"".join(b"line %d %s\n" % (i, b"y" * (i % 97)) for i in range(200_000))
        path = self.file("many", data)
        for start, end in [(1, 1), (1000, 1010), (199_990, 200_000), (150_000, None)]:
            status, body = self.lines(path, start, end)
            sed = subprocess.run(["sed", "-n", "%d,%sp" % (start, end or "$"), path],
                                 stdout=subprocess.PIPE, check=True).stdout
            self.assertEqual((status, body), (200, sed), (start, end))

    def test_lines_combined_with_a_byte_range_is_refused(self):
        path = self.file("both", b"a\nb\n")
        status, _, _ = self.daemon.request("GET", url("/v1/fs/file", path=path, start_line="1"),
                                           headers={"Range": "bytes=0-1"})
        self.assertEqual(status, 400)


if __name__ == "__main__":
    unittest.main()
