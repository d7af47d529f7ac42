"""A cancelled tool call stops at the server too, whenever the cancel comes (before the request is
written, while it is written, after the server started it) and however often the caller is
cancelled (the engine cancels its calls at the wall clock, then again when it settles the snippet).

Against a real subprocess server (``tests/fakes/hanging_server.py``) whose ``hang`` calls wait
until cancelled and whose ``in_flight`` says how many still run."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from asyncai.code_mode import CodeMode, CodeModeLimits
from asyncai.tools import McpServers
from asyncai.tools.mcp.client import McpConnection
from asyncai.tools.mcp.specs import StdioServerSpec

pytestmark = pytest.mark.anyio

HANGING_SERVER = Path(__file__).parents[2] / "fakes" / "hanging_server.py"
SPEC = StdioServerSpec(name="hanging", command=sys.executable, args=(str(HANGING_SERVER),))
CALLS = 5
STOP_DEADLINE = 5.0
"""How long the server may take to stop cancelled calls (it takes milliseconds)."""
STARTED = -1
"""The stage at which every call is running at the server (the others count loop iterations)."""
STAGES = [*range(0, 25), STARTED]
AGAIN_AFTER = [None, 0, 1, 2, 3, 5, 8]
"""Cancelled once, or a second time so many loop iterations after the first (while the cancel
notice waits its turn on the transport)."""


@pytest.fixture
async def connection() -> AsyncIterator[McpConnection]:
    connection = McpConnection(SPEC, tool_timeout=60.0)
    await connection.start()
    try:
        yield connection
    finally:
        await connection.close()


async def in_flight(connection: McpConnection) -> dict[str, int]:
    output = await connection.call_tool("in_flight", {})
    assert not output.is_error, output.content
    counts: dict[str, int] = json.loads(output.content)
    return counts


async def wait_until_none_run(connection: McpConnection, what: str) -> dict[str, int]:
    """Ask the server until no ``hang`` call runs; fails at the deadline naming ``what`` leaked."""
    deadline = time.monotonic() + STOP_DEADLINE
    counts = await in_flight(connection)
    while counts["running"] and time.monotonic() < deadline:
        counts = await in_flight(connection)
    assert counts["running"] == 0, f"{counts['running']} cancelled call(s) still run at the server: {what}"
    return counts


async def yield_loop(times: int) -> None:
    for _ in range(times):
        await asyncio.sleep(0)  # one event-loop iteration: moves the calls one step, no waiting


async def test_a_cancel_at_any_moment_stops_the_call_at_the_server(connection: McpConnection) -> None:
    """From before the request is written to after the server started it, cancelled once or twice."""
    for again_after in AGAIN_AFTER:
        for stage in STAGES:
            moment = "once they ran at the server" if stage == STARTED else f"after {stage} loop iterations"
            again = "" if again_after is None else f", and again {again_after} iterations later"
            await cancel_five(connection, stage, again_after, f"cancelled {moment}{again}")
    assert connection.dead_reason is None


async def cancel_five(connection: McpConnection, stage: int, again_after: int | None, what: str) -> None:
    before = await in_flight(connection)
    calls = [asyncio.create_task(connection.call_tool("hang", {"tag": f"{i}"})) for i in range(CALLS)]
    if stage == STARTED:  # ask the server until it says every call runs
        deadline = time.monotonic() + STOP_DEADLINE
        while (await in_flight(connection))["started"] < before["started"] + CALLS:
            assert time.monotonic() < deadline, "the calls never started at the server"
    else:
        await yield_loop(stage)
    for task in calls:
        task.cancel()
    if again_after is not None:
        await yield_loop(again_after)
        for task in calls:
            task.cancel()  # as the engine's settle does after its wall clock: the calls are still ending
    await asyncio.wait(calls)
    assert all(task.cancelled() for task in calls), what
    await wait_until_none_run(connection, what)


async def test_a_snippet_cut_off_by_the_wall_clock_leaves_nothing_running_at_the_server() -> None:
    limits = CodeModeLimits(wall_timeout=0.5, tool_timeout=60.0, max_memory=256 * 1024 * 1024)
    gather = f"import asyncio\nawait asyncio.gather(*(hang(tag=str(i)) for i in range({CALLS})))"
    async with McpServers([SPEC]) as mcp, CodeMode(mcp, limits) as code_mode:
        started = 0
        for attempt in range(3):
            cut_off = await code_mode.call_tool("run_code", {"code": gather})
            assert cut_off.is_error and "wall-clock limit" in cut_off.content, cut_off.content
            deadline = time.monotonic() + STOP_DEADLINE
            while True:
                answer = await code_mode.call_tool("run_code", {"code": "await in_flight()"})
                counts = json.loads(answer.content)
                if counts["running"] == 0 or time.monotonic() > deadline:
                    break
            assert counts["running"] == 0, f"attempt {attempt}: {counts['running']} calls still run: {counts}"
            assert counts["started"] > started, counts  # the snippet's calls reached the server
            started = counts["started"]
