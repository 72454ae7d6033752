"""The Python client's watch, port list and TCP tunnels (sync and asyncio)
against the real daemon over real sockets: file system events in order, a
lost watch reported as an overflow, raw tunnels with half-close, a local
listener forwarding to a guest port, and bounded reads of a hostile
tunnel answer."""

import asyncio
import os
import shutil
import socket
import threading
import unittest

from lib import pyclient  # noqa: F401  (puts client/python on sys.path)
from lib.echo_server import EchoServer, free_port
from lib.pyclient_case import PyClientCase
from lib.cutting_proxy import CuttingProxy

import agentd_client as ac
from agentd_client.aio import AsyncClient
from agentd_client.tunnel import MAX_HEAD, TunnelForwarder


class PyClientReactiveTest(PyClientCase):
    SCRATCH_PREFIX = "agentd-pyreact-"

    def echo(self):
        server = EchoServer()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        return server

    # -- watch ---------------------------------------------------------------

    def test_watch_reports_changes_in_order_once_ready(self):
        target = os.path.join(self.dir, "f")

        def change():
            with open(target, "w") as f:
                f.write("x")
            os.rename(target, target + ".2")
            os.unlink(target + ".2")

        events = []
        for ev in self.c.watch(self.dir, on_ready=change):
            events.append(ev)
            if ev.kind == "removed":
                break
        kinds = [(e.kind, os.path.basename(e.path)) for e in events]
        self.assertEqual(kinds[0], ("created", "f"))
        self.assertIn(("renamed", "f.2"), kinds)
        renamed = [e for e in events if e.kind == "renamed"][0]
        self.assertEqual((renamed.from_path, renamed.type), (target, "file"))
        self.assertEqual(kinds[-1], ("removed", "f.2"))
        self.assertEqual([e.id for e in events], list(range(1, len(events) + 1)))

    def test_a_recursive_watch_sees_new_subdirectories_and_ends_with_the_directory(self):
        root = os.path.join(self.dir, "root")
        os.mkdir(root)
        deep = os.path.join(root, "a", "b")

        def change():
            os.makedirs(deep)
            open(os.path.join(deep, "leaf"), "w").close()

        # The tree goes only once the leaf was reported: removed at once, the
        # new directories could be gone before the daemon looked into them.
        # Should the leaf never be reported, the tree still goes after a
        # while, so the test fails on the assertion below instead of hanging.
        fallback = threading.Timer(120, shutil.rmtree, (root, True))
        fallback.start()
        self.addCleanup(fallback.cancel)
        events = []
        removing = False
        for e in self.c.watch(root, recursive=True, on_ready=change):
            events.append(e)
            # Once: the leaf may be reported twice (by inotify and by the
            # daemon's look into the new directory).
            if (e.kind, e.path) == ("created", os.path.join(deep, "leaf")) and not removing:
                removing = True
                shutil.rmtree(root)
        paths = [e.path for e in events if e.kind == "created"]
        self.assertIn(os.path.join(deep, "leaf"), paths)
        # The watched directory going away is the last event; the iterator ends.
        self.assertEqual((events[-1].kind, events[-1].path), ("removed", root))

    def test_a_lost_watch_is_replaced_and_reported_as_an_overflow(self):
        # The first watch connection is cut right after its answer head: the
        # client watches again and first yields overflow "reconnected".
        head = self.watch_head_length(self.dir)
        budgets = iter([None, head + 3])  # the health check, then the watch
        proxy = CuttingProxy(self.daemon.port, budget=lambda: next(budgets, None))
        self.addCleanup(proxy.close)
        c = ac.Client(proxy.url, token="test-token", max_idle_connections=0,
                      backoff_initial=0.01)
        self.addCleanup(c.close)
        c.health()  # the protocol check, on a connection of its own before the watch
        readies = []

        def ready():
            readies.append(1)
            open(os.path.join(self.dir, "n%d" % len(readies)), "w").close()

        seen = []
        for ev in c.watch(self.dir, on_ready=ready):
            seen.append((ev.kind, ev.reason, os.path.basename(ev.path)))
            if ev.kind == "created" and ev.path.endswith("n2"):
                break
        self.assertEqual(seen[0], ("overflow", "reconnected", ""))
        self.assertEqual(seen[-1], ("created", "", "n2"))
        self.assertEqual(len(readies), 2)
        self.assertGreaterEqual(proxy.cuts, 1)

    def watch_head_length(self, path):
        """The byte length of the daemon's answer head to a watch of `path`."""
        with socket.create_connection(("127.0.0.1", self.daemon.port), timeout=10) as s:
            s.sendall(("GET /v1/fs/watch?path=%s&recursive=0 HTTP/1.1\r\nHost: x\r\n"
                       "Authorization: Bearer test-token\r\nAccept: text/event-stream\r\n\r\n"
                       % path).encode())
            buf = b""
            while b"\r\n\r\n" not in buf:
                buf += s.recv(1)
        return len(buf)

    def test_a_watch_stop_ends_a_watch_blocked_on_its_next_event(self):
        stop = ac.WatchStop()
        events = []
        # on_ready stops it from another thread while it waits: no event
        # ever comes, so only the stop can end the iteration.
        for ev in self.c.watch(self.dir, stop=stop,
                               on_ready=lambda: threading.Thread(target=stop.stop).start()):
            events.append(ev)
        self.assertEqual(events, [])
        self.assertTrue(stop.stopped)

    def test_watch_of_a_missing_directory_raises_not_found(self):
        with self.assertRaises(ac.NotFound):
            next(self.c.watch(os.path.join(self.dir, "absent")))

    # -- ports and tunnels ---------------------------------------------------

    def test_a_tunnel_relays_both_ways_and_passes_the_half_close(self):
        server = self.echo()
        with self.c.open_tunnel(server.port) as t:
            t.sendall(b"hello through the daemon")
            t.shutdown_write()
            self.assertEqual(t.recv_all(1 << 20), b"hello through the daemonbye")

    def test_a_tunnel_to_a_closed_port_is_port_unreachable_at_once(self):
        with self.assertRaises(ac.PortUnreachable) as cm:
            self.c.open_tunnel(free_port())
        self.assertEqual(cm.exception.status, 502)
        with self.assertRaises(ac.InvalidRequest):
            self.c.open_tunnel(70000)

    def test_a_local_listener_forwards_each_connection_through_its_own_tunnel(self):
        server = self.echo()
        with TunnelForwarder(self.c, server.port) as fwd:
            for n in range(3):
                with socket.create_connection(("127.0.0.1", fwd.port), timeout=10) as s:
                    payload = os.urandom(200000)
                    s.sendall(payload)
                    s.shutdown(socket.SHUT_WR)
                    got = b""
                    while True:
                        chunk = s.recv(65536)
                        if not chunk:
                            break
                        got += chunk
                    self.assertEqual(got, payload + b"bye", n)
        self.assertEqual(fwd.errors, [])

    def test_a_hostile_tunnel_answer_is_bounded(self):
        # A "daemon" that sends an endless answer head: the client stops at
        # MAX_HEAD instead of holding what it is sent.
        listener = socket.create_server(("127.0.0.1", 0))
        self.addCleanup(listener.close)

        def flood(conn):
            with conn:
                try:
                    conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\n")
                    for _ in range(64 * MAX_HEAD // 1000):
                        conn.sendall(b"X-Filler: " + b"a" * 990 + b"\r\n")
                except OSError:
                    pass  # the client stopped reading

        def serve():
            while True:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                threading.Thread(target=flood, args=(conn,), daemon=True).start()
        threading.Thread(target=serve, daemon=True).start()
        c = ac.Client("http://127.0.0.1:%d" % listener.getsockname()[1], token="t",
                      max_attempts=1)
        self.addCleanup(c.close)
        with self.assertRaises(ac.ProtocolError):
            c.open_tunnel(8000)

    # -- asyncio ---------------------------------------------------------------

    def test_the_asyncio_client_watches_and_tunnels(self):
        server = self.echo()
        target = os.path.join(self.dir, "async-made")

        async def main():
            async with AsyncClient(self.url, token="test-token") as guest:
                events = []
                async for ev in guest.watch(self.dir,
                                            on_ready=lambda: open(target, "w").close()):
                    events.append(ev)
                    break
                t = await guest.open_tunnel(server.port)
                ports = await guest.list_ports()
                return events, t, ports
        events, t, ports = asyncio.run(main())
        with t:
            t.sendall(b"x")
            t.shutdown_write()
            self.assertEqual(t.recv_all(100), b"xbye")
        self.assertEqual((events[0].kind, events[0].path), ("created", target))
        self.assertIn(server.port, [p.port for p in ports])

    def test_the_asyncio_client_reattaches_from_a_persisted_id_and_cursors(self):
        exec_id = ac.mint_exec_id("pr")
        marker = os.path.join(self.dir, "go")
        self.c.start_exec(exec_id, command="echo line1; while [ ! -e %s ]; do sleep 0.01; done;"
                          " for i in 2 3 4 5; do echo line$i; done" % marker)
        first = []
        cursors = ac.Cursors()
        for ev in self.c.stream(exec_id):
            if isinstance(ev, ac.OutputEvent):
                first.append(ev.data)
                cursors = ev.cursors
                break
        self.assertEqual(b"".join(first), b"line1\n")
        open(marker, "w").close()  # the rest is printed once the first reader is gone

        async def resume():
            async with AsyncClient(self.url, token="test-token") as fresh:
                rest = []
                async for ev in fresh.stream(exec_id, cursors):
                    if isinstance(ev, ac.OutputEvent):
                        rest.append(ev.data)
                return rest
        rest = asyncio.run(resume())
        self.assertEqual(b"".join(first + rest), b"".join(b"line%d\n" % i for i in range(1, 6)))


if __name__ == "__main__":
    unittest.main()
