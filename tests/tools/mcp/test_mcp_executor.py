"""McpServers against real MCP servers: routing, large results, concurrency, timeouts, crashes."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import shlex
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from asyncai.log import configure_logging
from asyncai.tools import McpServers, ServerStartError, http_spec, specs_from_config, stdio_spec
from asyncai.tools.mcp.client import McpConnection
from tests.fakes.logs import captured_log
from tests.fakes.servers import SERVER_SCRIPT, broken_server_config, http_test_server, server_command

pytestmark = pytest.mark.anyio

TEN_MB = 10_000_000


def log_lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


@pytest.fixture
def verbose_log() -> Iterator[io.StringIO]:
    with captured_log(verbose=True) as stream:
        yield stream


async def test_routes_each_tool_to_one_server_and_warns_on_duplicates(verbose_log: io.StringIO) -> None:
    specs = [
        stdio_spec(server_command("alpha"), name="alpha"),
        stdio_spec(server_command("beta"), name="beta"),
    ]
    async with McpServers(specs) as executor:
        assert executor.routes["whoami"].server == "alpha"
        who = await executor.call_tool("whoami", {})
        assert json.loads(who.content)["server"] == "alpha"
        assert {d.name for d in executor.duplicates} == {t.name for t in executor.tools()}
        assert all(d.kept_server == "alpha" and d.dropped_server == "beta" for d in executor.duplicates)
    warnings = [line for line in log_lines(verbose_log) if line["event"] == "mcp.duplicate_tool"]
    assert warnings and warnings[0]["level"] == "warn" and warnings[0]["dropped_server"] == "beta"


async def test_ten_megabyte_result_arrives_whole_over_stdio() -> None:
    async with McpServers([stdio_spec(server_command("big"))]) as executor:
        output = await executor.call_tool("text_blob", {"size": TEN_MB})
    assert not output.is_error
    assert len(output.content) == TEN_MB


async def test_ten_megabyte_result_arrives_whole_over_streamable_http() -> None:
    with http_test_server("http-big") as url:
        async with McpServers([http_spec(url)]) as executor:
            output = await executor.call_tool("text_blob", {"size": TEN_MB})
    assert not output.is_error
    assert len(output.content) == TEN_MB


async def test_structured_results_keep_their_structured_content() -> None:
    async with McpServers([stdio_spec(server_command("s"))]) as executor:
        output = await executor.call_tool("blob", {"size": 1000})
    assert output.structured is not None
    assert json.loads(output.content) == output.structured


async def test_calls_run_concurrently() -> None:
    async with McpServers([stdio_spec(server_command("conc"))]) as executor:
        started = time.perf_counter()
        outputs = await asyncio.gather(*(executor.call_tool("sleep", {"seconds": 1.0}) for _ in range(5)))
        elapsed = time.perf_counter() - started
    assert all(not o.is_error for o in outputs)
    assert elapsed < 2.0, f"5 concurrent 1 s calls took {elapsed:.2f}s"


async def test_timeout_is_an_error_result_and_the_session_stays_usable() -> None:
    async with McpServers([stdio_spec(server_command("slow"))], tool_timeout=0.5) as executor:
        timed_out = await executor.call_tool("sleep", {"seconds": 5})
        after = await executor.call_tool("echo", {"text": "still here"})
    assert timed_out.is_error
    assert timed_out.content == "tool sleep timed out after 0.5 s"
    assert not after.is_error and "still here" in after.content


async def test_killed_server_fails_its_calls_while_another_server_answers(verbose_log: io.StringIO) -> None:
    specs = [stdio_spec(server_command("doomed"), name="doomed")]
    specs.append(stdio_spec(f"{server_command('other')}", name="other"))
    async with McpServers(specs) as executor:
        pending = asyncio.create_task(executor.call_tool("sleep", {"seconds": 30}))
        await asyncio.sleep(0)  # let the pending call reach the server before the crash
        died = await executor.call_tool("die", {})
        pending_result = await asyncio.wait_for(pending, 10)
        later = await executor.call_tool("whoami", {})
        other = await executor.server("other").call_tool("whoami", {})
    assert died.is_error and died.content.startswith("tool error:")
    assert pending_result.is_error and pending_result.content.startswith("tool error:")
    assert later.is_error and "not running" in later.content
    assert not other.is_error and json.loads(other.content)["server"] == "other"
    died_lines = [line for line in log_lines(verbose_log) if line["event"] == "mcp.server_died"]
    assert died_lines and died_lines[0]["server"] == "doomed" and died_lines[0]["level"] == "error"


async def test_error_results_and_unknown_tools() -> None:
    async with McpServers([stdio_spec(server_command("e"))]) as executor:
        failed = await executor.call_tool("fail", {"message": "expected failure"})
        unknown = await executor.call_tool("no_such_tool", {})
    assert failed.is_error and "expected failure" in failed.content
    assert unknown.is_error and "unknown tool" in unknown.content


async def test_server_stderr_goes_to_the_log(verbose_log: io.StringIO) -> None:
    async with McpServers([stdio_spec(server_command("noisy"), name="noisy")]):
        pass
    lines = [line for line in log_lines(verbose_log) if line["event"] == "mcp.server_stderr"]
    assert any(line["server"] == "noisy" and "noisy starting" in str(line["line"]) for line in lines)


async def test_missing_command_is_a_one_line_start_error() -> None:
    with pytest.raises(ServerStartError) as info:
        async with McpServers([stdio_spec("/nonexistent/asyncai-no-such-server --flag")]):
            pass
    message = str(info.value)
    assert "\n" not in message
    assert "/nonexistent/asyncai-no-such-server" in message and "No such file" in message


async def test_server_that_exits_at_start_reports_its_stderr() -> None:
    command = "python3 -c \"import sys; print('bad config: no token', file=sys.stderr); sys.exit(3)\""
    with pytest.raises(ServerStartError) as info:
        async with McpServers([stdio_spec(command, name="broken")]):
            pass
    assert "broken" in str(info.value) and "bad config: no token" in str(info.value)


async def test_stdio_server_sees_the_callers_environment_and_config_env_wins(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ASYNCAI_TEST_INHERITED", "from-shell")
    monkeypatch.setenv("ASYNCAI_TEST_OVERRIDDEN", "from-shell")
    config = tmp_path / "mcp.json"
    entry = {
        "command": sys.executable,
        "args": [str(SERVER_SCRIPT), "--name", "envy"],
        "env": {"ASYNCAI_TEST_OVERRIDDEN": "from-config"},
    }
    config.write_text(json.dumps({"mcpServers": {"envy": entry}}))
    async with McpServers(specs_from_config(config)) as executor:
        inherited = await executor.call_tool("getenv", {"name": "ASYNCAI_TEST_INHERITED"})
        overridden = await executor.call_tool("getenv", {"name": "ASYNCAI_TEST_OVERRIDDEN"})
    assert json.loads(inherited.content)["value"] == "from-shell"
    assert json.loads(overridden.content)["value"] == "from-config"


async def test_start_failure_does_not_block_the_event_loop() -> None:
    # The background sleep keeps the stderr pipe open after the server exited, so reading the
    # stderr head waits for its 2 s bound: that wait must not stall other tasks.
    script = "echo 'bad config: no token' >&2; sleep 4 </dev/null >/dev/null & exit 3"
    loop = asyncio.get_running_loop()
    gaps: list[float] = []

    async def heartbeat() -> None:
        while True:
            before = loop.time()
            await asyncio.sleep(0.01)
            gaps.append(loop.time() - before)

    beats = asyncio.create_task(heartbeat())
    try:
        with pytest.raises(ServerStartError) as info:
            async with McpServers([stdio_spec(shlex.join(["sh", "-c", script]), name="lagging")]):
                pass
    finally:
        beats.cancel()
    assert "bad config: no token" in str(info.value)
    assert gaps and max(gaps) < 1.0, f"the event loop stalled for {max(gaps):.2f}s"


async def test_connect_timeout_builds_the_start_error_once(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    original = McpConnection._start_error

    async def counting(self: McpConnection, reason: str) -> str:
        built.append(reason)
        return await original(self, reason)

    monkeypatch.setattr(McpConnection, "_start_error", counting)
    command = "python3 -c \"import sys, time; print('hung', file=sys.stderr, flush=True); time.sleep(60)\""
    with pytest.raises(ServerStartError) as info:
        async with McpServers([stdio_spec(command, name="hung")], connect_timeout=0.5):
            pass
    assert "no answer to initialize within 0.5 s" in str(info.value)
    assert built == ["no answer to initialize within 0.5 s"]


def test_logging_level_is_warning_without_verbose() -> None:
    configure_logging(verbose=False)
    assert logging.getLogger("asyncai").getEffectiveLevel() == logging.WARNING


async def test_start_error_shows_the_last_lines_of_stderr() -> None:
    # A server that dies at import prints its traceback frames first and the error last.
    script = "import sys\nfor i in range(40): print(f'frame {i}', file=sys.stderr)\nprint('ImportError: no module named kube', file=sys.stderr)\nsys.exit(1)"
    with pytest.raises(ServerStartError) as info:
        async with McpServers([stdio_spec(shlex.join(["python3", "-c", script]), name="tb")]):
            pass
    message = str(info.value)
    assert "\n" not in message
    assert message.endswith("frame 39 / ImportError: no module named kube")
    assert "frame 0 " not in message and "frame 10 " not in message


def _broken_config(tmp_path: Path, good: bool) -> Path:
    server = {"good": {"command": sys.executable, "args": [str(SERVER_SCRIPT), "--name", "good"]}}
    return broken_server_config(tmp_path / "mcp.json", server if good else None)


async def test_one_broken_server_is_a_warning_and_the_others_serve(
    tmp_path: Path, verbose_log: io.StringIO
) -> None:
    async with McpServers(specs_from_config(_broken_config(tmp_path, good=True))) as executor:
        who = await executor.call_tool("whoami", {})
        assert [c.name for c in executor.connections] == ["good"]
        assert list(executor.failed) == ["broken"]
    assert json.loads(who.content)["server"] == "good"
    [warning] = [line for line in log_lines(verbose_log) if line["event"] == "mcp.server_start_failed"]
    assert warning["level"] == "warn" and warning["server"] == "broken"
    assert str(warning["error"]).startswith("cannot start MCP server 'broken'") and "no token" in str(
        warning["error"]
    )
    assert "never-started" not in verbose_log.getvalue(), "a disabled server is never started"


async def test_when_no_server_starts_it_is_a_start_error(tmp_path: Path, verbose_log: io.StringIO) -> None:
    specs = specs_from_config(_broken_config(tmp_path, good=False))
    specs.append(stdio_spec("/nonexistent/asyncai-missing", name="missing"))
    with pytest.raises(ServerStartError) as info:
        async with McpServers(specs):
            pass
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("no MCP server could start (2 failed, see the warnings); the first: ")
    assert "cannot start MCP server 'broken'" in message
    warned = {line["server"] for line in log_lines(verbose_log) if line["event"] == "mcp.server_start_failed"}
    assert warned == {"broken", "missing"}


async def test_no_servers_configured_is_not_an_error() -> None:
    async with McpServers([]) as executor:
        assert executor.tools() == [] and await executor.summaries() == []
