"""``asyncai serve-mcp`` over stdio, driven by the real ``mcp`` SDK client: the tools it offers,
code mode over wrapped servers (ours and third-party ones), per-session state, large results, a
wrapped server dying, and the mutation gate with and without elicitation."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp.types as mt
import pytest
from mcp import Client
from mcp.client.stdio import stdio_client

from tests.serve.helpers import ran, stdio_params
from tests.third_party import npm_server, pypi_server

pytestmark = pytest.mark.anyio

TEST_SERVER = f"{sys.executable} {Path(__file__).parent.parent / 'fakes' / 'mcp_test_server.py'}"


async def run_code(client: Client, code: str) -> mt.CallToolResult:
    result = await client.call_tool("run_code", {"code": code})
    ran(result)  # its text and structured content agree
    return result


def audited(result: mt.CallToolResult) -> list[dict[str, Any]]:
    """The nested calls the result's ``_meta`` lists."""
    calls: list[dict[str, Any]] = ran(result).audit["nested_calls"]
    return calls


def text(result: mt.CallToolResult) -> str:
    """The snippet's value: the first content block."""
    block = result.content[0]
    assert isinstance(block, mt.TextContent)
    return block.text


def note(result: mt.CallToolResult) -> str | None:
    """The variables note: a second block, sent when it changed."""
    if len(result.content) < 2:
        return None
    [_, block] = result.content
    assert isinstance(block, mt.TextContent)
    return block.text


async def test_only_run_code_is_offered_unless_direct_tools_are_asked_for() -> None:
    async with Client(stdio_client(stdio_params("--mcp-stdio", TEST_SERVER))) as client:
        tools = (await client.list_tools()).tools
        assert [tool.name for tool in tools] == ["run_code"]
        assert "async def write_note(" in (tools[0].description or "")
    async with Client(stdio_client(stdio_params("--mcp-stdio", TEST_SERVER, "--expose-direct"))) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert names[0] == "run_code" and {"echo", "write_note", "blob"} <= set(names)
        direct = await client.call_tool("echo", {"text": "straight through"})
        assert text(direct) == "straight through" and not direct.is_error


async def test_gather_over_our_server_and_a_third_party_one_returns_the_filtered_value() -> None:
    time_server = pypi_server("mcp-server-time", "--local-timezone", "UTC")
    args = ("--mcp-stdio", TEST_SERVER, "--mcp-stdio", f"time={time_server}")
    async with Client(stdio_client(stdio_params(*args))) as client:
        result = await run_code(
            client,
            'a, b = await asyncio.gather(echo(text="hi"), get_current_time(timezone="Europe/Paris"))\n'
            '[a, b["timezone"]]',
        )
    assert not result.is_error, text(result)
    assert text(result).startswith('["hi","Europe/Paris"]')
    calls = audited(result)
    assert sorted(c["tool"] for c in calls) == ["echo", "get_current_time"]
    assert all(set(c) == {"tool", "arguments", "is_error", "bytes", "mutating"} for c in calls)


async def test_a_session_keeps_its_variables_and_the_note_comes_when_it_changes() -> None:
    async with Client(stdio_client(stdio_params("--mcp-stdio", TEST_SERVER))) as client:
        first = await run_code(client, "x = 41")
        second = await run_code(client, "x + 1")
        third = await run_code(client, "y = [1, 2]")
        gone = "try:\n    x\n    r = 'kept'\nexcept NameError:\n    r = 'gone'\nr"
        restarted = await client.call_tool("run_code", {"code": gone, "restart": True})
    # A snippet that ends with an assignment returns what it assigned.
    assert (text(first), note(first)) == ("41", "[run_code variables still in scope: x: int]")
    assert (text(second), note(second)) == ("42", None)  # same variables: no note again
    assert "y: list[2]" in (note(third) or "")
    assert (text(restarted), note(restarted)) == ("gone", "[run_code variables still in scope: r: str[4]]")


async def test_ten_megabytes_from_a_wrapped_tool_reach_the_client_as_a_small_value() -> None:
    async with Client(stdio_client(stdio_params("--mcp-stdio", TEST_SERVER))) as client:
        result = await run_code(client, 'r = await blob(size=10_000_000)\nlen(r["items"])')
    assert text(result).startswith("100000")
    assert len(text(result)) < 200
    [call] = audited(result)
    assert call["bytes"] > 10_000_000


async def test_a_wrapped_server_dying_mid_snippet_is_an_error_and_serve_mcp_goes_on() -> None:
    args = ("--mcp-stdio", f"doomed={TEST_SERVER}", "--mcp-stdio", f"time={pypi_server('mcp-server-time')}")
    async with Client(stdio_client(stdio_params(*args))) as client:
        died = await run_code(client, "await die()")
        after = await run_code(client, "1 + 1")
        still = await run_code(
            client, 'try:\n    await echo(text="x")\nexcept RuntimeError as e:\n    r = str(e)\nr'
        )
    assert died.is_error and "die" in text(died)
    assert text(after).startswith("2")
    assert "not running" in text(still)


async def test_deny_refuses_a_third_party_write_and_the_snippet_can_catch_it(tmp_path: Path) -> None:
    args = ("--mcp-stdio", npm_server("filesystem", str(tmp_path)), "--mutations", "deny")
    target = tmp_path / "note.txt"
    code = (
        f"try:\n    await write_file(path={str(target)!r}, content='x')\n"
        "except PermissionError as e:\n    r = 'refused: ' + str(e)\nr"
    )
    async with Client(stdio_client(stdio_params(*args))) as client:
        result = await run_code(client, code)
    assert not result.is_error
    assert text(result).startswith("refused: write_file() was not run: mutating calls are denied")
    assert not target.exists()
    [call] = audited(result)
    assert call["refused"] is True and call["mutating"] is True and call["tool"] == "write_file"


