"""The library's face, as a program that imports asyncai meets it: a closed ``CodeMode`` or scope set
refuses to work and says what was closed; the public constructors check their arguments at the
call; the ``asyncai`` logger writes nothing unless the application configured logging (the CLI
configures its own); the duplicate-tool warning names the tool and both sources."""

from __future__ import annotations

import inspect
import io
import json
import logging
import shlex
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import asyncai
from asyncai import CodeMode, CodeModeLimits, FunctionTools, ReplScopes
from tests.cli.conftest import asyncai as asyncai_command
from tests.fakes.servers import server_command

LIMITS = CodeModeLimits(max_memory=256 * 2**20)
CODE_MODE_CLOSED = r"this CodeMode was closed \(aclose\(\) or the end of its async with\); create a new one"


def add(a: int, b: int) -> int:
    """Add two numbers (unmarked: mutating, as the MCP spec assumes of a tool that says nothing)."""
    return a + b


async def _run(action: Callable[[], object]) -> None:
    """Call ``action``, awaiting what it returns when that is awaitable."""
    result = action()
    if inspect.isawaitable(result):
        await result


# A closed CodeMode or scope set ----------------------------------------------------------------


@pytest.mark.anyio
async def test_a_closed_code_mode_refuses_every_use_and_names_what_was_closed() -> None:
    async with CodeMode(FunctionTools([add]), LIMITS) as code_mode:
        first = await code_mode.call_tool("run_code", {"code": "x = await add(a=1, b=2)\nx"})
        assert first.content == "3"
        own = code_mode.new_scope()
        assert (await own.call_tool("run_code", {"code": "1"})).content == "1"
        scopes = ReplScopes(code_mode)  # a scope set of its own over the same code mode
        async with scopes.use("kept"):
            pass

    uses: dict[str, Callable[[], object]] = {
        "call_tool": lambda: code_mode.call_tool("run_code", {"code": "x"}),
        "tools": code_mode.tools,
        "context_note": code_mode.context_note,
        "new_scope": code_mode.new_scope,
        "async with": code_mode.__aenter__,
        "scopes.use": lambda: code_mode.scopes.use("a").__aenter__(),
        "scopes.use(None)": lambda: code_mode.scopes.use(None).__aenter__(),
        "scopes.get": lambda: code_mode.scopes.get("a"),
        "own scopes, a key from before": lambda: scopes.get("kept"),
        "own scopes, a new key": lambda: scopes.use("new").__aenter__(),
    }
    for name, use in uses.items():
        with pytest.raises(RuntimeError, match=CODE_MODE_CLOSED):
            await _run(use)
            pytest.fail(f"{name} worked on a closed CodeMode")

    # A scope made before the close starts no new worker pool: it raises as its code mode does.
    lates: dict[str, Callable[[], object]] = {
        "call_tool": lambda: own.call_tool("run_code", {"code": "1"}),
        "run_pausing": lambda: own.run_pausing({"code": "1"}),
        "eager": own.eager,
    }
    for name, late in lates.items():
        with pytest.raises(RuntimeError, match=CODE_MODE_CLOSED):
            await _run(late)
            pytest.fail(f"a scope's {name} worked after its CodeMode closed")
    await code_mode.aclose()  # closing twice is harmless


@pytest.mark.anyio
async def test_a_closed_scope_set_refuses_to_hand_out_scopes() -> None:
    async with CodeMode(FunctionTools([add]), LIMITS) as code_mode:
        scopes = ReplScopes(code_mode)
        async with scopes.use("a") as use:
            await use.scope.call_tool("run_code", {"code": "x = 1"})
        await scopes.aclose()
        for use_again in (lambda: scopes.use("a").__aenter__(), lambda: scopes.get("a")):
            with pytest.raises(RuntimeError, match=r"these ReplScopes were closed \(aclose\(\)\)"):
                await _run(use_again)
        # The code mode itself is still open, and so is its own scope set.
        async with code_mode.scopes.use("a") as use:
            assert (await use.scope.call_tool("run_code", {"code": "2"})).content == "2"


# Constructor arguments --------------------------------------------------------------------------


def _functions() -> FunctionTools:
    return FunctionTools([add])


