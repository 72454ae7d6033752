"""The Python client's ETags and preconditions (sync and asyncio) against the
real daemon: tags on read and stat, guarded writes, removes and renames
raising PreconditionFailed with the current tag and changing nothing."""

import asyncio
import os
import shutil
import tempfile
import unittest

from lib import pyclient  # noqa: F401  (puts client/python on sys.path)
from lib.agentd_test import Daemon
from lib.scratch_case import tag_of

import agentd_client as ac
from agentd_client.aio import AsyncClient


class PyClientEtagTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()
        cls.url = "http://127.0.0.1:%d" % cls.daemon.port
        cls.c = ac.Client(cls.url, token="test-token")

    @classmethod
    def tearDownClass(cls):
        cls.c.close()
        cls.daemon.close()

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="pyclient-etag-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, rel):
        return os.path.join(self.dir, rel)

    def test_read_stat_and_write_expose_the_same_tag(self):
        written = self.c.write_file(self.path("f"), b"a\nb\n")
        self.assertEqual(written.etag, tag_of(b"a\nb\n"))
        self.assertEqual(self.c.stat(self.path("f")).etag, written.etag)
        got = self.c.read_file_with_etag(self.path("f"), start_line=2)
        self.assertEqual((got.data, got.etag), (b"b\n", written.etag))
        self.assertIsNone(self.c.stat(self.dir).etag)

    def test_a_stale_if_match_raises_with_the_current_tag_and_keeps_the_file(self):
        first = self.c.write_file(self.path("f"), b"v1")
        self.c.write_file(self.path("f"), b"v2", if_match=first.etag)
        with self.assertRaises(ac.PreconditionFailed) as cm:
            self.c.write_file(self.path("f"), b"v3", if_match=first.etag)
        self.assertEqual(cm.exception.status, 412)
        self.assertEqual(cm.exception.details["etag"], tag_of(b"v2"))
        self.assertEqual(self.c.read_file(self.path("f")), b"v2")

    def test_if_none_match_creates_once(self):
        self.c.write_file(self.path("new"), "x", if_none_match=True)
        with self.assertRaises(ac.PreconditionFailed):
            self.c.write_file(self.path("new"), "y", if_none_match=True)
        self.assertEqual(self.c.read_file(self.path("new")), b"x")

    def test_guarded_remove_and_rename(self):
        st = self.c.write_file(self.path("f"), b"data")
        with self.assertRaises(ac.PreconditionFailed):
            self.c.remove(self.path("f"), if_match=tag_of(b"other"))
        with self.assertRaises(ac.PreconditionFailed):
            self.c.rename(self.path("f"), self.path("g"), if_match=tag_of(b"other"))
        self.c.write_file(self.path("taken"), b"t")
        with self.assertRaises(ac.PreconditionFailed):
            self.c.rename(self.path("f"), self.path("taken"), if_none_match=True)
        self.c.rename(self.path("f"), self.path("g"), if_match=st.etag)
        self.assertEqual(self.c.remove(self.path("g"), if_match=st.etag), 1)
        self.assertFalse(os.path.exists(self.path("g")))

    def test_a_write_with_etag_false_answers_no_tag_and_a_later_stat_hashes_it(self):
        data = os.urandom((1 << 20) + 77)
        st = self.c.write_file(self.path("f"), data, etag=False)
        self.assertIsNone(st.etag)
        self.assertEqual(st.size, len(data))
        with open(self.path("f"), "rb") as f:
            self.assertEqual(f.read(), data)
        self.assertEqual(self.c.stat(self.path("f")).etag, tag_of(data))
        streamed = self.c.write_file_from(self.path("g"), iter([data[:5000], data[5000:]]), etag=False)
        self.assertIsNone(streamed.etag)
        self.assertEqual(self.c.read_file_with_etag(self.path("g")).etag, tag_of(data))
        self.assertEqual(self.c.write_file(self.path("h"), data).etag, tag_of(data))

    def test_a_write_with_etag_false_is_still_guarded(self):
        self.c.write_file(self.path("f"), b"v1")
        with self.assertRaises(ac.PreconditionFailed) as cm:
            self.c.write_file(self.path("f"), b"v2", if_match=tag_of(b"v0"), etag=False)
        self.assertEqual(cm.exception.details["etag"], tag_of(b"v1"))
        self.assertEqual(self.c.read_file(self.path("f")), b"v1")
        st = self.c.write_file(self.path("f"), b"v2", if_match=tag_of(b"v1"), etag=False)
        self.assertIsNone(st.etag)
        self.assertEqual(self.c.read_file(self.path("f")), b"v2")

    def test_asyncio_client_passes_preconditions(self):
        async def go():
            async with AsyncClient(self.url, token="test-token") as guest:
                st = await guest.write_file(self.path("a"), b"1")
                got = await guest.read_file_with_etag(self.path("a"))
                with self.assertRaises(ac.PreconditionFailed):
                    await guest.write_file(self.path("a"), b"2", if_match=tag_of(b"0"))
                return st.etag, got.etag
        written, read = asyncio.run(go())
        self.assertEqual((written, read), (tag_of(b"1"), tag_of(b"1")))


if __name__ == "__main__":
    unittest.main()
