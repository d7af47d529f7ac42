"""Stdio servers spawned before the SDK import are the ones the connections use, and only when
they were started exactly as the transport would start them."""

from __future__ import annotations

import json

import pytest

from asyncai.tools import McpServers, stdio_spec
from asyncai.tools.mcp.early_start import EarlyServers, early_servers
from tests.fakes.servers import server_command

pytestmark = pytest.mark.anyio


async def _server_pid(executor: McpServers) -> int:
    output = await executor.call_tool("whoami", {})
    return int(json.loads(output.content)["pid"])


async def test_a_server_started_early_is_the_one_connected() -> None:
    spec = stdio_spec(server_command("early"))
    async with early_servers([spec], secrets=[]) as early:
        [waiting] = early.waiting
        async with McpServers([spec], early=early) as executor:
            assert early.waiting == ()
            assert await _server_pid(executor) == waiting.process.pid
    assert waiting.process.returncode is not None


async def test_a_server_started_with_another_environment_is_not_used_and_is_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ASYNCAI_TEST_VALUE", "a-secret-value-123")
    spec = stdio_spec(server_command("early"))
    early = EarlyServers()
    try:
        await early.spawn([spec], secrets=[])  # inherits ASYNCAI_TEST_VALUE
        [waiting] = early.waiting
        # The executor withholds the variable holding its secret: not the environment spawned early.
        async with McpServers([spec], secrets=["a-secret-value-123"], early=early) as executor:
            assert await _server_pid(executor) != waiting.process.pid
        assert early.waiting == (waiting,)
    finally:
        await early.aclose()
    assert waiting.process.returncode is not None
    assert not early.waiting


async def test_a_command_that_cannot_start_early_fails_as_before() -> None:
    spec = stdio_spec("/nonexistent/asyncai-no-such-server")
    async with early_servers([spec], secrets=[]) as early:
        assert early.waiting == ()
        executor = McpServers([spec], early=early)
        with pytest.raises(Exception, match="cannot start MCP server"):
            await executor.connect()
        await executor.aclose()


async def test_code_mode_from_the_command_line_talks_to_the_server_it_spawned_first() -> None:
    """``run-code`` and the agent spawn their stdio servers before importing the engine and the SDK;
    the server spawned first is the one code mode uses, and no second one is started."""
    from asyncai.cli.main import parse_settings
    from asyncai.cli.wiring import code_mode_executor
    from tests.hostile.watch import descendants

    command = server_command("early")
    settings = parse_settings(["run-code", "--mcp-stdio", command, "-c", "1"])
    async with code_mode_executor(settings) as executor:
        output = await executor.call_tool("run_code", {"code": "(await whoami())['pid']"})
        servers = [proc.pid for proc in descendants() if "--name early" in proc.cmdline]
    assert servers == [int(output.content)], "one server, and code mode talks to it"
