"""An in-memory ``ToolSource`` for tests: records calls, returns canned outputs, offers scopes.

    executor = FakeToolSource(outputs=[ToolCallOutput("42", audit={"nested_calls": [...]})])
    executor = FakeToolSource(handler=lambda scope, name, args: ToolCallOutput(...))
    runtime = Runtime(backend, FakeScopes(executor))  # one child source per thread

Every scope shares the root's :class:`CallLog`, so ``executor.log.calls`` sees all calls with the
scope that ran them, and ``executor.log.max_active`` reports how many calls overlapped. Set
``concurrency_gate=n`` to make each call wait until ``n`` calls are in flight at once: that proves
concurrency with events, and a sequential caller gets an error output after ``gate_timeout``
instead of hanging.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from asyncai.state.stores import StateLoad
from asyncai.tools.types import ToolCallOutput, ToolDefinition, ToolSource

RUN_CODE = ToolDefinition(
    name="run_code",
    description="Run Python in the sandbox; the last expression is the result.",
    input_schema={
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "Python to run"},
            "restart": {"type": "boolean", "description": "reset REPL state first"},
        },
        "required": ["code"],
    },
)

ECHO = ToolDefinition(
    name="echo",
    description="Echo the text back.",
    input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    read_only=True,
)

Handler = Callable[["FakeToolSource", str, dict[str, Any]], Awaitable[ToolCallOutput] | ToolCallOutput]


def nested_audit(*sizes: int, tool: str = "list_objects") -> dict[str, Any]:
    """A code-mode style audit with one nested call per size."""
    return {
        "nested_calls": [
            {"tool": tool, "arguments": {}, "is_error": False, "bytes": size, "mutating": False}
            for size in sizes
        ]
    }


@dataclass
class RecordedCall:
    scope: str
    name: str
    arguments: dict[str, Any]


@dataclass
class CallLog:
    calls: list[RecordedCall] = field(default_factory=list)
    active: int = 0
    max_active: int = 0
    gate: int | None = None
    gate_timeout: float = 5.0
    _gate_open: asyncio.Event | None = None

    async def enter(self) -> bool:
        """Count a call in; with a gate, wait until enough calls overlap. False on gate timeout."""
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        if self.gate is None:
            return True
        if self._gate_open is None:
            self._gate_open = asyncio.Event()
        if self.active >= self.gate:
            self._gate_open.set()
        try:
            await asyncio.wait_for(self._gate_open.wait(), self.gate_timeout)
        except TimeoutError:
            return False
        return True

    def leave(self) -> None:
        self.active -= 1


class FakeToolSource(ToolSource):
    def __init__(
        self,
        tools: list[ToolDefinition] | None = None,
        handler: Handler | None = None,
        *,
        outputs: list[ToolCallOutput] | None = None,
        note: str | None = None,
        concurrency_gate: int | None = None,
        name: str = "root",
        log: CallLog | None = None,
        parent: FakeToolSource | None = None,
    ) -> None:
        self._tools = list(tools) if tools is not None else [RUN_CODE]
        self.handler = handler
        self.outputs = list(outputs or [])
        self.note = note
        self.name = name
        self.log = log or CallLog(gate=concurrency_gate)
        self.parent = parent
        self.state: dict[str, Any] = {}
        self.closed = False
        self.scopes: dict[str, FakeToolSource] = {}
        self.run_scopes_made: list[FakeToolSource] = []

    def tools(self) -> list[ToolDefinition]:
        return list(self._tools)

    def child(self, name: str) -> FakeToolSource:
        child = FakeToolSource(
            self._tools, self.handler, note=self.note, name=name, log=self.log, parent=self
        )
        child.outputs = self.outputs  # canned outputs are shared by every scope
        return child

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolCallOutput:
        self.log.calls.append(RecordedCall(self.name, name, dict(arguments)))
        overlapped = await self.log.enter()
        try:
            if not overlapped:
                return ToolCallOutput.error(f"fake executor: {name} was not called concurrently")
            if self.handler is not None:
                result = self.handler(self, name, arguments)
                if inspect.isawaitable(result):
                    result = await result
                assert isinstance(result, ToolCallOutput)
                return result
            if self.outputs:
                return self.outputs.pop(0)
            return ToolCallOutput(content=f"ok {name}")
        finally:
            self.log.leave()

    async def aclose(self) -> None:
        self.closed = True


@dataclass(frozen=True)
class FakeUse:
    scope: FakeToolSource
    state: StateLoad = "none"
    note: str | None = None


class FakeScopes:
    """The runtime's ``ScopeProvider`` over a ``FakeToolSource``: one child source per thread
    (kept in ``root.scopes``), or with ``per_run`` a fresh child per run (``root.run_scopes_made``),
    closed after it. Each use carries the root's ``note``."""

    def __init__(self, root: FakeToolSource, *, per_run: bool = False) -> None:
        self.root = root
        self.per_run = per_run

    @contextlib.asynccontextmanager
    async def use(self, key: str | None, *, saved_as: str | None = None) -> AsyncIterator[FakeUse]:
        root = self.root
        if self.per_run or key is None:
            scope = root.child(f"run:{len(root.run_scopes_made) + 1}")
            root.run_scopes_made.append(scope)
            try:
                yield FakeUse(scope, note=root.note)
            finally:
                await scope.aclose()
            return
        if key not in root.scopes:
            root.scopes[key] = root.child(f"thread:{key}")
        yield FakeUse(root.scopes[key], note=root.note)
