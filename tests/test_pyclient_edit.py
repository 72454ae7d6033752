"""The Python client's edit() (sync and asyncio) against the real daemon:
the new tag and diff, EditMismatch with the lines found, PreconditionFailed."""

import asyncio
import os
import shutil
import tempfile
import unittest

from lib import pyclient  # noqa: F401  (puts client/python on sys.path)
from lib.agentd_test import Daemon

import agentd_client as ac
from agentd_client.aio import AsyncClient


class PyClientEditTest(unittest.TestCase):
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
        self.dir = tempfile.mkdtemp(prefix="pyclient-edit-")
        self.p = os.path.join(self.dir, "f.py")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_edit_answers_the_new_tag_and_the_diff(self):
        st = self.c.write_file(self.p, "a = 1\nb = 2\n")
        r = self.c.edit(self.p, [("b = 2", "b = 3")], if_match=st.etag)
        self.assertEqual(r.etag, self.c.stat(self.p).etag)
        self.assertIn("-b = 2\n+b = 3\n", r.diff)
        r = self.c.edit(self.p, line_edits=[{"start_line": 1, "end_line": 1, "text": "a = 0"}])
        self.assertEqual(self.c.read_file(self.p), b"a = 0\nb = 3\n")

    def test_edit_mismatch_names_the_edit_and_the_lines(self):
        self.c.write_file(self.p, "x\ny\nx\n")
        with self.assertRaises(ac.EditMismatch) as cm:
            self.c.edit(self.p, [("y", "z"), {"old": "x", "new": "w", "count": 1}])
        d = cm.exception.details
        self.assertEqual((d["edit"], d["found"], d["lines"]), (1, 2, [1, 3]))
        self.assertEqual(self.c.read_file(self.p), b"x\ny\nx\n")

    def test_asyncio_edit_with_a_stale_tag_raises(self):
        async def go():
            async with AsyncClient(self.url, token="test-token") as guest:
                first = await guest.write_file(self.p, "v1\n")
                await guest.write_file(self.p, "v2\n")
                with self.assertRaises(ac.PreconditionFailed):
                    await guest.edit(self.p, [("v2", "v3")], if_match=first.etag)
                return await guest.read_file(self.p)
        self.assertEqual(asyncio.run(go()), b"v2\n")


if __name__ == "__main__":
    unittest.main()