class Person:
    """An elicitation callback that answers as scripted and keeps the questions."""

    def __init__(self, *answers: str, delay: float = 0.0) -> None:
        self.answers = list(answers)
        self.delay = delay
        self.questions: list[str] = []

    async def __call__(self, context: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        self.questions.append(params.message)
        if self.delay:
            await anyio.sleep(self.delay)  # a slow human, not synchronisation
        answer = self.answers.pop(0)
        if answer == "yes":
            return mt.ElicitResult(action="accept", content={"allow": True})
        return mt.ElicitResult(action="decline")


ASK = ("--mcp-stdio", TEST_SERVER, "--mutations", "ask")
WRITE = 'try:\n    r = await write_note(text="{0}")\nexcept PermissionError as e:\n    r = str(e)\nr'


async def test_ask_runs_what_the_user_allows_and_refuses_what_they_decline() -> None:
    person = Person("yes", "no")
    async with Client(stdio_client(stdio_params(*ASK)), mode="legacy", elicitation_callback=person) as client:
        allowed = await run_code(client, WRITE.format("a"))
        declined = await run_code(client, WRITE.format("b"))
        reads = await run_code(client, 'await echo(text="reads are not asked about")')
    assert json.loads(text(allowed).split("\n\n")[0]) == {"stored": "a"}
    assert text(declined).startswith("write_note() was not run: the user declined it")
    assert text(reads).startswith("reads are not asked about")
    assert person.questions == [
        "asyncai: a run_code snippet wants to call write_note(text='a'). Allow it?",
        "asyncai: a run_code snippet wants to call write_note(text='b'). Allow it?",
    ]
    assert audited(declined)[0]["refused"] is True


async def test_ask_without_a_way_to_ask_refuses_and_says_why() -> None:
    async with Client(stdio_client(stdio_params(*ASK)), mode="legacy") as client:  # no elicitation
        no_elicitation = await run_code(client, WRITE.format("a"))
    async with Client(stdio_client(stdio_params(*ASK))) as client:  # 2026-07-28, no elicitation either
        stateless = await run_code(client, WRITE.format("a"))
    assert "this MCP client cannot ask its user (no elicitation support)" in text(no_elicitation)
    assert "this MCP client cannot ask its user (no elicitation support)" in text(stateless)


async def test_ask_under_the_stateless_protocol_pauses_the_snippet_for_the_answer() -> None:
    person = Person("yes")
    async with Client(stdio_client(stdio_params(*ASK)), elicitation_callback=person) as client:
        assert client.protocol_version == "2026-07-28"  # no back-channel: input_required and a retry
        allowed = await run_code(client, WRITE.format("a"))
    assert json.loads(text(allowed).split("\n\n")[0]) == {"stored": "a"}
    assert person.questions == ["asyncai: a run_code snippet wants to call write_note(text='a'). Allow it?"]


async def test_waiting_for_the_person_does_not_count_against_the_wall_clock() -> None:
    person = Person("yes", delay=1.5)
    args = (*ASK, "--code-wall-timeout", "1")
    async with Client(
        stdio_client(stdio_params(*args)), mode="legacy", elicitation_callback=person
    ) as client:
        result = await run_code(client, WRITE.format("slow"))
    assert not result.is_error, text(result)
    assert json.loads(text(result).split("\n\n")[0]) == {"stored": "slow"}


async def test_a_wrapped_servers_new_tool_reaches_the_catalog_and_the_client_is_told() -> None:
    changed = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            changed.set()

    async with Client(
        stdio_client(stdio_params("--mcp-stdio", TEST_SERVER)), mode="legacy", message_handler=on_message
    ) as client:
        before = (await client.list_tools()).tools[0].description or ""
        kept = await run_code(client, "x = 5")
        grown = await run_code(client, 'await grow(name="fresh_tool")')
        with anyio.fail_after(30):
            await changed.wait()
        after = (await client.list_tools()).tools[0].description or ""
        used = await run_code(client, "[await fresh_tool(), x]")  # the same REPL: x is still there
    assert not kept.is_error and text(grown).startswith("added fresh_tool")
    assert "fresh_tool" not in before and "async def fresh_tool(" in after
    assert text(used).startswith('["fresh_tool",5]')


async def test_the_first_block_is_the_bare_value_and_the_audit_is_bounded() -> None:
    snippet = (
        "calls = await asyncio.gather(*(echo(text=str(n)) for n in range(30)))\n"
        "kept = len(calls)\n"
        '{"echoed": kept, "last": calls[-1]}'
    )
    async with Client(
        stdio_client(stdio_params("--mcp-stdio", TEST_SERVER, "--code-max-calls", "100"))
    ) as client:
        result = await run_code(client, snippet)
    assert not result.is_error, text(result)
    assert json.loads(text(result)) == {"echoed": 30, "last": "29"}  # parses as it is
    assert note(result) is not None and "kept: int" in (note(result) or "")
    answer = ran(result)
    assert answer.content == {"value": {"echoed": 30, "last": "29"}, "variables": note(result)}
    audit = answer.audit
    assert len(audit["nested_calls"]) == 20 and audit["nested_calls_left_out"] == 10
    assert audit["nested_call_counts"] == {"total": 30, "failed": 0, "mutating": 0, "refused": 0}
