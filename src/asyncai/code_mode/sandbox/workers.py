"""``WorkerRoom``: at most ``--code-max-workers`` REPLs hold a sandbox worker at once.

A REPL that needs a worker when every one is taken parks the least recently used REPL that is not
running a snippet (its session is dumped and its worker returned to the pool; its next snippet
restores it). When every worker is running a snippet, it waits for one to end, up to the checkout
timeout. So no thread loses its variables to make room, and the worker processes stay bounded.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Protocol

from asyncai.humanize import seconds


class Parkable(Protocol):
    last_used: int

    @property
    def running(self) -> bool:
        """Running a snippet now: it cannot be parked."""
        ...

    async def park(self) -> bool:
        """Give the worker back, keeping the state; False when it could not (it started running)."""
        ...

    async def aclose(self) -> None: ...


class NoWorker(Exception):
    """Every worker stayed busy running snippets for the whole checkout timeout."""


class WorkerRoom:
    def __init__(self, limit: int, timeout: float) -> None:
        self.limit = limit
        self.timeout = timeout
        self.holders: set[Parkable] = set()
        """The REPLs holding a worker."""
        self._reserved = 0
        self._entering = asyncio.Lock()
        self._changed = asyncio.Event()
        """Set when a REPL may have become parkable or a worker free (``poke``)."""
        self._clock = itertools.count(1)

    def touch(self, scope: Parkable) -> None:
        scope.last_used = next(self._clock)

    async def enter(self, scope: Parkable) -> None:
        """Reserve a worker for ``scope``; then ``entered`` (with the worker) or ``abandon``."""
        deadline = asyncio.get_running_loop().time() + self.timeout
        async with self._entering:
            while len(self.holders) + self._reserved >= self.limit:
                self._changed.clear()  # before looking: a poke while a park is tried is not missed
                idle = [s for s in self.holders if s is not scope and not s.running]
                if idle:
                    oldest = min(idle, key=lambda s: s.last_used)
                    if await oldest.park():
                        self.holders.discard(oldest)  # parked or broken, it holds no worker now
                        continue
                await self._wait_for_a_snippet(deadline)
            self._reserved += 1

    async def _wait_for_a_snippet(self, deadline: float) -> None:
        remaining = deadline - asyncio.get_running_loop().time()
        try:
            await asyncio.wait_for(self._changed.wait(), max(remaining, 0))
        except TimeoutError:
            busy = f"every sandbox worker ({self.limit}) stayed busy running snippets"
            raise NoWorker(f"{busy} for {seconds(self.timeout)}") from None

    def entered(self, scope: Parkable) -> None:
        self._reserved -= 1
        self.holders.add(scope)

    def abandon(self) -> None:
        self._reserved -= 1

    def leave(self, scope: Parkable) -> None:
        self.holders.discard(scope)
        self.poke()

    def poke(self) -> None:
        """A REPL let go of its lock (a snippet or a save ended): it can be parked for one that waits."""
        self._changed.set()
