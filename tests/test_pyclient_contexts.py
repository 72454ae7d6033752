"""The Python client's stateful contexts (docs/PROTOCOL.md, "Contexts"),
sync and asyncio, against the real daemon."""

import asyncio
import shutil
import unittest

from lib import pyclient  # noqa: F401  (puts client/python on sys.path)
from lib.pyclient_case import PyClientCase

import agentd_client as ac
from agentd_client.aio import AsyncClient


class PyClientContextTest(PyClientCase):
    SCRATCH_PREFIX = "agentd-pyctx-"

    def test_a_context_keeps_its_names_and_ends_with_typed_errors(self):
        info = self.c.create_context("py-keep", cwd=self.dir)
        self.assertEqual((info.id, info.runtime, info.state, info.cwd),
                         ("py-keep", "python", "ready", self.dir))
        # Idempotent: the same create answers the same context.
        self.assertEqual(self.c.create_context("py-keep", cwd=self.dir).pid, info.pid)
        with self.assertRaises(ac.ContextIdConflict):
            self.c.create_context("py-keep")
        self.c.run_in_context("py-keep", "total = 40")
        r = self.c.run_in_context("py-keep", "total += 2\nprint(total)")
        self.assertIsInstance(r, ac.CodeRunResult)
        self.assertEqual((r.exit_code, r.stdout, r.success), (0, "42\n", True))
        # A retried run_id replays: the code ran once.
        a = self.c.run_in_context("py-keep", "total += 1\nprint(total)", run_id="once")
        b = self.c.run_in_context("py-keep", "total += 1\nprint(total)", run_id="once")
        self.assertEqual((a.stdout, b.stdout), ("43\n", "43\n"))
        with self.assertRaises(ac.RunIdConflict):
            self.c.run_in_context("py-keep", "total = 0", run_id="once")
        e = self.c.run_in_context("py-keep", "x = 1\nundefined_name").exception
        self.assertEqual((e["type"], e["line"]), ("NameError", 2))
        self.assertEqual([c.id for c in self.c.list_contexts()], ["py-keep"])
        self.assertEqual(self.c.get_context("py-keep").runs, 4)
        dead = self.c.run_in_context("py-keep", "import time\ntime.sleep(30)", timeout_sec=1)
        self.assertEqual(dead.killed_by, "timeout")
        with self.assertRaises(ac.ContextGone) as gone:
            self.c.run_in_context("py-keep", "print(total)")
        self.assertEqual(gone.exception.details["killed_by"], "timeout")
        fresh = self.c.reset_context("py-keep")
        self.assertEqual(fresh.state, "ready")
        self.assertEqual(self.c.run_in_context("py-keep", "print('total' in dir())").stdout,
                         "False\n")
        ended = self.c.delete_context("py-keep")
        self.assertEqual((ended.state, ended.ended_reason), ("ended", "deleted"))
        with self.assertRaises(ac.ContextNotFound):
            self.c.run_in_context("py-keep", "1")

    @unittest.skipIf(shutil.which("bun") is None, "bun is not installed here")
    def test_a_ts_context_keeps_its_declarations(self):
        info = self.c.create_context("py-ts", "ts", cwd=self.dir)
        self.assertEqual((info.runtime, info.state), ("ts", "ready"))
        self.c.run_in_context("py-ts", "let total: number = 40;\nfunction add(n: number) { total += n }")
        r = self.c.run_in_context("py-ts", "add(2);\nconsole.log(total)")
        self.assertEqual((r.exit_code, r.stdout), (0, "42\n"))
        e = self.c.run_in_context("py-ts", "const o: any = JSON.parse('null');\no.field;").exception
        self.assertEqual((e["type"], e["file"], e["line"]), ("TypeError", "<cell 3>", 2))
        self.assertEqual(self.c.delete_context("py-ts").ended_reason, "deleted")

    def test_the_async_client_runs_in_a_context(self):
        async def go():
            async with AsyncClient(self.url, token="test-token") as guest:
                await guest.create_context("py-async")
                await guest.run_in_context("py-async", "n = 5")
                r = await guest.run_in_context("py-async", "print(n * 2)")
                await guest.delete_context("py-async")
                return r.stdout
        self.assertEqual(asyncio.run(go()), "10\n")


if __name__ == "__main__":
    unittest.main()
