"""Progress of a ``run_code``: each nested call that finishes is one step. A request that carries
``_meta.progressToken`` gets ``notifications/progress`` while it is open; a run that became a task
(``serve.tasks``) shows the same count as its status message instead."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from mcp.server.context import ServerRequestContext

from asyncai.activity import Activity, NestedCall
from asyncai.log import log_event

ProgressListener = Callable[[int, str], None]
"""Told ``(calls finished, message)`` as each nested call finishes."""


class RunProgress(Activity):
    """Counts the nested calls of one ``run_code`` as they finish and tells its listeners."""

    def __init__(self) -> None:
        self.finished = 0
        self.message = ""
        self.answered = False
        """The request was answered before the run ended (a task took it over): no more
        notifications go to it."""
        self._listeners: list[ProgressListener] = []

    def listen(self, listener: ProgressListener) -> None:
        self._listeners.append(listener)

    def call_finished(self, call: NestedCall, seconds: float) -> None:
        self.finished += 1
        calls = f"{self.finished} nested call{'s' * (self.finished != 1)}"
        self.message = f"{calls} done; last: {call.tool} {call.outcome()}"
        for listener in self._listeners:
            listener(self.finished, self.message)


@contextlib.asynccontextmanager
async def notifying(progress: RunProgress, ctx: ServerRequestContext[Any, Any]) -> AsyncIterator[None]:
    """While the body runs, ``notifications/progress`` for the request of ``ctx`` if it asked for
    them: one sender, so they go out in order, and a burst of calls is one notification."""
    if ctx.meta is None or ctx.meta.get("progress_token") is None:
        yield
        return
    changed = asyncio.Event()
    progress.listen(lambda finished, message: changed.set())
    sent = 0

    async def send() -> None:
        nonlocal sent
        while progress.finished > sent and not progress.answered:
            current = progress.finished
            try:
                await ctx.session.report_progress(current, message=progress.message)
            except Exception as exc:  # a client that went away: the run goes on without notifications
                log_event("serve.progress_failed", logging.INFO, error=f"{type(exc).__name__}: {exc}")
                progress.answered = True
            sent = current

    async def sender() -> None:
        while True:
            await changed.wait()
            changed.clear()
            await send()

    task = asyncio.create_task(sender())
    try:
        yield
    finally:
        task.cancel()
        await asyncio.wait({task})
    await send()  # the last calls, before the result goes out (not after a failure or a cancel)
