"""The mutation gate: what a nested call to a tool that may change the world needs before it runs.

``--mutations allow`` (the default) runs it; ``deny`` refuses it; ``ask`` asks a person through an
``Approver`` (serve-mcp asks the MCP client's user by elicitation) and refuses when nobody can be
asked. A refusal becomes a catchable ``PermissionError`` in the snippet and ``"refused": true`` in
the audit. Time spent waiting for the person is not counted against the snippet's wall clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol

from .limits import MutationPolicy

ARGUMENT_PREVIEW_CHARS = 120


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))  # ASCII: nothing that does not print


@dataclass(frozen=True)
class ApprovalRequest:
    """One nested call waiting for a decision."""

    tool: str
    function: str
    """The Python name the snippet called."""
    arguments: Mapping[str, Any]

    def call_text(self, limit: int = ARGUMENT_PREVIEW_CHARS) -> str:
        """``delete_object(workspace='root:app', name='web')``: values longer than ``limit`` cut,
        saying how much is hidden; characters that do not print (bidi overrides, control
        characters) escaped, so what a person approves is what runs."""
        parts = []
        for name, value in self.arguments.items():
            text = repr(value) if isinstance(value, str | int | float | bool) else _compact(value)
            if len(text) > limit:
                text = f"{text[:limit]}... ({len(text) - limit} more chars)"
            parts.append(f"{name}={text}")
        return f"{self.function}({', '.join(parts)})"


@dataclass(frozen=True)
class Approval:
    allowed: bool
    reason: str = ""
    """Why a call was refused, for the snippet's ``PermissionError``."""
    rest_of_snippet: bool = False
    """Also allow every later mutating call of the same snippet without asking."""


class Approver(Protocol):
    """Asks a person whether one call may run."""

    async def approve(self, request: ApprovalRequest) -> Approval: ...


DENIED = Approval(False, "mutating calls are denied here (--mutations deny)")
NOBODY_TO_ASK = Approval(
    False,
    "mutating calls need approval (--mutations ask) and there is no one to ask here (no terminal); "
    "run with --mutations allow to let them run",
)


@dataclass
class MutationGate:
    """One snippet's gate: asks the approver about each mutating call, until it allows the rest."""

    policy: MutationPolicy = "allow"
    approver: Approver | None = None
    rest_allowed: bool = False
    _asking: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Gathered calls are asked about one at a time; an answer can settle the ones still waiting."""

    @property
    def open(self) -> bool:
        """Whether every call runs without a decision."""
        return self.policy == "allow" or self.rest_allowed

    async def decide(self, request: ApprovalRequest) -> Approval:
        if self.open:
            return Approval(True)
        if self.policy == "deny":
            return DENIED
        if self.approver is None:
            return NOBODY_TO_ASK
        async with self._asking:
            if self.rest_allowed:
                return Approval(True)
            approval = await self.approver.approve(request)
            self.rest_allowed = approval.allowed and approval.rest_of_snippet
        return approval


class WallClock:
    """``asyncio.timeout`` for one snippet, with pauses that do not count (waiting for a person)."""

    def __init__(self, seconds: float) -> None:
        self._timeout = asyncio.timeout(seconds)
        self._pauses = 0
        self._remaining: float | None = None

    async def __aenter__(self) -> WallClock:
        self._loop = asyncio.get_running_loop()
        await self._timeout.__aenter__()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._timeout.__aexit__(kind, exc, tb)

    def expire_within(self, seconds: float) -> None:
        """End the snippet at the latest ``seconds`` from now. Safe from any thread: pydantic-monty
        calls the ``os=`` handler from its own thread."""
        self._loop.call_soon_threadsafe(self._expire_within, seconds)

    def _expire_within(self, seconds: float) -> None:
        when = self._timeout.when()
        deadline = self._loop.time() + seconds
        if self._pauses == 0 and (when is None or deadline < when):
            self._timeout.reschedule(deadline)

    @contextlib.asynccontextmanager
    async def paused(self) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        self._pauses += 1
        if self._pauses == 1:
            when = self._timeout.when()
            self._remaining = None if when is None else max(when - loop.time(), 0.0)
            self._timeout.reschedule(None)
        try:
            yield
        finally:
            self._pauses -= 1
            if self._pauses == 0 and self._remaining is not None:
                self._timeout.reschedule(loop.time() + self._remaining)
