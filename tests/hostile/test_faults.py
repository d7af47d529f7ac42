"""Faults around the sandbox: MCP servers that crash, hang or send garbage, a sandbox worker killed
mid-snippet, and a model server that answers garbage, fails or drops the connection.

For each: the executor (or the agent process) stays alive, the turn ends with an error result
within its deadline, and the next snippet works.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import shlex
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from asyncai.code_mode import CodeMode, CodeModeLimits
from asyncai.tools import McpServers, ToolCallOutput, stdio_spec
from tests.cli.conftest import BIN, asyncai
from tests.code_mode.conftest import worker_pid
from tests.fakes.openai_server import ScriptedOpenAI
from tests.fakes.servers import server_command
from tests.hostile.model_faults import CUT, CuttingOpenAI, two_prompt_responder
from tests.hostile.watch import monty_workers

pytestmark = pytest.mark.anyio

ROGUE = shlex.join([sys.executable, str(Path(__file__).with_name("rogue_mcp_server.py"))])
TOOL_TIMEOUT = 1.5
LIMITS = CodeModeLimits(
    code_timeout=1.0, wall_timeout=5.0, tool_timeout=TOOL_TIMEOUT, max_memory=256 * 1024 * 1024
)
TIMED_OUT = rf"RuntimeError: tool \w+ timed out after {TOOL_TIMEOUT} s"
FAST = 2.5
AFTER_TIMEOUT = TOOL_TIMEOUT + 2.5
HEAVY = 8.0
PROBE_DEADLINE = 1.0
"""A call to the same server after the fault answers (or fails) at once, never by timing out."""
RESULT_SLACK = 1_000


async def run(executor: CodeMode, code: str) -> tuple[ToolCallOutput, float]:
    started = time.perf_counter()
    output = await executor.call_tool("run_code", {"code": code})
    return output, time.perf_counter() - started


# -- MCP servers that misbehave -------------------------------------------------------------------


@dataclass(frozen=True)
class McpFault:
    id: str
    code: str
    outcome: str
    """Regex the faulty call's result must match."""
    is_error: bool | None = True
    deadline: float = FAST
    server_after: str = r"^fine$"
    """What a well-formed call to the same server gives afterwards: ``fine``, or a fast refusal."""
    server: str = "rogue"
    bug: str | None = None

    @property
    def limits(self) -> CodeModeLimits:
        """``LIMITS``; a 50 MB answer gets time to cross (on a loaded machine it took over 1.5 s)."""
        if self.deadline < HEAVY:
            return LIMITS
        return dataclasses.replace(LIMITS, tool_timeout=HEAVY - 2.0, wall_timeout=HEAVY - 1.0)


def _probe(fault: McpFault) -> str:
    return "await ok()" if fault.server == "rogue" else "await echo(text='fine')"


NOT_RUNNING = r"MCP server '(rogue|victim)' is not running"

MCP_FAULTS = [
    McpFault(
        "test-server-dies-mid-call",
        "await die()",
        r"RuntimeError: tool error: die on server 'victim': Connection closed",
        server="victim",
        server_after=NOT_RUNNING,
    ),
    McpFault(
        "exits-mid-call",
        "await crash()",
        r"RuntimeError: tool error: crash on server 'rogue'",
        server_after=NOT_RUNNING,
    ),
    McpFault("never-answers", "await hang()", TIMED_OUT, deadline=AFTER_TIMEOUT),
    McpFault("lines-that-are-not-json-rpc", "await not_jsonrpc()", r"^fine$", is_error=False),
    McpFault("json-cut-off-mid-object", "await truncated()", TIMED_OUT, deadline=AFTER_TIMEOUT),
    McpFault("python-repr-instead-of-json", "await single_quoted()", TIMED_OUT, deadline=AFTER_TIMEOUT),
    McpFault("nan-in-structured-content", "await nan()", r'^\{"x":"NaN"\}$', is_error=False),
    McpFault("answer-with-an-unknown-id", "await wrong_id()", TIMED_OUT, deadline=AFTER_TIMEOUT),
    McpFault("result-is-not-an-object", "await result_not_object()", TIMED_OUT, deadline=AFTER_TIMEOUT),
    McpFault("lone-surrogate-escapes", "await surrogate()", TIMED_OUT, deadline=AFTER_TIMEOUT),
    McpFault(
        "structured-content-contradicts-the-schema",
        "await bad_schema()",
        r"Invalid structured content returned by tool bad_schema: 'many' is not of type 'integer'",
    ),
    McpFault(
        "schema-declared-but-no-structured-content",
        "await no_structured()",
        r"Tool no_structured has an output schema but did not return structured content",
    ),
    McpFault(
        "50mb-text-filtered-in-the-sandbox",
        "len(await huge())",
        r"^50000000$",
        is_error=False,
        deadline=HEAVY,
    ),
    McpFault(
        "50mb-text-as-the-result",
        "await huge()",
        r"^error: result is 50,000,000 chars, over the 20,000-char limit",
        deadline=HEAVY,
    ),
    McpFault(
        # The SDK validates the 50 MB JSON-RPC line on the event loop (~2-4 s here), so the tool
        # timeout fires late; the wall clock still ends the turn.
        "50mb-structured-content",
        "len((await huge_structured())['items'])",
        # Converting 50 MB inside the sandbox may exceed its own 1 s time limit on a loaded machine.
        rf"{TIMED_OUT}|^500000$|MemoryError|wall-clock limit|feed time limit exceeded",
        is_error=None,
        deadline=LIMITS.wall_timeout + 3.0,
    ),
    McpFault(
        "5mb-json-rpc-error",
        "await huge_error()",
        r"RuntimeError: tool error: huge_error on server 'rogue': E+",
    ),
    McpFault(
        "bytes-that-are-not-utf8",
        "await bad_utf8()",
        r"^fine$",  # the stray bytes are dropped with their line; the real answer still arrives
        is_error=False,
        deadline=FAST,
    ),
    McpFault(
        "json-rpc-error-code-32000",
        "await server_error()",
        r"RuntimeError: tool error: server_error on server 'rogue': database busy",
    ),
    McpFault(
        "5mb-stderr-before-answering",
        "await stderr_flood()",
        r"^fine$",
        is_error=False,
        deadline=FAST,
    ),
]


