"""``CodeModeToolExecutor``: wraps any executor so that the model sees exactly one tool, ``run_code``."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any

from ..activity import QUIET, Activity
from ..tools.types import ToolCallOutput, ToolDefinition, ToolExecutor, ToolsChangedListener
from .catalog import RUN_CODE_INPUT_SCHEMA, parameter_names, sanitize_names
from .contract import MAX_RESULT_CHARS
from .description import DEFAULT_CATALOG_BUDGET, run_code_description
from .dispatch import CatalogEntry
from .gate import Approver
from .host_functions import HOST_FUNCTIONS
from .limits import CodeModeLimits, MutationPolicy
from .repl import RUN_CODE, ReplScope, ScopeSetup
from .sandbox import Sandbox, SandboxConfig
from .search import ToolFinder
from .state_store import StateStore
from .workers import WorkerRoom


def callable_tools(tools: list[ToolDefinition]) -> list[ToolDefinition]:
    """The tools a snippet can call: not those that only run as MCP tasks."""
    return [tool for tool in tools if not tool.task_required]


def _entry(tool: ToolDefinition, *, host_function: bool = False) -> CatalogEntry:
    required = {str(name) for name in tool.input_schema.get("required", [])}
    parameters = parameter_names(tool)
    return CatalogEntry(
        tool=tool,
        parameters=parameters,
        required=frozenset(py for py, schema_name in parameters.items() if schema_name in required),
        host_function=host_function,
    )


def build_catalog(tools: list[ToolDefinition]) -> dict[str, CatalogEntry]:
    """Python name -> entry for every callable tool and asyncai's own functions (resources, search)."""
    catalog = {py_name: _entry(tool) for py_name, tool in sanitize_names(callable_tools(tools)).items()}
    for name, tool in HOST_FUNCTIONS.items():
        catalog[name] = _entry(tool, host_function=True)
    return catalog


def run_code_definition(
    tools: list[ToolDefinition],
    resource_servers: list[str] | None = None,
    max_result_chars: int = MAX_RESULT_CHARS,
    budget: int = DEFAULT_CATALOG_BUDGET,
) -> ToolDefinition:
    usable = callable_tools(tools)
    return ToolDefinition(
        name=RUN_CODE,
        description=run_code_description(
            usable,
            resource_servers=resource_servers or [],
            left_out=[tool.name for tool in tools if tool.task_required],
            max_result_chars=max_result_chars,
            budget=budget,
        ),
        input_schema=RUN_CODE_INPUT_SCHEMA,
        read_only=all(tool.read_only for tool in usable),
        destructive=any(tool.destructive for tool in usable),
    )


class CodeModeToolExecutor(ToolExecutor):
    """Every inner tool becomes an ``async def`` in the sandbox; ``tools()`` is ``[run_code]``.

    ``call_tool`` uses one shared default scope; ``run_scope()`` gives a fresh REPL for one run and
    ``thread_scope(id)`` one REPL per conversation thread. Threads are an LRU of 8: the least
    recently used idle scope is closed when a ninth appears (a scope held by a running run waits).
    """

    def __init__(
        self,
        inner: ToolExecutor,
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

    async def __aenter__(self) -> CodeModeToolExecutor:
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
