"""``ReplScopes``: the REPL of each conversation, and the one lifecycle every run goes through.

A key names whose REPL it is: a conversation thread in the agent, an MCP client's session in
``serve-mcp``, a conversation in a Pydantic AI agent. ``use(key)`` is the lifecycle, written once:
pick the key's scope (least recently used ones give their worker back when workers run short),
take up what was saved for it, hold it for the whole run (so it is not released between two of
the run's snippets), and save it when the run ends, unless the run was cancelled (a cancelled
snippet's REPL was reset, and saving would overwrite good state with nothing).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from asyncai.arguments import check_method, check_number
from asyncai.log import log_event
from asyncai.state.stores import StateLoad

if TYPE_CHECKING:
    from asyncai.code_mode.engine.scope import ReplScope


CLOSED = "these ReplScopes were closed (aclose()); create new ones: ReplScopes(code_mode)"


class ScopeFactory(Protocol):
    """Where new scopes come from (``CodeMode``)."""

    def new_scope(self, caller: str | None = None) -> ReplScope: ...

    def check_open(self) -> None:
        """``RuntimeError`` naming it once it was closed."""


@dataclass(frozen=True)
class ScopeUse:
    """A scope held for one run."""

    scope: ReplScope
    state: StateLoad
    """What became of the state saved for the key when it was first taken up ("none" unsaved)."""
    note: str | None
    """The variables note as the run starts (what the REPL holds), for the run's user message."""


class ReplScopes:
    """REPL scopes by key, made by one ``CodeMode``; a scope unused for ``idle_timeout`` seconds is
    closed (``None``: never)."""

    def __init__(
        self,
        code_mode: ScopeFactory,
        *,
        idle_timeout: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        check_method(code_mode, "new_scope", "ReplScopes", "code_mode", "an asyncai.CodeMode")
        if idle_timeout is not None:
            check_number(idle_timeout, "ReplScopes", "idle_timeout")
        check_method(clock, "__call__", "ReplScopes", "clock", "a function returning seconds")
        self.code_mode = code_mode
        self.idle_timeout = idle_timeout
        self.clock = clock
        self._closed = False
        self._scopes: OrderedDict[str, ReplScope] = OrderedDict()
        self._last_use: dict[str, float] = {}
        self._states: dict[str, StateLoad] = {}
        self._sent_notes: dict[str, str | None] = {}

    def check_open(self) -> None:
        """``RuntimeError`` once these scopes, or the code mode that makes them, were closed: a
        scope kept from before would start a new worker pool behind the user's back."""
        self.code_mode.check_open()  # first: when the CodeMode closed these, it is what to name
        if self._closed:
            raise RuntimeError(CLOSED)

    def get(self, key: str, caller: str | None = None) -> ReplScope:
        """The key's scope, made on first use (for ``caller``: see ``CodeMode.new_scope``)."""
        self.check_open()
        scope = self._scopes.pop(key, None) or self.code_mode.new_scope(caller)
        self._scopes[key] = scope
        self._last_use[key] = self.clock()
        return scope

    def idle(self) -> list[str]:
        """Keys whose REPL is not in use, least recently used first."""
        return [key for key, scope in self._scopes.items() if not scope.busy]

    async def release(self, key: str) -> None:
        """The conversation ended: its REPL and worker go now (a later use starts afresh)."""
        scope = self._scopes.pop(key, None)
        self._last_use.pop(key, None)
        self._states.pop(key, None)
        self._sent_notes.pop(key, None)
        if scope is not None:
            await scope.aclose()
            log_event("code_mode.scope_released", key=key)

    async def close_idle(self) -> None:
        if self.idle_timeout is None:
            return
        deadline = self.clock() - self.idle_timeout
        for key in self.idle():
            if self._last_use.get(key, deadline) <= deadline:
                await self.release(key)

    def note_if_changed(self, key: str, note: str | None) -> str | None:
        """``note`` when it differs from the one last given for ``key``, else ``None`` (serve-mcp
        ends a result with the variables note only when it changed)."""
        if self._sent_notes.get(key) == note:
            return None
        self._sent_notes[key] = note
        return note

    @contextlib.asynccontextmanager
    async def use(
        self,
        key: str | None,
        *,
        saved_as: str | None = None,
        shared: bool = False,
        may_save: Callable[[], bool] = lambda: True,
        caller: str | None = None,
    ) -> AsyncIterator[ScopeUse]:
        """Hold the key's scope for one run (``key=None``: a fresh scope, closed after the run).

        ``saved_as`` is where the scope is saved in the code mode's state store: taken up on the
        key's first run, saved after every run. With ``shared`` (several processes use the store,
        one at a time under a lease) the saved state is taken up whenever another process saved it
        since, and saved only when ``may_save()`` still holds at the end (the lease was kept).
        ``caller``: who runs it, when a new scope is made (its view of the skills)."""
        self.check_open()
        if key is None:
            fresh = self.code_mode.new_scope(caller)
            try:
                with fresh.hold():
                    yield ScopeUse(fresh, "none", fresh.context_note())
            finally:
                await fresh.aclose()
            return
        await self.close_idle()
        scope = self.get(key, caller)
        with scope.hold():  # not parked or released while this run uses it
            synced = False
            if saved_as is not None and shared:
                synced = await scope.saved.sync(saved_as)
                if synced:  # the note of what was taken up went out from where it was saved
                    self.note_if_changed(key, scope.context_note())
            elif saved_as is not None and key not in self._states:
                self._states[key] = await scope.saved.load(saved_as)  # taken up once
            try:
                yield ScopeUse(scope, self._states.get(key, "none"), scope.context_note())
            finally:
                task = asyncio.current_task()
                cancelled = task is not None and task.cancelling() > 0
                if saved_as is not None and not cancelled and (synced or not shared):
                    if may_save():
                        await scope.saved.save(saved_as)
                    else:
                        scope.saved.stamp = None

    async def aclose(self) -> None:
        """Close every scope (their workers go back); ``get`` and ``use`` refuse from now on."""
        self._closed = True
        scopes, self._scopes = list(self._scopes.values()), OrderedDict()
        await asyncio.gather(*(scope.aclose() for scope in scopes))