def _fault_param(fault: McpFault) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=f"bug: {fault.bug}")] if fault.bug else []
    return pytest.param(fault, id=fault.id, marks=marks)


@pytest.mark.parametrize("fault", [_fault_param(fault) for fault in MCP_FAULTS])
async def test_a_misbehaving_mcp_server_costs_one_error_result(fault: McpFault) -> None:
    command = ROGUE if fault.server == "rogue" else server_command("victim")
    async with (
        McpServers([stdio_spec(f"{fault.server}={command}")], tool_timeout=fault.limits.tool_timeout) as mcp,
        CodeMode(mcp, fault.limits) as executor,
    ):
        output, elapsed = await run(executor, fault.code)
        assert re.search(fault.outcome, output.content), output.content[:2000]
        if fault.is_error is not None:
            assert output.is_error is fault.is_error, output.content[:2000]
        assert elapsed <= fault.deadline, f"took {elapsed:.2f}s"
        assert len(output.content) <= LIMITS.max_result_chars + RESULT_SLACK

        after, _ = await run(executor, "1 + 1")
        assert (after.content, after.is_error) == ("2", False)

        probe, probe_elapsed = await run(executor, _probe(fault))
        assert re.search(fault.server_after, probe.content), probe.content[:2000]
        assert probe_elapsed <= PROBE_DEADLINE, f"the server took {probe_elapsed:.2f}s to answer again"


# -- a sandbox worker killed mid-snippet ----------------------------------------------------------


class HookedMcp(McpServers):
    """Calls ``on_call`` as each nested tool call reaches the MCP layer."""

    on_call: Callable[[str], None] | None = None

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolCallOutput:
        if self.on_call is not None:
            self.on_call(name)
        return await super().call_tool(name, arguments)


@pytest.fixture
async def victim() -> AsyncIterator[tuple[HookedMcp, CodeMode]]:
    limits = CodeModeLimits(
        code_timeout=5.0, wall_timeout=8.0, tool_timeout=5.0, max_memory=LIMITS.max_memory
    )
    mcp = HookedMcp([stdio_spec(f"victim={server_command('victim')}")], tool_timeout=5.0)
    async with mcp, CodeMode(mcp, limits) as executor:
        yield mcp, executor


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _wait_until_busy(pid: int, ticks: int = 10, timeout: float = 4.0) -> None:
    """Until the worker has burnt ``ticks`` more clock ticks of CPU (0.1 s): it runs the snippet."""
    start = _cpu_ticks(pid)
    deadline = time.monotonic() + timeout
    while _cpu_ticks(pid) < start + ticks and time.monotonic() < deadline:
        time.sleep(0.01)


async def test_worker_killed_while_the_snippet_awaits_a_tool(
    victim: tuple[HookedMcp, CodeMode],
) -> None:
    mcp, executor = victim
    await run(executor, "kept = 1")
    pid = await worker_pid(executor._default)
    mcp.on_call = lambda name: os.kill(pid, signal.SIGKILL)
    output, elapsed = await run(executor, "await sleep(seconds=4)\n'unreachable'")
    mcp.on_call = None
    assert output.is_error and "REPL state was reset" in output.content, output.content
    assert "NameError" in (await run(executor, "kept"))[0].content
    assert (await run(executor, "1 + 1"))[0].content == "2"
    assert pid not in {proc.pid for proc in monty_workers()}
    assert elapsed <= FAST, f"took {elapsed:.2f}s: the dead worker's snippet waited for its tool call"


