from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pydantic_monty as pm
import pytest
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import TextContent

from asyncai.code_mode import CodeMode, CodeModeLimits
from asyncai.code_mode.engine.scope import ReplScope
from asyncai.tools.functions import FunctionTools, tool
from asyncai.tools.types import ToolCallOutput, ToolSource


@dataclass
class CallSpan:
    tool: str
    arguments: dict[str, Any]
    started: float
    ended: float = 0.0


@tool(read_only=True)
async def wait(seconds: float, tag: str = "") -> dict[str, Any]:
    """Sleep ``seconds``."""
    await asyncio.sleep(seconds)
    return {"waited": seconds, "tag": tag or None}


@tool(read_only=True)
def blob(size: int) -> TextContent:
    """About ``size`` bytes of JSON text in a text block, as an MCP server answers."""
    count = max(1, size // 100)
    items = [{"metadata": {"name": f"cm-{i}"}, "n": i, "pad": "x" * 58} for i in range(count)]
    return TextContent(type="text", text=json.dumps({"items": items}))


@tool(read_only=True)
def fail(message: str = "it failed") -> Any:
    """Fail with ``message``."""
    raise ToolError(message)


@tool(read_only=True)
async def hang() -> Any:
    """Never return."""
    await asyncio.Event().wait()


@tool(read_only=True)
def pods(namespace: str = "") -> dict[str, Any]:
    """Ten pods, three not running."""
    phases = ["Running"] * 7 + ["Pending", "Failed", "Running"]
    return {
        "items": [{"metadata": {"name": f"pod-{i}"}, "status": {"phase": p}} for i, p in enumerate(phases)]
    }


@tool(name="delete-item", destructive=True)
def delete_item(name: str) -> Any:
    """Delete one item."""
    return f"deleted {name}"


class FakeExecutor(FunctionTools):
    """In-memory tools (``wait``, ``blob``, ``fail``, ``hang``, ``pods``, the destructive
    ``delete-item``) whose calls are recorded as spans; ``on_call`` runs as each call starts."""

    def __init__(self) -> None:
        super().__init__([wait, blob, fail, hang, pods, delete_item])
        self.spans: list[CallSpan] = []
        self.on_call: Callable[[], None] | None = None

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolCallOutput:
        span = CallSpan(name, arguments, time.perf_counter())
        self.spans.append(span)
        if self.on_call is not None:
            self.on_call()
        try:
            return await super().call_tool(name, arguments)
        finally:
            span.ended = time.perf_counter()


@pytest.fixture
def fake() -> FakeExecutor:
    return FakeExecutor()


TEST_LIMITS = CodeModeLimits(code_timeout=2.0, tool_timeout=1.0, max_memory=256 * 1024 * 1024, max_calls=5)


@pytest.fixture
async def code_mode(fake: FakeExecutor) -> AsyncIterator[CodeMode]:
    async with CodeMode(fake, TEST_LIMITS) as executor:
        yield executor


async def run(executor: ToolSource, code: str, **extra: Any) -> ToolCallOutput:
    return await executor.call_tool("run_code", {"code": code, **extra})


async def worker_pid(scope: ReplScope) -> int:
    """The pid of the worker behind ``scope`` (started by a first snippet if need be)."""
    if scope.worker is None:
        await run(scope, "None")
    assert isinstance(scope.worker, pm.AsyncMontySession)
    pid = scope.worker.worker_pid
    assert pid is not None
    return pid
