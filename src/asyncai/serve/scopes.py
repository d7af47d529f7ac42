"""One REPL per MCP client session: an LRU (the executor's thread scopes), idle ones closed."""

from __future__ import annotations

import time
from collections.abc import Callable

from asyncai.code_mode import CodeMode
from asyncai.code_mode.engine.repl import ReplScope
from asyncai.log import log_event

DEFAULT_IDLE_TIMEOUT = 30 * 60.0
"""A session's REPL is closed after this long without a call (the SDK's HTTP session default)."""


class SessionScopes:
    """REPL scopes by client-session key; each remembers the variables note it last sent."""

    def __init__(
        self,
        executor: CodeMode,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.executor = executor
        self.idle_timeout = idle_timeout
        self.clock = clock
        self._last_use: dict[str, float] = {}
        self._notes: dict[str, str | None] = {}

    async def scope(self, key: str) -> ReplScope:
        await self.close_idle()
        self._last_use[key] = self.clock()
        return self.executor.thread_scope(key)

    def changed_note(self, key: str, note: str | None) -> str | None:
        """``note`` when it differs from the one this session saw last, else ``None``."""
        if self._notes.get(key) == note:
            return None
        self._notes[key] = note
        return note

    async def release(self, key: str) -> None:
        """The client session ended: its REPL and worker go now."""
        self._last_use.pop(key, None)
        self._notes.pop(key, None)
        await self.executor.release_thread(key)
        log_event("serve.session_released", session=key)

    async def close_idle(self) -> None:
        deadline = self.clock() - self.idle_timeout
        for key in self.executor.idle_threads():
            if self._last_use.get(key, deadline) <= deadline:
                await self.release(key)
