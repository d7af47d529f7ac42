"""What the stages of a snippet share and use: ``ScopeSetup`` (what every scope of one code mode
shares: the catalog, the sandbox, the policies) and ``Repl`` (what a stage may use of its scope, the
``ReplScope``), so the stages depend on a small seam and not on the scope itself."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Protocol

from asyncai.activity import QUIET, Activity, combined
from asyncai.approvals import MutationPolicy
from asyncai.approvals.gate import Approver, MutationGate
from asyncai.code_mode.catalog.entries import CatalogEntry, Finder
from asyncai.code_mode.catalog.observed import ObservedShapes
from asyncai.code_mode.engine.dispatch import SnippetDispatcher
from asyncai.code_mode.engine.plan import may_speculate
from asyncai.code_mode.engine.preamble import scope_preamble
from asyncai.code_mode.engine.type_check import stub_types, type_check_stubs
from asyncai.code_mode.engine.variables import KnownVariables
from asyncai.code_mode.limits import CodeModeLimits
from asyncai.code_mode.sandbox.interface import Sandbox, Worker
from asyncai.code_mode.sandbox.workers import WorkerRoom
from asyncai.skills.skillset import SkillSet
from asyncai.state.stores import StateStore
from asyncai.telemetry.spans import DEFAULT_TRACING, Tracing
from asyncai.tools.types import ToolDefinition, ToolSource


@dataclass
class ScopeSetup:
    """What every scope of one code-mode executor shares. ``catalog`` and ``run_code`` change when a
    wrapped server's tools change; ``catalog_version`` counts those changes, so a scope created
    earlier feeds the new function wrappers before its next snippet."""

    run_code: ToolDefinition
    catalog: Mapping[str, CatalogEntry]
    inner: ToolSource
    sandbox: Sandbox
    room: WorkerRoom
    """Which scopes hold a worker (what the executor must close), and the bound on how many."""
    operator_preamble: str | None = None
    mutations: MutationPolicy = "allow"
    finder: Finder | None = None
    catalog_version: int = 0
    store: StateStore | None = None
    """Where thread REPLs are saved for resumed sessions (``None``: not saved)."""
    approver: Approver | None = None
    """Asked about mutating calls under ``--mutations ask`` when a call brings no approver of its own."""
    activity: Activity = QUIET
    """Told of every snippet's nested calls (a live display)."""
    shapes: ObservedShapes | None = None
    """Where the shapes of results from tools without an output schema are learned."""
    tracing: Tracing = DEFAULT_TRACING
    """Where the spans of snippets and their nested calls go (``telemetry.spans``)."""
    speculate: bool = True
    """Launch read-only calls with literal arguments as soon as their line streamed (``speculation``)."""
    speculate_tools: frozenset[str] = frozenset()
    """Tools that speculate though they do not declare ``readOnlyHint``."""
    skills: SkillSet | None = None
    """The skills snippets may read and load (``None``: no skill functions)."""
    closed: str | None = None
    """Why no snippet may run any more (the code mode closed); a scope made before says so."""

    def check_open(self) -> None:
        if self.closed is not None:
            raise RuntimeError(self.closed)

    def speculates(self, entry: CatalogEntry) -> bool:
        return may_speculate(entry, enabled=self.speculate, also=self.speculate_tools)

    def dispatcher(
        self, gate: MutationGate, activity: Activity | None, skills: SkillSet | None
    ) -> SnippetDispatcher:
        """The host side of one snippet's nested calls; ``skills``: its REPL's."""
        return SnippetDispatcher(
            self.catalog,
            self.inner,
            self.sandbox.limits,
            gate,
            finder=self.finder,
            activity=combined(self.activity, activity),
            shapes=self.shapes,
            tracing=self.tracing,
            skills=skills,
        )

    _stubs: tuple[int, str] | None = None
    _preamble: tuple[int, str, str] | None = None

    def preamble(self) -> tuple[str, str]:
        """The current catalog's scope preamble (helpers and one wrapper per tool) and its
        fingerprint, made once per catalog version."""
        if self._preamble is None or self._preamble[0] != self.catalog_version:
            source = scope_preamble(self.catalog, stub_types(self.catalog).sources)
            fingerprint = hashlib.sha256(source.encode()).hexdigest()[:32]
            self._preamble = (self.catalog_version, source, fingerprint)
        return self._preamble[1], self._preamble[2]

    def type_check_stubs(self) -> str:
        """The current catalog's type-check stubs, made once per catalog version."""
        if self._stubs is None or self._stubs[0] != self.catalog_version:
            self._stubs = (self.catalog_version, type_check_stubs(self.catalog))
        return self._stubs[1]


class Repl(Protocol):
    """What the stages of a snippet use of its REPL (``scope.ReplScope`` is the one there is)."""

    setup: ScopeSetup
    skills: SkillSet | None
    """The skills its snippets see (``ScopeSetup.skills``, or a caller's view of them)."""
    limits: CodeModeLimits
    known: KnownVariables
    worker: Worker | None
    dump: bytes | None
    """The REPL of a scope that gave its worker back, or a paused snippet's snapshot."""
    paused_as: str | None
    restarted: bool
    abandoned: bool
    checked_snippets: int
    checked_version: int
    wrappers_version: int
    lock: asyncio.Lock

    @property
    def parked(self) -> bool: ...

    def in_use(self) -> AbstractAsyncContextManager[None]:
        """Held while a snippet runs: one at a time."""
        ...

    async def ensure_worker(self) -> Worker: ...

    async def worker_for_resume(self) -> tuple[Worker, bytes]: ...

    async def park_paused(self, snapshot: bytes, pause_id: str) -> None: ...

    async def reset(self, *, discard: bool = False, keep_repl: bool = False) -> None: ...

    def notice(self, restart_asked: bool) -> str | None: ...
