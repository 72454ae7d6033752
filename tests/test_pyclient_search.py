"""The Python client's search and glob (sync and asyncio) against the real
daemon, and a stream cut before its summary raising instead of answering a
partial result."""

import asyncio
import http.server
import os
import shutil
import socketserver
import tempfile
import threading
import unittest

from lib import pyclient  # noqa: F401  (puts client/python on sys.path)
from lib.agentd_test import Daemon

import agentd_client as ac
from agentd_client.aio import AsyncClient


class PyClientSearchTest(unittest.TestCase):
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
        self.dir = tempfile.mkdtemp(prefix="pyclient-search-")
        for rel, text in (("a.py", "x = 1\nneedle = 2\n"), ("b.txt", "Needle\n"),
                          ("vendor/c.py", "needle\n"), ("skip.log", "needle\n"),
                          (".gitignore", "*.log\n")):
            p = os.path.join(self.dir, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def rel(self, paths):
        return [os.path.relpath(p, self.dir) for p in paths]

    def test_search_answers_matches_and_the_summary(self):
        seen = []
        r = self.c.search(self.dir, "needle", on_match=seen.append)
        self.assertEqual([(os.path.relpath(m.path, self.dir), m.line, m.column, m.text)
                          for m in r.matches],
                         [("a.py", 2, 1, "needle = 2"), ("vendor/c.py", 1, 1, "needle")])
        self.assertEqual(seen, r.matches)
        self.assertEqual((r.summary.matches, r.summary.truncated, r.summary.bound), (2, False, None))

    def test_search_options_reach_the_daemon(self):
        r = self.c.search(self.dir, "needle", ignore_case=True, glob=["*.txt", "*.py"],
                          exclude=["vendor"], context=1)
        self.assertEqual(self.rel(m.path for m in r.matches), ["a.py", "b.txt"])
        self.assertEqual(r.matches[0].before, ["x = 1"])
        r = self.c.search(self.dir, "needle", gitignore=False, max_results=1)
        self.assertEqual((len(r.matches), r.summary.bound), (1, "results"))
        r = self.c.search(self.dir, "n.edle", fixed=True)
        self.assertEqual(r.matches, [])
        with self.assertRaises(ac.InvalidRequest) as e:
            self.c.search(self.dir, "a(b")
        self.assertEqual(e.exception.details.get("field"), "pattern")

    def test_glob_answers_sorted_stats(self):
        g = self.c.glob(self.dir, "**/*.{py,log}")
        self.assertEqual(self.rel(e.path for e in g.entries), ["a.py", "vendor/c.py"])
        self.assertEqual(g.entries[0].type, "file")
        g = self.c.glob(self.dir, "*", gitignore=False, max_results=2)
        self.assertEqual((self.rel(e.path for e in g.entries), g.truncated),
                         (["a.py", "b.txt"], True))

    def test_the_asyncio_client_searches_and_globs(self):
        async def main():
            async with AsyncClient(self.url, token="test-token") as guest:
                r = await guest.search(self.dir, "needle")
                g = await guest.glob(self.dir, "*.py")
                return r, g
        r, g = asyncio.run(main())
        self.assertEqual(len(r.matches), 2)
        self.assertEqual(self.rel(e.path for e in g.entries), ["a.py"])


class CutStreamHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        line = (b'{"type":"match","path":"/x","line":1,"column":1,"text":"t","cut":false}\n')
        self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(line), line))

    def log_message(self, *args):
        pass


class PyClientSearchCutTest(unittest.TestCase):
    def test_a_stream_without_its_summary_raises(self):
        server = socketserver.TCPServer(("127.0.0.1", 0), CutStreamHandler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            c = ac.Client("http://127.0.0.1:%d" % server.server_address[1], token="t")
            with self.assertRaises(ac.ProtocolError):
                c.search("/x", "t")
            c.close()
        finally:
            server.shutdown()
            server.server_close()


if __name__ == "__main__":
    unittest.main()