BAD_ARGUMENTS: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    (
        "a second source where the limits go",
        lambda: CodeMode(_functions(), _functions()),  # type: ignore[arg-type]
        TypeError,
        "CodeMode: limits must be an asyncai.CodeModeLimits or None, not a FunctionTools "
        "(several tool sources go in one list: CodeMode([a, b]))",
    ),
    (
        "a function among the sources",
        lambda: CodeMode([_functions(), add]),  # type: ignore[list-item]
        TypeError,
        "CodeMode: tools[1] must be a tool source",
    ),
    (
        "a command line as the source",
        lambda: CodeMode("mcp-server-time"),  # type: ignore[arg-type]
        TypeError,
        "asyncai.McpServers",
    ),
    (
        "mutations maybe",
        lambda: CodeMode(_functions(), mutations="maybe"),  # type: ignore[arg-type]
        ValueError,
        "CodeMode: mutations must be one of 'allow', 'ask', 'deny', not str 'maybe'",
    ),
    (
        "an approver that is a function",
        lambda: CodeMode(_functions(), approver=lambda request: True),  # type: ignore[arg-type]
        TypeError,
        "CodeMode: approver must be None or an object with async def approve",
    ),
    (
        "a path as the state store",
        lambda: CodeMode(_functions(), state_store="/tmp/state"),  # type: ignore[arg-type]
        TypeError,
        "asyncai.DirectoryStore(path)",
    ),
    (
        "one tool name as speculate_tools",
        lambda: CodeMode(_functions(), speculate_tools="search"),
        TypeError,
        "CodeMode: speculate_tools must be a list of strings, not str 'search'",
    ),
    (
        "a string as a switch",
        lambda: CodeMode(_functions(), speculate="no"),  # type: ignore[arg-type]
        TypeError,
        "CodeMode: speculate must be True or False",
    ),
    (
        "a preamble file's path",
        lambda: CodeMode(_functions(), preamble=Path("preamble.py")),  # type: ignore[arg-type]
        TypeError,
        "CodeMode: preamble must be Python source (a str) or None",
    ),
    (
        "an approval that is a string",
        lambda: asyncai.Approval("no"),  # type: ignore[arg-type]
        TypeError,
        "Approval: allowed must be True or False, not str 'no'",
    ),
    (
        "a zero timeout",
        lambda: CodeModeLimits(code_timeout=0),
        ValueError,
        "CodeModeLimits: code_timeout must be a positive number, not int 0",
    ),
    (
        "a fractional call budget",
        lambda: CodeModeLimits(max_calls=2.5),  # type: ignore[arg-type]
        TypeError,
        "CodeModeLimits: max_calls must be a positive integer",
    ),
    ("a heap cap in MiB", lambda: CodeModeLimits(max_memory=256), ValueError, "at least 1 MiB"),
    (
        "a number as a command line",
        lambda: asyncai.stdio_spec(123),  # type: ignore[arg-type]
        TypeError,
        "stdio_spec: command_line must be a command line (a str), not int 123",
    ),
    (
        "no URL",
        lambda: asyncai.http_spec(None),  # type: ignore[arg-type]
        TypeError,
        "http_spec: url must be an http:// or https:// URL",
    ),
    (
        "one spec, not a list",
        lambda: asyncai.McpServers(asyncai.stdio_spec("mcp-server-time")),  # type: ignore[arg-type]
        TypeError,
        "McpServers: specs must be a list of server specs",
    ),
    (
        "a command line among the specs",
        lambda: asyncai.McpServers(["mcp-server-time"]),  # type: ignore[list-item]
        TypeError,
        "McpServers: specs[0] must be a server spec, not str 'mcp-server-time'",
    ),
    (
        "a sign-in mode that is not one",
        lambda: asyncai.McpServers([], sign_in="yes"),  # type: ignore[arg-type]
        ValueError,
        "McpServers: sign_in must be one of 'browser', 'print', 'never'",
    ),
    (
        "one secret, not a list",
        lambda: asyncai.McpServers([], secrets="sk-123"),
        TypeError,
        "McpServers: secrets must be a list of strings",
    ),
    (
        "arguments in one string",
        lambda: asyncai.StdioServerSpec("time", "mcp-server-time", args="--local-timezone UTC"),  # type: ignore[arg-type]
        TypeError,
        "StdioServerSpec: args must be a list of strings",
    ),
    (
        "a transport that is not one",
        lambda: asyncai.HttpServerSpec("x", "http://127.0.0.1:9/mcp", transport="ws"),  # type: ignore[arg-type]
        ValueError,
        "HttpServerSpec: transport must be one of 'streamable-http', 'sse'",
    ),
    (
        "a grant type that is not one",
        lambda: asyncai.OAuthSettings(grant_type="password"),  # type: ignore[arg-type]
        ValueError,
        'OAuthSettings: grant_type must be "authorization_code" or "client_credentials"',
    ),
    (
        "client credentials without a client",
        lambda: asyncai.OAuthSettings(grant_type="client_credentials"),
        ValueError,
        'OAuthSettings: grant_type: "client_credentials" needs client_id and client_secret',
    ),
    (
        "a function tool as the code mode of a scope set",
        lambda: ReplScopes(_functions()),  # type: ignore[arg-type]
        TypeError,
        "ReplScopes: code_mode must be an asyncai.CodeMode",
    ),
    (
        "no config path",
        lambda: asyncai.specs_from_config(None),  # type: ignore[arg-type]
        TypeError,
        "specs_from_config: path must be a file path",
    ),
    (
        "one function where a list of them goes",
        lambda: FunctionTools(add),  # type: ignore[arg-type]
        TypeError,
        "FunctionTools: functions must be a list of functions, not a function",
    ),
    (
        "a name among the functions",
        lambda: FunctionTools(["add"]),  # type: ignore[list-item]
        TypeError,
        "FunctionTools: each function must be a function, not str 'add'",
    ),
    (
        "a sandbox of a kind that does not exist",
        lambda: asyncai.SandboxConfig(kind="docker"),  # type: ignore[arg-type]
        ValueError,
        "SandboxConfig: kind must be one of 'auto', 'pool', 'remote', 'in-process', 'memory', not str 'docker'",
    ),
    (
        "no workers",
        lambda: asyncai.SandboxConfig(max_workers=0),
        ValueError,
        "SandboxConfig: max_workers must be a positive integer, not int 0",
    ),
    (
        "a directory store without a directory",
        lambda: asyncai.DirectoryStore(None),  # type: ignore[arg-type]
        TypeError,
        "DirectoryStore: root must be a directory (a pathlib.Path or str), not None",
    ),
    (
        "a Redis store that never expires",
        lambda: asyncai.RedisStore("redis://127.0.0.1:1/0", ttl=0),
        ValueError,
        "RedisStore: ttl must be a positive number, not int 0",
    ),
    (
        "elicitation maybe",
        lambda: asyncai.ServerRequests(elicitation="maybe"),  # type: ignore[arg-type]
        ValueError,
        "ServerRequests: elicitation must be one of 'ask', 'accept-defaults', 'decline', not str 'maybe'",
    ),
    (
        "one directory as the roots",
        lambda: asyncai.ServerRequests(roots="/data"),
        TypeError,
        "ServerRequests: roots must be a list of directories (pathlib.Path or str), not str '/data'",
    ),
]


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [case[1:] for case in BAD_ARGUMENTS],
    ids=[case[0] for case in BAD_ARGUMENTS],
)
def test_a_wrong_argument_is_refused_at_the_call_naming_the_parameter(
    make: Callable[[], object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as raised:
        make()
    assert type(raised.value) is error or issubclass(type(raised.value), error)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


class _SaysYes:
    """An approver that answers ``True`` where an ``asyncai.Approval`` belongs."""

    async def approve(self, request: asyncai.ApprovalRequest) -> asyncai.Approval:
        return True  # type: ignore[return-value]


@pytest.mark.anyio
async def test_an_approver_that_returns_no_approval_is_refused_and_told_what_to_return() -> None:
    async with CodeMode(FunctionTools([add]), LIMITS, mutations="ask", approver=_SaysYes()) as code_mode:
        result = await code_mode.call_tool("run_code", {"code": "await add(a=1, b=2)"})
    assert result.is_error and "PermissionError: add() was not run" in result.content
    assert "approver.approve(): what it returns must be an asyncai.Approval, not True" in result.content


def test_good_arguments_are_taken_as_given() -> None:
    spec = asyncai.StdioServerSpec("time", "mcp-server-time", args=["--local-timezone", "UTC"])  # type: ignore[arg-type]
    assert spec.args == ("--local-timezone", "UTC")
    assert asyncai.stdio_spec("time=mcp-server-time").name == "time"
    assert CodeModeLimits(code_timeout=1, max_memory=2**20).code_timeout == 1
    assert issubclass(asyncai.ConfigError, ValueError)  # a bad command line is a ValueError too
    assert asyncai.DirectoryStore("/tmp/scopes").root == Path("/tmp/scopes")
    assert asyncai.ServerRequests(roots=["/data"]).roots == (Path("/data"),)


@pytest.mark.anyio
async def test_roots_cannot_be_changed_on_servers_that_were_offered_none() -> None:
    async with asyncai.McpServers([]) as servers:
        with pytest.raises(RuntimeError, match="no roots were offered when the servers started"):
            await servers.set_roots(["/data"])
    offered = asyncai.ServerRequests(roots=["/data"])
    async with asyncai.McpServers([], requests=offered) as servers:
        await servers.set_roots(["/other"])
    assert offered.roots == (Path("/other"),)


# The log ----------------------------------------------------------------------------------------

LIBRARY_USER = textwrap.dedent(
    """
    import asyncio
    import sys

    import asyncai


    def add(a: int, b: int) -> int:
        \"\"\"Add two numbers.\"\"\"
        return a + b


    async def main() -> None:
        functions = asyncai.FunctionTools([add])
        again = asyncai.FunctionTools([add], server="more")  # a duplicate tool: a warning
        async with (
            asyncai.McpServers([asyncai.stdio_spec(sys.argv[1])]) as mcp,
            asyncai.CodeMode([mcp, functions, again], asyncai.CodeModeLimits(max_memory=256 * 2**20)) as code_mode,
        ):
            snippet = "n = await write_note(text='hi')\\nawait add(a=len(n['stored']), b=1)"
            result = await code_mode.call_tool("run_code", {"code": snippet})
            print(result.content, result.is_error)


    asyncio.run(main())
    """
)


def test_a_library_user_who_configured_no_logging_sees_no_asyncai_log(tmp_path: Path) -> None:
    script = tmp_path / "user.py"
    script.write_text(LIBRARY_USER)
    process = subprocess.run(
        [sys.executable, str(script), server_command("notes")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert process.returncode == 0, process.stderr
    assert process.stdout == "3 False\n", "two mutating nested calls ran: they are what gets audited"
    assert process.stderr == "", "asyncai wrote to the stderr of a program that configured no logging"


def test_the_cli_still_writes_its_ndjson_log(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    servers = {
        name: {"command": sys.executable, "args": shlex.split(server_command(name))[1:]} for name in "ab"
    }
    config.write_text(json.dumps({"mcpServers": servers}))
    result = asyncai_command("run-code", "--mcp-config", str(config), "-c", "await write_note(text='hi')")
    assert result.status == 0, result.stderr
    lines = result.stderr.splitlines()
    assert lines and all(line.startswith("{") for line in lines), "every log line is NDJSON"
    logged = result.log()
    assert {line["event"] for line in logged} >= {"mcp.duplicate_tool", "mcp.tool_call", "mcp.tool_result"}
    duplicate = next(line for line in logged if line["event"] == "mcp.duplicate_tool")
    assert (duplicate["level"], duplicate["kept_server"], duplicate["dropped_server"]) == ("warn", "a", "b")
    call = next(line for line in logged if line["event"] == "mcp.tool_call")
    assert (call["tool"], call["arguments"], call["mutating"]) == ("write_note", {"text": "hi"}, True)


@pytest.fixture
def plain_log() -> Iterator[io.StringIO]:
    """The ``asyncai`` log as an application that set up logging its own way reads it."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    asyncai_logger = logging.getLogger("asyncai")
    asyncai_logger.addHandler(handler)
    try:
        yield stream
    finally:
        asyncai_logger.removeHandler(handler)


def test_the_duplicate_tool_warning_names_the_tool_and_both_sources(plain_log: io.StringIO) -> None:
    def search(query: str) -> str:
        """Search."""
        return query

    routed = asyncai.RoutedTools(
        [FunctionTools([search], server="docs"), FunctionTools([search], server="web")]
    )
    assert routed.routes["search"].server == "docs"
    [line] = [line for line in plain_log.getvalue().splitlines() if "mcp.duplicate_tool" in line]
    assert line.startswith("WARNING asyncai: mcp.duplicate_tool ")
    fields: dict[str, Any] = json.loads(line.partition("mcp.duplicate_tool ")[2])
    assert fields == {"tool": "search", "kept_server": "docs", "dropped_server": "web"}
