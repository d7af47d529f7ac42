"""``--mutations ask`` at the terminal: the chat under a pty answers y, n, a and A; without a
terminal mutating calls are refused, and refusals are on record (audit, transcript)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from tests.cli.conftest import asyncai
from tests.cli.helpers import lines_of, on_a_terminal, session_of, sessions_dir
from tests.fakes.openai_server import ScriptedOpenAI, call, text_reply, tool_reply
from tests.fakes.servers import server_command

NOTES = server_command("notes")  # write_note is mutating (not read-only)
QUESTION = "run_code wants to call write_note("


def _notes(*texts: str) -> str:
    """A snippet writing each note, "refused" where the call raised PermissionError."""
    return (
        "r = []\n"
        f"for t in {list(texts)!r}:\n"
        "    try:\n"
        "        r.append((await write_note(text=t))['stored'])\n"
        "    except PermissionError:\n"
        "        r.append('refused')\n"
        "r"
    )


def _tool_results(requests: list[dict[str, Any]]) -> list[Any]:
    return [json.loads(r["messages"][-1]["content"]) for r in requests if r["messages"][-1]["role"] == "tool"]


def test_ask_in_the_chat_is_answered_y_n_a_and_A(tmp_path: Path) -> None:
    script = [
        tool_reply(call("run_code", {"code": _notes("a", "b")})),  # y, then n
        text_reply("one"),
        tool_reply(call("run_code", {"code": _notes("c", "d", "e")})),  # A: the rest of this snippet
        text_reply("two"),
        tool_reply(call("run_code", {"code": _notes("f", "g")})),  # a: this tool from now on
        text_reply("three"),
        tool_reply(call("run_code", {"code": _notes("h")})),  # not asked again
        text_reply("four"),
    ]
    typed = "first\ny\nn\nsecond\nA\nthird\na\nfourth\n/exit\n"
    with ScriptedOpenAI(script) as model:
        result = on_a_terminal(
            ["--base-url", model.base_url, "--model", "m", "--mcp-stdio", NOTES, "--mutations", "ask"],
            typed,
            tmp_path,
        )
        requests = model.requests
    assert result.returncode == 0, result.stderr
    assert _tool_results(requests) == [["a", "refused"], ["c", "d", "e"], ["f", "g"], ["h"]]
    asked = re.findall(r"run_code wants to call (write_note\([^)]*\))", result.stdout)
    assert asked == [
        "write_note(text='a')",
        "write_note(text='b')",
        "write_note(text='c')",
        "write_note(text='f')",
    ]


def test_ask_without_a_terminal_refuses_and_says_how_to_allow(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    script = [tool_reply(call("run_code", {"code": _notes("a")})), text_reply("done")]
    with ScriptedOpenAI(script) as model:
        result = asyncai(
            "--base-url", model.base_url, "--model", "m", "--mcp-stdio", NOTES, "--mutations", "ask",
            "-p", "write a note", cwd=project,
        )  # fmt: skip
        requests = model.requests
    assert result.status == 0, result.stderr
    assert _tool_results(requests) == [["refused"]]
    assert QUESTION not in result.stdout + result.stderr

    # The refusal is on record: the transcript's toolUseResult keeps the audit entry.
    claude_dir = Path(os.environ["CLAUDE_CONFIG_DIR"])
    path = sessions_dir(claude_dir, project) / f"{session_of(result)}.jsonl"
    [tool_record] = [line for line in lines_of(path) if "toolUseResult" in line]
    assert tool_record["toolUseResult"]["nested_calls"] == [
        {
            "tool": "write_note",
            "arguments": {"text": "a"},
            "is_error": True,
            "bytes": 0,
            "mutating": True,
            "refused": True,
        }
    ]


def test_the_refusal_message_without_a_terminal_tells_how_to_allow() -> None:
    result = asyncai(
        "run-code", "--mcp-stdio", NOTES, "--mutations", "ask", "-c", "await write_note(text='x')"
    )
    assert result.status == 1
    assert "PermissionError: write_note() was not run" in result.stdout
    assert "no one to ask here (no terminal)" in result.stdout and "--mutations allow" in result.stdout


def test_deny_refuses_and_the_snippet_can_catch_it() -> None:
    result = asyncai("run-code", "--mcp-stdio", NOTES, "--mutations", "deny", "-c", _notes("x"))
    assert (result.status, result.stdout.strip()) == (0, '["refused"]')


def test_ask_in_the_interactive_run_code_repl(tmp_path: Path) -> None:
    result = on_a_terminal(
        ["run-code", "--mcp-stdio", NOTES, "--mutations", "ask", "-i"],
        "await write_note(text='z')\ny\nawait write_note(text='w')\nn\n/exit\n",
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert '{"stored":"z"}' in result.stdout
    assert "PermissionError: write_note() was not run: the user refused it" in result.stdout


def test_gathered_mutating_calls_are_asked_one_at_a_time(tmp_path: Path) -> None:
    code = "await asyncio.gather(*[write_note(text=t) for t in 'pqr'])"
    result = on_a_terminal(
        ["run-code", "--mcp-stdio", NOTES, "--mutations", "ask", "-i"], f"{code}\nA\n/exit\n", tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(QUESTION) == 1  # A settled the two calls that were waiting
    assert '[{"stored":"p"},{"stored":"q"},{"stored":"r"}]' in result.stdout


def test_the_chat_asks_by_default_while_one_shot_runs_allow(tmp_path: Path) -> None:
    def script() -> list[dict[str, Any]]:
        return [tool_reply(call("run_code", {"code": _notes("a")})), text_reply("done")]

    args = ["--mcp-stdio", NOTES, "--model", "m"]
    with ScriptedOpenAI(script()) as model:  # a person at the chat is asked, without --mutations
        chat = on_a_terminal(["--base-url", model.base_url, *args], "write\nn\n/exit\n", tmp_path)
        asked = model.requests
    with ScriptedOpenAI(script()) as model:  # told otherwise: the chat does not ask
        allowed = on_a_terminal(
            ["--base-url", model.base_url, *args, "--mutations", "allow"], "write\n/exit\n", tmp_path
        )
        told = model.requests
    with ScriptedOpenAI(script()) as model:  # -p from a script keeps allow
        one_shot = asyncai("--base-url", model.base_url, *args, "-p", "write a note")
        scripted = model.requests
    assert (chat.returncode, allowed.returncode, one_shot.status) == (0, 0, 0), chat.stderr
    assert QUESTION in chat.stdout and _tool_results(asked) == [["refused"]]
    assert QUESTION not in allowed.stdout and _tool_results(told) == [["a"]]
    assert _tool_results(scripted) == [["a"]]
