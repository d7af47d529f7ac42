"""``WallClock``: a snippet's wall-clock deadline, paused while a person decides on a call."""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator
from types import TracebackType

_running: weakref.WeakSet[WallClock] = weakref.WeakSet()
"""The clocks of the snippets running now (``every_clock_paused``)."""


class WallClock:
    """``asyncio.timeout`` for one snippet, with pauses that do not count (waiting for a person)."""

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds
        self._pauses = 0
        self._remaining: float | None = None

    async def __aenter__(self) -> WallClock:
        self._loop = asyncio.get_running_loop()
        # The limit counts from entering, not from construction (asyncio.timeout fixes it when made).
        self._timeout = asyncio.timeout(self._seconds)
        await self._timeout.__aenter__()
        _running.add(self)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        _running.discard(self)
        await self._timeout.__aexit__(kind, exc, tb)

    def expire_within(self, seconds: float) -> None:
        """End the snippet at the latest ``seconds`` from now. Safe from any thread: pydantic-monty
        calls the ``os=`` handler from its own thread."""
        self._loop.call_soon_threadsafe(self._expire_within, seconds)

    def _expire_within(self, seconds: float) -> None:
        if self._pauses > 0:  # applies when the pause ends: the grace must not be lost
            self._remaining = seconds if self._remaining is None else min(self._remaining, seconds)
            return
        when = self._timeout.when()
        deadline = self._loop.time() + seconds
        if when is None or deadline < when:
            self._timeout.reschedule(deadline)

    @contextlib.asynccontextmanager
    async def paused(self) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        self._pauses += 1
        if self._pauses == 1:
            when = self._timeout.when()
            self._remaining = None if when is None else max(when - loop.time(), 0.0)
            self._timeout.reschedule(None)
        try:
            yield
        finally:
            self._pauses -= 1
            if self._pauses == 0 and self._remaining is not None:
                self._timeout.reschedule(loop.time() + self._remaining)


@contextlib.asynccontextmanager
async def every_clock_paused() -> AsyncIterator[None]:
    """While a person answers an MCP server's question: no running snippet's wall clock counts it.
    (A server of the 2025 era asks on its connection's loop, which knows no snippet: all pause.)"""
    async with contextlib.AsyncExitStack() as paused:
        for clock in list(_running):
            await paused.enter_async_context(clock.paused())
        yield
