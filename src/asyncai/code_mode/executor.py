"""``CodeMode``: wraps any executor so that the model sees exactly one tool, ``run_code``."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any

from asyncai.activity import QUIET, Activity
from asyncai.approvals.gate import Approver, MutationPolicy
from asyncai.code_mode.catalog.description import run_code_definition
from asyncai.code_mode.catalog.entries import build_catalog
from asyncai.code_mode.catalog.search import ToolFinder
from asyncai.code_mode.engine.repl import ReplScope, ScopeSetup
from asyncai.code_mode.limits import CodeModeLimits
from asyncai.code_mode.sandbox.sandboxes import Sandbox, SandboxConfig
from asyncai.code_mode.sandbox.workers import WorkerRoom
from asyncai.state.stores import StateStore
from asyncai.tools.types import ToolCallOutput, ToolDefinition, ToolsChangedListener, ToolSource


class CodeMode(ToolSource):
    """Every inner tool becomes an ``async def`` in the sandbox; ``tools()`` is ``[run_code]``.

    ``call_tool`` uses one shared default scope; ``run_scope()`` gives a fresh REPL for one run and
    ``thread_scope(id)`` one REPL per conversation thread. Threads are an LRU of 8: the least
    recently used idle scope is closed when a ninth appears (a scope held by a running run waits).
    """

    def __init__(
        self,
        inner: ToolSource,
        limits: CodeModeLimits | None = None,
        sandbox: SandboxConfig | None = None,
        preamble: str | None = None,
        mutations: MutationPolicy = "allow",
        approver: Approver | None = None,
        state_store: StateStore | None = None,
        activity: Activity = QUIET,
    ) -> None:
        self.inner = inner
        self.limits = limits or CodeModeLimits()
        inner_tools = inner.tools()
        self.catalog = build_catalog(inner_tools)
        self.sandbox = Sandbox(sandbox or SandboxConfig(), self.limits)
        self._setup = ScopeSetup(
            run_code=self._definition(inner_tools),
            catalog=self.catalog,
            finder=ToolFinder(self.catalog),
            inner=inner,
            sandbox=self.sandbox,
            operator_preamble=preamble,
            mutations=mutations,
            approver=approver,
            room=WorkerRoom(self.sandbox.config.max_workers, self.sandbox.config.checkout_timeout),
            store=state_store,
            activity=activity,
        )
        self._default = ReplScope(self._setup)
        self._threads: OrderedDict[str, ReplScope] = OrderedDict()
        self._listeners: list[ToolsChangedListener] = []
        inner.on_tools_changed(self._inner_tools_changed)

    def on_tools_changed(self, listener: ToolsChangedListener) -> None:
        self._listeners.append(listener)

    def _definition(self, inner_tools: list[ToolDefinition]) -> ToolDefinition:
        return run_code_definition(
            inner_tools,
            self.inner.resource_servers(),
            self.limits.max_result_chars,
            self.limits.catalog_budget,
        )

    async def _inner_tools_changed(self) -> None:
        """A wrapped server's tools changed: a new catalog and description for every scope."""
        inner_tools = self.inner.tools()
        self.catalog = build_catalog(inner_tools)
        self._setup.catalog = self.catalog
        self._setup.finder = ToolFinder(self.catalog)
        self._setup.run_code = self._definition(inner_tools)
        self._setup.catalog_version += 1
        for listener in self._listeners:
            await listener()

    async def __aenter__(self) -> CodeMode:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def tools(self) -> list[ToolDefinition]:
        return [self._setup.run_code]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolCallOutput:
        return await self._default.call_tool(name, arguments)

    def context_note(self) -> str | None:
        return self._default.context_note()

    def run_scope(self) -> ReplScope:
        return ReplScope(self._setup)

    def thread_scope(self, thread_id: str) -> ReplScope:
        scope = self._threads.pop(thread_id, None) or ReplScope(self._setup)
        self._threads[thread_id] = scope
        return scope

    async def release_thread(self, thread_id: str) -> None:
        """Close a thread's REPL now (its conversation ended); a later use starts a fresh one."""
        scope = self._threads.pop(thread_id, None)
        if scope is not None:
            await scope.aclose()

    def idle_threads(self) -> list[str]:
        """Threads whose REPL is not running a snippet, least recently used first."""
        return [thread for thread, scope in self._threads.items() if not scope.busy]

    async def aclose(self) -> None:
        """Close every scope that holds a worker (thread, per-run or released ones too), then the pool."""
        self._threads.clear()
        await asyncio.gather(*(scope.aclose() for scope in [*self._setup.room.holders]))
        await self.sandbox.aclose()
