"""The Python client's server-side waits (sync and asyncio) against the
real daemon: wait_for_output finds a match split across output chunks and
says when the exec ended without one."""

import asyncio
import os
import socket
import threading
import unittest

from lib import pyclient  # noqa: F401  (puts client/python on sys.path)
from lib.pyclient_case import PyClientCase

import agentd_client as ac
from agentd_client.aio import AsyncClient


class PyClientWaitsTest(PyClientCase):
    SCRATCH_PREFIX = "agentd-pywait-"

    def gated(self, before, after):
        """An exec printing `before`, then `after` once the returned marker exists."""
        marker = os.path.join(self.dir, "go")
        exec_id = ac.mint_exec_id("pw")
        self.c.start_exec(exec_id, command="printf '%s'; while [ ! -e %s ]; do sleep 0.01; done;"
                          " printf '%s'; sleep 600" % (before, marker, after))
        self.addCleanup(self.c.kill_exec, exec_id, "KILL")
        # `before` is in the log before the marker exists.
        while self.c.poll_exec(exec_id, stdout_from=0, wait_ms=10000).stdout.next < len(before):
            pass
        return exec_id, marker

    def test_wait_for_output_finds_a_match_split_across_chunks(self):
        exec_id, marker = self.gated("rea", "dy")
        early = self.c.wait_for_output(exec_id, "ready", timeout=0)
        self.assertEqual((early.matched, early.reason, early.next), (False, "timeout", 0))
        threading.Thread(target=lambda: open(marker, "w").close()).start()
        m = self.c.wait_for_output(exec_id, "re.dy")
        self.assertTrue(m.matched, m)
        self.assertEqual((m.text, m.offset, m.end, m.next), (b"ready", 0, 5, 5))
        self.assertTrue(m.exec.running)

    def test_wait_for_output_says_the_exec_ended_without_a_match(self):
        exec_id = ac.mint_exec_id("pw")
        self.c.start_exec(exec_id, command="echo done >&2; exit 4")
        m = self.c.wait_for_output(exec_id, "nothing like this", stream="stderr")
        self.assertEqual((m.matched, m.reason, m.stream, m.next), (False, "exited", "stderr", 5))
        self.assertEqual(m.exec.exit_code, 4)

    def test_asyncio_wait_for_output(self):
        exec_id, marker = self.gated("abc ", "def")

        async def main():
            async with AsyncClient(self.url, token="test-token") as guest:
                waiting = asyncio.ensure_future(guest.wait_for_output(exec_id, r"c de"))
                await asyncio.sleep(0)
                open(marker, "w").close()
                return await waiting
        m = asyncio.run(main())
        self.assertEqual((m.text, m.offset), (b"c de", 2))

    def test_wait_for_port_and_wait_for_path(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        try:
            self.assertFalse(self.c.wait_for_port(port, timeout=0))
            s.listen()
            self.assertTrue(self.c.wait_for_port(port, timeout=120))
        finally:
            s.close()
        target = os.path.join(self.dir, "flag")
        self.assertFalse(self.c.wait_for_path(target, timeout=0))
        threading.Thread(target=lambda: open(target, "w").close()).start()
        self.assertTrue(self.c.wait_for_path(target, timeout=120))
        threading.Thread(target=os.unlink, args=(target,)).start()
        self.assertTrue(self.c.wait_for_path(target, gone=True, timeout=120))


if __name__ == "__main__":
    unittest.main()
