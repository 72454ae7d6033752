"""The Python client's calls that mirror the C++ client (docs/CLIENT.md,
"Naming table"), sync and asyncio, against the real daemon: start and
wait in one request, the port list, metrics, and a file written from a
stream."""

import asyncio
import io
import os
import socket
import unittest

from lib import pyclient  # noqa: F401  (puts client/python on sys.path)
from lib.pyclient_case import PyClientCase

import agentd_client as ac
from agentd_client.aio import AsyncClient


class PyClientParityTest(PyClientCase):
    SCRATCH_PREFIX = "agentd-pyparity-"

    def test_start_exec_and_wait_answers_the_exit_and_output_in_one_request(self):
        exec_id = ac.mint_exec_id("pp")
        r = self.c.start_exec_and_wait(exec_id, command="printf out; printf err >&2; exit 3")
        self.assertFalse(r.exec.running)
        self.assertEqual((r.exec.exit_code, r.stdout.data, r.stderr.data), (3, b"out", b"err"))
        # Retry-safe: the same id and request answer the same exec again.
        again = self.c.start_exec_and_wait(exec_id, command="printf out; printf err >&2; exit 3")
        self.assertEqual((again.exec.pid, again.stdout.data), (r.exec.pid, b"out"))

    def test_poll_exec_until_exit_is_not_ended_by_output_alone(self):
        exec_id = ac.mint_exec_id("pp")
        marker = os.path.join(self.dir, "go")
        self.c.start_exec(exec_id, command="echo early; while [ ! -e %s ]; do sleep 0.01; done;"
                          " echo late" % marker)
        self.addCleanup(self.c.kill_exec, exec_id, "KILL")
        # Output past the cursor ends a plain long poll at once.
        early = self.c.poll_exec(exec_id, stdout_from=0, wait_ms=20000)
        self.assertTrue(early.exec.running)
        # With until_exit it waits on through the output for the exit.
        open(marker, "w").close()
        done = self.c.poll_exec(exec_id, stdout_from=0, wait_ms=20000, until_exit=True)
        self.assertFalse(done.exec.running)
        self.assertEqual(done.stdout.data, b"early\nlate\n")

    def test_list_ports_names_a_port_listening_in_the_guest(self):
        listener = socket.socket()
        self.addCleanup(listener.close)
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        ports = self.c.list_ports()
        mine = [p for p in ports if p.port == port]
        self.assertEqual(len(mine), 1, ports)
        self.assertEqual((mine[0].address, mine[0].family), ("127.0.0.1", "ipv4"))
        self.assertIn(self.daemon.port, [p.port for p in ports])

    def test_metrics_is_the_prometheus_text(self):
        self.c.run(["true"])
        text = self.c.metrics()
        self.assertIn("# TYPE agentd_execs_started_total counter", text)
        with self.assertRaises(ac.ProtocolError):
            self.c.metrics(max_bytes=10)  # a longer answer is refused, not held

    def test_write_file_from_streams_a_file_object(self):
        path = os.path.join(self.dir, "streamed")
        data = os.urandom(3 << 20)
        st = self.c.write_file_from(path, io.BytesIO(data), mode=0o640)
        self.assertEqual((st.size, st.mode), (len(data), 0o640))
        with open(path, "rb") as f:
            self.assertEqual(f.read(), data)
        st = self.c.write_file_from(path, iter([b"a", b"", b"bc"]))
        self.assertEqual(self.c.read_file(path), b"abc")
        with self.assertRaises(ac.InvalidRequest):
            self.c.write_file_from(path, b"bytes belong to write_file")

    def test_the_asyncio_client_has_the_same_calls(self):
        async def main():
            async with AsyncClient(self.url, token="test-token") as guest:
                r = await guest.start_exec_and_wait(ac.mint_exec_id("pa"), ["echo", "async"])
                ports = await guest.list_ports()
                text = await guest.metrics()
                d = os.path.join(self.dir, "made", "deep")
                st = await guest.make_dir(d, parents=True)
                return r, ports, text, st
        r, ports, text, st = asyncio.run(main())
        self.assertEqual((r.exec.exit_code, r.stdout.data), (0, b"async\n"))
        self.assertIn(self.daemon.port, [p.port for p in ports])
        self.assertIn("agentd_", text)
        self.assertEqual(st.type, "dir")


if __name__ == "__main__":
    unittest.main()
