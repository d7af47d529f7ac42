"""The interactive modes on a pseudo-terminal: ``asyncai`` chat and ``asyncai run-code -i``."""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

from tests.cli.conftest import BIN
from tests.cli.helpers import on_a_terminal
from tests.fakes.openai_server import ScriptedOpenAI, call, text_reply, tool_reply


def test_chat_keeps_variables_across_turns_and_restart_clears_them(tmp_path: Path) -> None:
    script = [
        tool_reply(call("run_code", {"code": "x = 41"})),
        text_reply("stored"),
        tool_reply(call("run_code", {"code": "x + 1"})),
        text_reply("42 it is"),
        tool_reply(call("run_code", {"code": "x"})),
        text_reply("x is gone"),
    ]
    with ScriptedOpenAI(script) as model:
        result = on_a_terminal(
            ["--base-url", model.base_url, "--model", "m"],
            "store\nadd one\n/restart\nwhat is x\n/exit\n",
            tmp_path,
        )
        requests = model.requests
    assert result.returncode == 0, result.stderr
    assert [line for line in result.stdout.replace("you> ", "\n").splitlines() if line] == [
        "stored",
        "42 it is",
        "x is gone",
    ]
    assert "(REPL state cleared)" in result.stderr
    assert requests[3]["messages"][-1]["content"] == "42"
    assert "NameError" in requests[5]["messages"][-1]["content"]


def test_chat_new_starts_a_thread_without_history(tmp_path: Path) -> None:
    with ScriptedOpenAI([text_reply("one"), text_reply("two")]) as model:
        result = on_a_terminal(
            ["--base-url", model.base_url, "--model", "m"], "first\n/new\nsecond\n/exit\n", tmp_path
        )
        requests = model.requests
    assert result.returncode == 0
    assert [m["content"] for m in requests[1]["messages"] if m["role"] == "user"] == ["second"]
    # Each thread is a session of its own; both are named when chat ends, and the second can be resumed.
    sessions = [
        line.removeprefix("session: ") for line in result.stderr.splitlines() if line.startswith("session: ")
    ]
    assert len(set(sessions)) == 2
    with ScriptedOpenAI([text_reply("three")]) as model:
        resumed = on_a_terminal(
            ["--base-url", model.base_url, "--model", "m", "--resume", sessions[1]],
            "third\n/exit\n",
            tmp_path,
        )
        [request] = model.requests
    assert resumed.returncode == 0, resumed.stderr
    assert f"(continuing session {sessions[1]}: 2 earlier messages)" in resumed.stderr
    assert [m["content"] for m in request["messages"][1:]] == ["second", "two", "third"]


def test_run_code_interactive_repl(tmp_path: Path) -> None:
    typed = "x = 6\nfor i in range(3):\n    x += 1\n\nx * 6\n/restart\nx\n/exit\n"
    result = on_a_terminal(["run-code", "-i"], typed, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "(no output; the last expression was None)" in result.stdout
    assert "54" in result.stdout
    assert "(REPL state cleared)" in result.stdout
    assert "NameError: name 'x' is not defined" in result.stdout


def test_chat_history_persists_across_sessions(tmp_path: Path) -> None:
    # readline only edits (and records) input when stdin and stdout are both terminals.
    master, slave = pty.openpty()
    try:
        with ScriptedOpenAI([text_reply("hi")]) as model:
            process = subprocess.Popen(
                [str(BIN / "asyncai"), "--base-url", model.base_url, "--model", "m"],
                stdin=slave,
                stdout=slave,
                stderr=subprocess.DEVNULL,
                env={**os.environ, "XDG_STATE_HOME": str(tmp_path)},
            )
            os.write(master, b"remember this line\n/exit\n")
            status = process.wait(timeout=90)
    finally:
        os.close(slave)
        os.close(master)
    assert status == 0
    history = (tmp_path / "asyncai" / "chat_history").read_text()
    assert "remember this line" in history
