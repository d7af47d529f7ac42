"""Code mode over real MCP servers on stdio and over remote monty workers behind a WebSocket relay."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator

import pytest

from asyncai.code_mode import CodeMode, CodeModeLimits, SandboxConfig
from asyncai.tools import McpServers, stdio_spec
from tests.fakes.logs import captured_log
from tests.fakes.monty_relay import running_relay
from tests.fakes.servers import server_command

pytestmark = pytest.mark.anyio

LIMITS = CodeModeLimits(tool_timeout=1.0, max_memory=256 * 1024 * 1024)


@pytest.fixture
async def mcp() -> AsyncIterator[McpServers]:
    async with McpServers([stdio_spec(server_command("real"))]) as executor:
        yield executor


async def test_gathered_mcp_calls_overlap_and_return_one_small_value(mcp: McpServers) -> None:
    async with CodeMode(mcp, LIMITS) as code_mode:
        started = time.perf_counter()
        code = "a, b = await asyncio.gather(sleep(seconds=0.8), sleep(seconds=0.8))\na['slept'] + b['slept']"
        output = await code_mode.call_tool("run_code", {"code": code})
        elapsed = time.perf_counter() - started
    assert (output.content, output.is_error) == ("1.6", False)
    assert elapsed < 1.5, f"two gathered 0.8 s calls took {elapsed:.2f}s"
    assert [call["tool"] for call in (output.audit or {})["nested_calls"]] == ["sleep", "sleep"]


@pytest.mark.parametrize("size", [1_000_000, 10_000_000])
async def test_large_mcp_results_are_filtered_in_the_sandbox(mcp: McpServers, size: int) -> None:
    async with CodeMode(mcp, CodeModeLimits(max_memory=LIMITS.max_memory)) as code_mode:
        output = await code_mode.call_tool(
            "run_code",
            {"code": f"data = await blob(size={size})\nsum(1 for i in data['items'] if i['n'] % 1000 == 0)"},
        )
    assert not output.is_error, output.content
    assert int(output.content) == len(range(0, size // 100, 1000))
    nested = (output.audit or {})["nested_calls"][0]
    assert nested["bytes"] > 0.95 * size


async def test_mcp_errors_timeouts_and_unknown_names(mcp: McpServers) -> None:
    async with CodeMode(mcp, LIMITS) as code_mode:
        caught = await code_mode.call_tool(
            "run_code",
            {"code": "try:\n    await fail(message='nope')\nexcept RuntimeError as e:\n    m = str(e)\nm"},
        )
        timed_out = await code_mode.call_tool("run_code", {"code": "await sleep(seconds=5)"})
        after = await code_mode.call_tool("run_code", {"code": "(await echo(text='ok'))"})
        unknown = await code_mode.call_tool("run_code", {"code": "await list_everything()"})
    assert "nope" in caught.content and not caught.is_error
    assert timed_out.is_error and "RuntimeError: tool sleep timed out after 1.0 s" in timed_out.content
    assert (after.content, after.is_error) == ("ok", False)
    assert unknown.is_error and "NameError" in unknown.content


async def test_remote_sandbox_over_websocket_relay(mcp: McpServers) -> None:
    with running_relay() as url:
        sandbox = SandboxConfig(kind="remote", monty_url=url)
        async with CodeMode(mcp, LIMITS, sandbox=sandbox) as code_mode:
            assert code_mode.sandbox.kind == "remote"
            first = await code_mode.call_tool("run_code", {"code": "who = await whoami()\nwho['server']"})
            second = await code_mode.call_tool("run_code", {"code": "who['server'] + '!'"})
            heap = await code_mode.call_tool("run_code", {"code": "x = 'a' * (6 * 1024 ** 3)"})
            alive = await code_mode.call_tool("run_code", {"code": "json.dumps([1, 2])"})
    assert (first.content, second.content) == ("real", "real!")
    assert heap.is_error and "MemoryError" in heap.content
    assert json.loads(alive.content) == [1, 2]


async def test_an_sdk_wrapped_string_stays_a_string(mcp: McpServers) -> None:
    async with CodeMode(mcp, LIMITS) as code_mode:
        description = code_mode.tools()[0].description
        output = await code_mode.call_tool(
            "run_code", {"code": "r = await echo(text='123')\n[r, type(r).__name__]"}
        )
    assert "async def echo(*, text: str) -> str:" in description, "the stub shows the unwrapped type"
    assert json.loads(output.content) == ["123", "str"], "not the int 123, not {'result': '123'}"


@pytest.mark.parametrize("verbose", [False, True])
async def test_a_large_mutating_argument_gives_short_audit_lines(mcp: McpServers, verbose: bool) -> None:
    with captured_log(verbose=verbose) as stream:
        async with CodeMode(mcp, LIMITS) as code_mode:
            output = await code_mode.call_tool(
                "run_code", {"code": "r = await write_note(text='x' * 200_000)\nlen(r['stored'])"}
            )
    assert output.content == "200000"
    audit = [json.loads(line) for line in stream.getvalue().splitlines() if '"mutating": true' in line]
    assert [(line["event"], line["level"]) for line in audit] == [
        ("mcp.tool_call", "warn"),
        ("mcp.tool_result", "warn"),
    ]
    call, result = audit
    assert call["tool"] == result["tool"] == "write_note"
    assert result["bytes"] > 200_000 and result["is_error"] is False
    limit = 2_500 if verbose else 400
    assert all(len(json.dumps(line)) < limit for line in audit), [len(json.dumps(x)) for x in audit]
    assert "x" * 100 in json.dumps(call["arguments"]), "a preview of the arguments"
    assert ("content" in result) is verbose, "the result is logged only with --verbose"
