"""``CodeMode``: wraps tool sources so that the model sees exactly one tool, ``run_code``."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from asyncai.activity import QUIET, Activity
from asyncai.approvals.gate import Approver, MutationPolicy
from asyncai.code_mode.catalog.description import run_code_definition
from asyncai.code_mode.catalog.entries import build_catalog
from asyncai.code_mode.catalog.observed import ObservedShapes
from asyncai.code_mode.catalog.search import ToolFinder
from asyncai.code_mode.engine.repl import ReplScope, ScopeSetup
from asyncai.code_mode.limits import CodeModeLimits
from asyncai.code_mode.sandbox.config import SandboxConfig
from asyncai.code_mode.sandbox.sandboxes import open_sandbox
from asyncai.code_mode.sandbox.workers import WorkerRoom
from asyncai.code_mode.scopes import ReplScopes
from asyncai.state.stores import StateStore
from asyncai.telemetry.spans import Tracing
from asyncai.tools.routing import RoutedTools
from asyncai.tools.types import ToolCallOutput, ToolDefinition, ToolsChangedListener, ToolSource

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider


class CodeMode(ToolSource):
    """Code mode over tool sources: every tool becomes an ``async def`` in the sandbox, and the
    model sees one tool, ``run_code``.

    ``tools`` is one source or several (MCP servers, Python functions; routed by ``RoutedTools``,
    the first to declare a name wins it). ``call_tool`` runs snippets in one shared REPL;
    ``scopes`` keeps one REPL per conversation (``scopes.use(key)``), and ``new_scope()`` makes a
    REPL of its own. Use as ``async with CodeMode(...) as code_mode``: closing it stops every
    sandbox worker; the tool sources belong to whoever opened them.

    Each snippet is an OpenTelemetry span (``execute_tool run_code``), each nested call its child,
    made with ``tracer_provider`` (default: the global one, which records nothing unless set up);
    ``trace_content`` adds the code and the call arguments as span events (they can hold secrets).
    """

    def __init__(
        self,
        tools: ToolSource | Sequence[ToolSource],
        limits: CodeModeLimits | None = None,
        sandbox: SandboxConfig | None = None,
        preamble: str | None = None,
        mutations: MutationPolicy = "allow",
        approver: Approver | None = None,
        state_store: StateStore | None = None,
        activity: Activity = QUIET,
        observed_shapes: ObservedShapes | None = None,
        speculate: bool = True,
        speculate_tools: Collection[str] = (),
        tracer_provider: TracerProvider | None = None,
        trace_content: bool = False,
    ) -> None:
        inner = tools if isinstance(tools, ToolSource) else RoutedTools(tools)
        self.inner = inner
        """The tools snippets call."""
        self.limits = limits or CodeModeLimits()
        self.observed_shapes = observed_shapes
        """Shapes learned from the results of tools without an output schema (``None``: none)."""
        inner_tools = self._with_observed_shapes(inner.tools())
        self.catalog = build_catalog(inner_tools)
        self.sandbox = open_sandbox(sandbox or SandboxConfig(), self.limits)
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
            shapes=observed_shapes,
            speculate=speculate,
            speculate_tools=frozenset(speculate_tools),
            tracing=Tracing(tracer_provider, content=trace_content),
        )
        self._default = ReplScope(self._setup)
        self.scopes = ReplScopes(self)
        """One REPL per conversation key (the agent's threads; an embedder's conversations)."""
        self._listeners: list[ToolsChangedListener] = []
        inner.on_tools_changed(self._inner_tools_changed)

    @property
    def mutations(self) -> MutationPolicy:
        """What a nested call to a tool that may change the world needs."""
        return self._setup.mutations

    def on_tools_changed(self, listener: ToolsChangedListener) -> None:
        self._listeners.append(listener)

    def _definition(self, inner_tools: list[ToolDefinition]) -> ToolDefinition:
        return run_code_definition(
            inner_tools,
            self.inner.resource_servers(),
            self.limits.max_result_chars,
            self.limits.catalog_budget,
        )

    def _with_observed_shapes(self, tools: list[ToolDefinition]) -> list[ToolDefinition]:
        """The tools, those without an output schema with the shape their results had so far."""
        shapes = self.observed_shapes
        if shapes is None:
            return tools
        return [
            dataclasses.replace(tool, observed_output_schema=observed)
            if tool.output_schema is None and (observed := shapes.schema(tool)) is not None
            else tool
            for tool in tools
        ]

    async def _inner_tools_changed(self) -> None:
        """A wrapped server's tools changed: a new catalog and description for every scope."""
        inner_tools = self._with_observed_shapes(self.inner.tools())
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
        """The variables note of the shared REPL ``call_tool`` uses."""
        return self._default.context_note()

    def new_scope(self) -> ReplScope:
        """A REPL of its own (closed with ``aclose``, or when the code mode closes)."""
        return ReplScope(self._setup)

    async def aclose(self) -> None:
        """Close every scope that holds a worker, then the worker pool."""
        await self.scopes.aclose()
        await asyncio.gather(*(scope.aclose() for scope in [*self._setup.room.holders]))
        await self.sandbox.aclose()
        if self.observed_shapes is not None:
            self.observed_shapes.save()
