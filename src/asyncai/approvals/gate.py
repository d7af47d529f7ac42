"""The mutation gate: what a nested call to a tool that may change the world needs before it runs.

``--mutations allow`` (the default) runs it; ``deny`` refuses it; ``ask`` asks a person through an
``Approver`` (serve-mcp asks the MCP client's user by elicitation) and refuses when nobody can be
asked. A refusal becomes a catchable ``PermissionError`` in the snippet and ``"refused": true`` in
the audit. Time spent waiting for the person is not counted against the snippet's wall clock.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from asyncai.approvals import MUTATION_POLICIES, MutationPolicy
from asyncai.arguments import check_choice, check_flag, check_instance, check_method
from asyncai.log import json_safe
from asyncai.wording import setting

ARGUMENT_PREVIEW_CHARS = 120


def check_policy(mutations: object, approver: object, owner: str) -> None:
    """``mutations`` is one of ``MUTATION_POLICIES``; ``approver``, if any, has ``async approve``."""
    check_choice(mutations, MUTATION_POLICIES, owner, "mutations")
    if approver is not None:
        check_method(
            approver,
            "approve",
            owner,
            "approver",
            "None or an object with async def approve(self, request) -> asyncai.Approval",
        )


def _compact(value: Any) -> str:
    # json_safe: a snippet can pass anything (bytes, sets, huge ints); ASCII: nothing that does not print.
    return json.dumps(json_safe(value), separators=(",", ":"))


def _plain(value: Any) -> bool:
    """Shown as Python shows it (an int past 4,300 digits has no ``repr``)."""
    return isinstance(value, str | float | bool) or (isinstance(value, int) and value.bit_length() < 4000)


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
            plain = isinstance(value, str | float | bool) or (
                isinstance(value, int) and value.bit_length() < 4000
            )
            text = repr(value) if plain else _compact(value)
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

    def __post_init__(self) -> None:
        check_flag(self.allowed, "Approval", "allowed")  # Approval("no") must not allow the call
        check_instance(self.reason, str, "Approval", "reason", "a string")
        check_flag(self.rest_of_snippet, "Approval", "rest_of_snippet")


class Approver(Protocol):
    """Asks a person whether one call may run."""

    async def approve(self, request: ApprovalRequest) -> Approval: ...


def denied() -> Approval:
    return Approval(False, f"mutating calls are denied here ({setting('mutations', 'deny')})")


def nobody_to_ask() -> Approval:
    return Approval(
        False,
        f"mutating calls need approval ({setting('mutations', 'ask')}) and there is no one to ask here "
        f"(no terminal); run with {setting('mutations', 'allow')} to let them run",
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
            return denied()
        if self.approver is None:
            return nobody_to_ask()
        async with self._asking:
            if self.rest_allowed:
                return Approval(True)
            approval = await self.approver.approve(request)
            check_instance(approval, Approval, "approver.approve()", "what it returns", "an asyncai.Approval")
            self.rest_allowed = approval.allowed and approval.rest_of_snippet
        return approval
