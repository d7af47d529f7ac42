from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from asyncai.code_mode import CodeMode, CodeModeLimits
from asyncai.code_mode.engine.repl import ReplScope
from asyncai.tools.types import ToolCallOutput, ToolDefinition, ToolSource

OBJECT: dict[str, Any] = {"type": "object"}


def _tool(name: str, properties: dict[str, Any], required: list[str], **flags: bool) -> ToolDefinition:
    return ToolDefinition(
        name=name,
        description=f"test tool {name}",
        input_schema={"type": "object", "properties": properties, "required": required},
        output_schema=OBJECT if flags.get("schema") else None,
        read_only=flags.get("read_only", True),
        destructive=flags.get("destructive", False),
    )


@dataclass
class CallSpan:
    tool: str
    arguments: dict[str, Any]
    started: float
    ended: float = 0.0


@dataclass
class FakeExecutor(ToolSource):
    """In-memory tools: ``wait`` sleeps, ``blob`` returns N bytes of JSON, ``fail`` errors,
    ``hang`` never returns, ``delete-item`` is destructive, ``pods`` returns a pod list."""

    spans: list[CallSpan] = field(default_factory=list)
    on_call: Callable[[], None] | None = None

    def tools(self) -> list[ToolDefinition]:
        return [
            _tool("wait", {"seconds": {"type": "number"}, "tag": {"type": "string"}}, ["seconds"]),
            _tool("blob", {"size": {"type": "integer"}}, ["size"]),
            _tool("fail", {"message": {"type": "string"}}, []),
            _tool("hang", {}, []),
            _tool("pods", {"namespace": {"type": "string"}}, [], schema=True),
            _tool("delete-item", {"name": {"type": "string"}}, ["name"], read_only=False, destructive=True),
        ]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolCallOutput:
        span = CallSpan(name, arguments, time.perf_counter())
        self.spans.append(span)
        if self.on_call is not None:
            self.on_call()
        try:
            return await self._answer(name, arguments)
        finally:
            span.ended = time.perf_counter()

    async def _answer(self, name: str, arguments: dict[str, Any]) -> ToolCallOutput:
        if name == "wait":
            await asyncio.sleep(arguments["seconds"])
            return ToolCallOutput(json.dumps({"waited": arguments["seconds"], "tag": arguments.get("tag")}))
        if name == "blob":
            count = max(1, arguments["size"] // 100)
            items = [{"metadata": {"name": f"cm-{i}"}, "n": i, "pad": "x" * 58} for i in range(count)]
            return ToolCallOutput(json.dumps({"items": items}))
        if name == "fail":
            return ToolCallOutput.error(arguments.get("message", "it failed"))
        if name == "hang":
            await asyncio.Event().wait()
        if name == "pods":
            phases = ["Running"] * 7 + ["Pending", "Failed", "Running"]
            items = [{"metadata": {"name": f"pod-{i}"}, "status": {"phase": p}} for i, p in enumerate(phases)]
            return ToolCallOutput(json.dumps({"items": items}))
        if name == "delete-item":
            return ToolCallOutput(f"deleted {arguments['name']}")
        return ToolCallOutput.error(f"unknown tool {name}")


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
    if scope._worker is None:
        await run(scope, "None")
    assert scope._worker is not None
    pid = scope._worker.worker_pid
    assert pid is not None
    return pid
