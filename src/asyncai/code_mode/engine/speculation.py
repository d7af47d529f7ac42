"""Read-only calls started before the snippet reaches them (speculation).

A call of a read-only tool whose arguments are all literal keywords is launched as soon as its line
has arrived (a streamed snippet) or the snippet has passed its scan (one that arrived whole),
wherever the line is (inside a branch, after a slow statement). When the snippet makes the same
call (the same tool, the same MCP arguments) it takes the launch's result instead of calling again;
a launch nobody claims is cancelled when the snippet ends. Once the snippet makes a mutating call,
no launch is claimed: each may have read the world as it was before that call. Launches are capped
per snippet and counted apart from the snippet's call budget: a claimed one becomes its call.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from asyncai.log import log_event
from asyncai.tools.types import ToolCallOutput

MAX_LAUNCHES = 8
"""Launches per snippet: a loop of literal calls must not fan out unbounded work."""


def arrived_lines(prefix: str, seen: int) -> tuple[list[str], int]:
    """The complete lines of a streaming ``prefix`` after its first ``seen``, and how many lines
    are complete now (a line is complete once its newline arrived)."""
    lines = prefix.splitlines(keepends=True)
    complete = len(lines) if lines and lines[-1].endswith("\n") else len(lines) - 1
    return lines[seen:complete], max(seen, complete)


def _key(tool: str, arguments: Mapping[str, Any]) -> tuple[str, str]:
    return tool, json.dumps(arguments, sort_keys=True, default=repr)


class Speculations:
    """One snippet's launches: started, claimed by the snippet's own call, or cancelled at its end."""

    def __init__(self, cap: int = MAX_LAUNCHES) -> None:
        self.cap = cap
        self._running: dict[tuple[str, str], asyncio.Task[ToolCallOutput]] = {}
        self._dropped: list[asyncio.Task[ToolCallOutput]] = []
        self._closed = False
        self.launched = self.claimed = 0

    def launch(
        self, tool: str, arguments: dict[str, Any], call: Callable[[], Coroutine[Any, Any, ToolCallOutput]]
    ) -> None:
        """Start ``call()`` (the call of ``tool`` with ``arguments``) unless it runs already or the
        cap is reached."""
        key = _key(tool, arguments)
        if self._closed or key in self._running or self.launched >= self.cap:
            return
        self.launched += 1
        self._running[key] = asyncio.ensure_future(call())
        log_event("code_mode.speculative_launch", tool=tool)

    def claim(self, tool: str, arguments: Mapping[str, Any]) -> asyncio.Task[ToolCallOutput] | None:
        """The launch of this very call, now the snippet's own; ``None`` when there is none."""
        if not self._running:  # most calls, once the launches are claimed: no key to make
            return None
        task = self._running.pop(_key(tool, arguments), None)
        if task is not None:
            self.claimed += 1
            log_event("code_mode.speculative_claimed", tool=tool)
        return task

    def invalidate(self) -> None:
        """A mutating call is about to start: a launch may have read the world before it, so none
        is claimed after it (the snippet's own calls go to the server) and none starts later."""
        self._closed = True
        for task in self._running.values():
            task.cancel()
        self._dropped += self._running.values()
        self._running.clear()

    async def cancel_rest(self) -> None:
        """The snippet ended: what it never claimed is stopped, and its result dropped."""
        tasks = [*self._running.values(), *self._dropped]
        self._running.clear()
        self._dropped.clear()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
            for task in tasks:
                if not task.cancelled():
                    task.exception()  # retrieved: an unclaimed failure is nobody's error
            log_event("code_mode.speculative_cancelled", count=len(tasks))

    def report(self) -> dict[str, int]:
        """Launches, and what became of them (an unclaimed one is cancelled as the snippet ends)."""
        return {"launched": self.launched, "claimed": self.claimed, "cancelled": self.launched - self.claimed}