async def test_worker_killed_while_the_snippet_computes(
    victim: tuple[HookedMcp, CodeMode],
) -> None:
    _, executor = victim
    await run(executor, "kept = 1")
    pid = await worker_pid(executor._default)
    busy = asyncio.ensure_future(run(executor, "while True:\n    pass"))
    await asyncio.to_thread(_wait_until_busy, pid)
    os.kill(pid, signal.SIGKILL)
    killed_at = time.perf_counter()
    output, _ = await asyncio.wait_for(busy, 10.0)
    assert time.perf_counter() - killed_at <= FAST
    assert output.is_error and "crashed" in output.content and "REPL state was reset" in output.content
    assert (await run(executor, "1 + 1"))[0].content == "2"
    assert pid not in {proc.pid for proc in monty_workers()}


# -- a model server that misbehaves (through the agent CLI) ---------------------------------------

MODEL_FAULTS: dict[str, tuple[dict[str, Any], str]] = {
    "garbage-body": (
        {"raw": b"\x00\xffnot json <html>", "stream": False},
        r"did not send a chat completion \(not JSON\)",
    ),
    "garbage-in-the-stream": (
        {"raw": "data: {this is not json\n\n", "media_type": "text/event-stream"},
        r"sent a bad stream: a stream chunk is not JSON",
    ),
    # Retry-After: 0 keeps the backend's retries (429 and 5xx are retried) from sleeping.
    "http-500": (
        {"status": 500, "error": "upstream exploded", "headers": {"Retry-After": "0"}},
        r"answered HTTP 500: upstream exploded after \d+ attempts",
    ),
    "connection-closed-mid-stream": (CUT, r"peer closed connection without sending complete message body"),
}
AGENT_DEADLINE = 45.0
"""Start-up, the MCP server, and the backend's retries with backoff (0.5 + 1 + 2 s)."""


def _two_runs(model: ScriptedOpenAI, *extra: str) -> tuple[list[dict[str, Any]], float]:
    stdin = "".join(json.dumps({"thread": "t", "text": text}) + "\n" for text in ("first", "second"))
    started = time.perf_counter()
    result = asyncai(
        "--base-url", model.base_url, "--model", "m", "--stream", "--jsonl",
        "--mcp-stdio", f"victim={server_command('victim')}", *extra,
        stdin=stdin, timeout=AGENT_DEADLINE + 15,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    assert result.status == 0, result.stderr[-2000:]
    return [json.loads(line) for line in result.stdout.splitlines()], elapsed


@pytest.mark.parametrize("fault", list(MODEL_FAULTS))
def test_a_failing_model_server_ends_the_run_and_the_agent_goes_on(fault: str) -> None:
    answer, message = MODEL_FAULTS[fault]
    with CuttingOpenAI([two_prompt_responder(answer)] * 40) as model:
        replies, elapsed = _two_runs(model, "--no-session")
        requests = model.requests
    failed, next_run = replies
    assert failed["run"] == 1 and failed["reply"] == "" and re.search(message, failed["error"]), failed
    assert "\n" not in failed["error"]
    assert next_run == {"thread": "t", "reply": "result: 2", "run": 2}
    assert requests[-1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": requests[-1]["messages"][-2]["tool_calls"][0]["id"],
        "content": "2",
    }
    assert elapsed <= AGENT_DEADLINE


def test_a_snippet_passing_a_function_to_a_tool_does_not_fail_the_recorded_run() -> None:
    with CuttingOpenAI(
        [two_prompt_responder({"content": "checked"}, first_code="await echo(text=open)")] * 10
    ) as model:
        replies, _ = _two_runs(model)  # sessions are recorded (under the tests' CLAUDE_CONFIG_DIR)
    assert "error" not in replies[0], replies[0]
    assert replies[0]["reply"] == "checked"


async def test_serve_mcp_returns_the_snippet_error_for_a_function_passed_to_a_tool() -> None:
    serve = shlex.join(
        [str(BIN / "asyncai"), "serve-mcp", "--mcp-stdio", f"victim={server_command('victim')}"]
    )
    async with McpServers([stdio_spec(f"serve={serve}")], tool_timeout=10.0) as mcp:
        output = await mcp.call_tool("run_code", {"code": "await echo(text=open)"})
        after = await mcp.call_tool("run_code", {"code": "1 + 1"})
    assert after.content == "2"
    assert output.is_error and "await echo(text=open)" in output.content, output.content
