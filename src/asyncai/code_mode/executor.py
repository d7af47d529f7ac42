"""``CodeMode``: wraps tool sources so that the model sees exactly one tool, ``run_code``."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from asyncai.activity import QUIET, Activity
from asyncai.approvals import MutationPolicy
from asyncai.approvals.gate import Approver, check_policy
from asyncai.arguments import check_flag, check_instance, check_method, strings
from asyncai.code_mode.catalog.description import Skills, run_code_definition
from asyncai.code_mode.catalog.entries import build_catalog
from asyncai.code_mode.catalog.observed import ObservedShapes
from asyncai.code_mode.catalog.search import ToolFinder
from asyncai.code_mode.catalog.skills import offered
from asyncai.code_mode.engine.contract import IMPORTABLE_MODULES
from asyncai.code_mode.engine.scope import ReplScope
from asyncai.code_mode.engine.setup import ScopeSetup
from asyncai.code_mode.limits import CodeModeLimits
from asyncai.code_mode.sandbox.config import SandboxConfig
from asyncai.code_mode.sandbox.sandboxes import open_sandbox
from asyncai.code_mode.sandbox.workers import WorkerRoom
from asyncai.code_mode.scopes import ReplScopes
from asyncai.skills.skillset import SkillSet, skill_set
from asyncai.skills.sources import SkillSource
from asyncai.state.stores import StateStore
from asyncai.telemetry.spans import Tracing
from asyncai.tools.routing import RoutedTools, tool_sources
from asyncai.tools.types import ToolCallOutput, ToolDefinition, ToolsChangedListener, ToolSource

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

CLOSED = "this CodeMode was closed (aclose() or the end of its async with); create a new one"
_SEVERAL = "several tool sources go in one list: CodeMode([a, b])"


class CodeMode(ToolSource):
    """Code mode over tool sources: every tool becomes an ``async def`` in the sandbox, and the
    model sees one tool, ``run_code``.

    ``tools`` is one source or several (MCP servers, Python functions; routed by ``RoutedTools``,
    the first to declare a name wins it). ``call_tool`` runs snippets in one shared REPL;
    ``scopes`` keeps one REPL per conversation (``scopes.use(key)``), and ``new_scope()`` makes a
    REPL of its own. Use as ``async with CodeMode(...) as code_mode``: closing it stops every
    sandbox worker, and any use after that is a ``RuntimeError``; the tool sources belong to
    whoever opened them.

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
        skills: SkillSet | Sequence[SkillSource | str | Path] | None = None,
    ) -> None:
        sources = tool_sources(tools, "CodeMode", "tools")
        _check_settings(limits, sandbox, preamble, state_store, activity, observed_shapes, tracer_provider)
        check_policy(mutations, approver, "CodeMode")
        check_flag(speculate, "CodeMode", "speculate")
        speculate_tools = strings(speculate_tools, "CodeMode", "speculate_tools")
        check_flag(trace_content, "CodeMode", "trace_content")
        self.skills = skill_set(skills, "CodeMode", "skills")
        """The skills snippets read and load (``None``: no skill functions)."""
        inner = tools if isinstance(tools, ToolSource) else RoutedTools(sources)
        self.inner = inner
        """The tools snippets call."""
        self.limits = limits or CodeModeLimits()
        self.observed_shapes = observed_shapes
        """Shapes learned from the results of tools without an output schema (``None``: none)."""
        inner_tools = self._with_observed_shapes(inner.tools())
        self.catalog = build_catalog(inner_tools, skills=offered(self.skills))
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
            skills=self.skills,
        )
        self._default = ReplScope(self._setup)
        self.scopes = ReplScopes(self)
        """One REPL per conversation key (the agent's threads; an embedder's conversations)."""
        self._listeners: list[ToolsChangedListener] = []
        self._closed = False
        inner.on_tools_changed(self._inner_tools_changed)

    @property
    def closed(self) -> bool:
        """Whether ``aclose`` ran (or its ``async with`` ended): nothing of it may be used since."""
        return self._closed

    def check_open(self) -> None:
        """``RuntimeError`` once closed: its REPLs and workers are gone, and a new pool must not
        start behind the user's back."""
        if self._closed:
            raise RuntimeError(CLOSED)

    @property
    def mutations(self) -> MutationPolicy:
        """What a nested call to a tool that may change the world needs."""
        return self._setup.mutations

    def on_tools_changed(self, listener: ToolsChangedListener) -> None:
        self.check_open()
        self._listeners.append(listener)

    def _definition(self, inner_tools: list[ToolDefinition]) -> ToolDefinition:
        skills = None
        if self.skills is not None and offered(self.skills):
            listed = [(name, skill.description) for name, skill in self.skills.entries()]
            skills = Skills(offered(self.skills), listed)
        definition = run_code_definition(
            inner_tools,
            self.inner.resource_servers(),
            self.limits.max_result_chars,
            self.limits.catalog_budget,
            skills,
        )
        # The backend runs a model's call to a catalog function by its own name as a snippet.
        return dataclasses.replace(
            definition, callables=tuple(sorted(self.catalog)), importable=tuple(sorted(IMPORTABLE_MODULES))
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
        if self._closed:
            return  # the servers outlive a closed code mode: nobody is left to tell
        await self._catalog_changed()

    async def _catalog_changed(self) -> None:
        inner_tools = self._with_observed_shapes(self.inner.tools())
        self.catalog = build_catalog(inner_tools, skills=offered(self.skills))
        self._setup.catalog = self.catalog
        self._setup.finder = ToolFinder(self.catalog)
        self._setup.run_code = self._definition(inner_tools)
        self._setup.catalog_version += 1
        for listener in self._listeners:
            await listener()

    async def __aenter__(self) -> CodeMode:
        self.check_open()
        if self.skills is not None:
            await self.refresh_skills()
        return self

    async def refresh_skills(self) -> None:
        """List the skills again: ``run_code``'s description and the functions of every scope
        follow (tools-changed listeners are told, as when a server's tools change)."""
        self.check_open()
        if self.skills is None:
            return
        before = offered(self.skills)
        await self.skills.refresh()
        if before or offered(self.skills):  # no skill functions before or now: nothing changed
            await self._catalog_changed()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def tools(self) -> list[ToolDefinition]:
        self.check_open()
        return [self._setup.run_code]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolCallOutput:
        self.check_open()
        return await self._default.call_tool(name, arguments)

    def context_note(self) -> str | None:
        """The variables note of the shared REPL ``call_tool`` uses."""
        self.check_open()
        return self._default.context_note()

    def new_scope(self, caller: str | None = None) -> ReplScope:
        """A REPL of its own (closed with ``aclose``, or when the code mode closes); its snippets
        see ``caller``'s view of the skills (``SkillSet.for_caller``)."""
        self.check_open()
        return ReplScope(self._setup, self.skills.for_caller(caller) if self.skills is not None else None)

    async def aclose(self) -> None:
        """Close every scope that holds a worker, then the worker pool. Closing twice is harmless;
        using it afterwards is a ``RuntimeError``."""
        if self._closed:
            return
        self._closed = True
        self._setup.closed = CLOSED  # a scope made earlier (new_scope, a held use.scope) raises too
        await self.scopes.aclose()
        await asyncio.gather(*(scope.aclose() for scope in [*self._setup.room.holders]))
        await self.sandbox.aclose()
        if self.observed_shapes is not None:
            self.observed_shapes.save()


def _check_settings(
    limits: object,
    sandbox: object,
    preamble: object,
    state_store: object,
    activity: object,
    observed_shapes: object,
    tracer_provider: object,
) -> None:
    """``CodeMode``'s settings objects: each of the kind it accepts, else a one-line error naming it."""
    owner = "CodeMode"
    hint = _SEVERAL if isinstance(limits, ToolSource) else None
    check_instance(limits, CodeModeLimits | None, owner, "limits", "an asyncai.CodeModeLimits or None", hint)
    check_instance(sandbox, SandboxConfig | None, owner, "sandbox", "an asyncai.SandboxConfig or None")
    check_instance(preamble, str | None, owner, "preamble", "Python source (a str) or None")
    if state_store is not None:
        stores = "asyncai.DirectoryStore(path) or asyncai.RedisStore(url, ttl)"
        check_method(state_store, "load", owner, "state_store", "an asyncai.StateStore or None", stores)
    check_instance(activity, Activity, owner, "activity", "an asyncai.Activity (a subclass of it)")
    shapes = "an asyncai.ObservedShapes or None"
    check_instance(observed_shapes, ObservedShapes | None, owner, "observed_shapes", shapes)
    if tracer_provider is not None:
        providers = "an opentelemetry TracerProvider or None"
        check_method(tracer_provider, "get_tracer", owner, "tracer_provider", providers)
