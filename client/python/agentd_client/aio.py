"""AsyncClient: the asyncio face of Client, standard library only.

Each call runs the blocking Client's call on a worker thread
(``asyncio.to_thread``-style, through the loop's default executor), so the
event loop never blocks and the guarantees (retries, exactly-once streams,
confined downloads) are the blocking client's own. ``stream()`` is an async
iterator fed by one worker thread through a bounded queue.

    async with AsyncClient(url, token=token) as guest:
        r = await guest.run("make test", timeout_sec=600)
        async for ev in guest.stream(exec_id):
            ...
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
from typing import Any, AsyncGenerator, AsyncIterator, Callable, Iterator, Optional, TypeVar

from ._reactive import WatchStop
from .client import Client
from .types import Cursors, FsWatchEvent, StreamEvent

T = TypeVar("T")
_DONE = object()


class AsyncClient:
    """Awaitable versions of every Client method (same names and arguments)."""

    def __init__(self, url: str = "http://127.0.0.1:7700", token: Optional[str] = None,
                 **options: Any) -> None:
        self.sync = Client(url, token, **options)

    async def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, functools.partial(fn, *args, **kwargs))

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self.sync, name)
        if not callable(fn) or name.startswith("_") or name in ("set_token", "close"):
            return fn

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await self._call(fn, *args, **kwargs)
        call.__name__ = name
        call.__doc__ = fn.__doc__
        return call

    def set_token(self, token: Optional[str]) -> None:
        self.sync.set_token(token)

    async def stream(self, exec_id: str, cursors: Cursors = Cursors(),
                     **kwargs: Any) -> AsyncIterator[StreamEvent]:
        """Client.stream as an async iterator (same events, same exactly-once guarantee)."""
        events = _iterate(lambda: self.sync.stream(exec_id, cursors, **kwargs))
        try:
            async for ev in events:
                yield ev
        finally:
            await events.aclose()  # stops the worker now, not at the loop's shutdown

    async def watch(self, path: str, **kwargs: Any) -> AsyncIterator[FsWatchEvent]:
        """Client.watch as an async iterator (`on_ready` runs on a worker thread)."""
        stop = WatchStop()
        events = _iterate(lambda: self.sync.watch(path, stop=stop, **kwargs))
        try:
            async for ev in events:
                yield ev
        finally:
            stop.stop()  # wakes the worker blocked on the next event
            await events.aclose()

    async def close(self) -> None:
        self.sync.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def _iterate(make: Callable[[], Iterator[T]]) -> AsyncGenerator[T, None]:
    """Runs the blocking iterator `make()` on one worker thread and hands its
    items over through a bounded queue (at most 64 waiting: a slow consumer
    holds the producer back, never the host's memory)."""
    loop = asyncio.get_running_loop()
    q: "asyncio.Queue[Any]" = asyncio.Queue(maxsize=64)
    stop = threading.Event()

    def put(item: Any) -> None:
        if stop.is_set():
            return
        try:
            fut = asyncio.run_coroutine_threadsafe(q.put(item), loop)
        except RuntimeError:
            return  # the loop is closed: nobody awaits this any more
        while not stop.is_set():
            try:
                fut.result(timeout=0.1)
                return
            except concurrent.futures.TimeoutError:
                continue  # the queue is full: wait for the consumer
        fut.cancel()

    def work() -> None:
        gen = make()
        try:
            for item in gen:
                if stop.is_set():
                    break
                put(item)
            put(_DONE)
        except BaseException as e:  # handed to the awaiting side
            put(e)
        finally:
            close = getattr(gen, "close", None)
            if close is not None:
                close()

    worker = threading.Thread(target=work, name="agentd-aio-iterator", daemon=True)
    worker.start()
    try:
        while True:
            item = await q.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while not q.empty():
            q.get_nowait()
