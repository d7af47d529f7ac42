"""A thread's REPL outlives the process: ``asyncai -p`` then ``asyncai --resume <id> -p`` in a new
process still has the variables; a corrupt or foreign saved scope gives a warning and an empty
scope, and a state over ``--code-max-state`` is not saved."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from asyncai.state.stores import MAGIC, SUFFIX, default_state_dir, new_stamp, open_store
from tests.cli.conftest import BIN, SIMPLE, CliResult
from tests.cli.helpers import ask, on_a_terminal, session_of
from tests.fakes.openai_server import ScriptedOpenAI, call, text_reply, tool_reply
from tests.fakes.redis import redis_server

RESTARTED = "[the sandbox was restarted: variables from earlier run_code calls are gone]"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    directory = tmp_path / "project"
    directory.mkdir()
    return directory


def _bind(project: Path, code: str = "pods = list(range(80))\nlen(pods)") -> str:
    with ScriptedOpenAI([tool_reply(call("run_code", {"code": code})), text_reply("bound")]) as model:
        result = ask(model, project, "-p", "bind them")
    assert result.status == 0, result.stderr
    return session_of(result)


def _resume(project: Path, session: str, *extra: str) -> tuple[CliResult, list[dict[str, Any]]]:
    script = [tool_reply(call("run_code", {"code": "sum(pods)"})), text_reply("done")]
    with ScriptedOpenAI(script) as model:
        result = ask(model, project, "--resume", session, "-p", "add them up", *extra)
        return result, model.requests


def _saved(session: str) -> Path:
    return default_state_dir(os.environ) / f"{session}{SUFFIX}"


def _overwrite(session: str, scope: bytes) -> None:
    """Put ``scope`` where the session's saved scope is, as the directory store writes it (the
    bytes, then a stamp)."""
    _saved(session).write_bytes(scope + new_stamp().encode())


def test_variables_survive_a_resume_in_a_new_process(project: Path) -> None:
    session = _bind(project)
    saved = _saved(session)
    assert saved.read_bytes().startswith(MAGIC)
    assert saved.stat().st_mode & 0o777 == 0o600

    result, requests = _resume(project, session)
    assert result.status == 0, result.stderr
    first_user = requests[0]["messages"][-1]["content"]
    assert "[run_code variables still in scope: pods: list[80]]" in first_user
    assert RESTARTED not in first_user
    assert json.loads(requests[1]["messages"][-1]["content"]) == sum(range(80))


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"not a scope at all", "not a saved scope"),
        (MAGIC + b'{"format": 1, "pydantic_monty": "0.0.1", "note": null, "bound": []}\n' + b"x", "0.0.1"),
    ],
    ids=["corrupt", "foreign-version"],
)
def test_a_corrupt_or_foreign_saved_scope_is_a_warning_and_an_empty_scope(
    project: Path, content: bytes, reason: str
) -> None:
    session = _bind(project)
    _overwrite(session, content)
    result, requests = _resume(project, session)
    assert result.status == 0, result.stderr
    [warning] = [json.loads(line) for line in result.stderr.splitlines() if "state.discarded" in line]
    assert warning["level"] == "warn" and reason in warning["reason"]
    assert RESTARTED in requests[0]["messages"][-1]["content"]
    assert "NameError" in requests[1]["messages"][-1]["content"]


def test_a_dump_that_does_not_load_restarts_the_sandbox_and_says_so(project: Path) -> None:
    session = _bind(project)
    header, _, _ = _saved(session).read_bytes()[len(MAGIC) :].partition(b"\n")
    _overwrite(session, MAGIC + header + b"\n" + b"\x00garbage that is no monty dump")
    result, requests = _resume(project, session)
    assert result.status == 0, result.stderr
    assert "code_mode.restore_failed" in result.stderr
    tool_result = requests[1]["messages"][-1]["content"]
    assert tool_result.startswith(RESTARTED) and "NameError" in tool_result


def test_a_state_over_the_cap_is_not_saved_and_the_largest_variables_are_named(project: Path) -> None:
    code = "big = 'x' * (2 * 1024 * 1024)\nsmall = [1, 2]\nlen(big)"
    with ScriptedOpenAI([tool_reply(call("run_code", {"code": code})), text_reply("ok")]) as model:
        result = ask(model, project, "-p", "make it big", "--code-max-state", "1MiB")
    assert result.status == 0, result.stderr
    session = session_of(result)
    [warning] = [json.loads(line) for line in result.stderr.splitlines() if "state.not_saved" in line]
    assert "over --code-max-state" in warning["reason"] and warning["largest"].startswith("big: str[2097152]")
    assert not _saved(session).exists()


def test_variables_survive_a_resume_through_redis(project: Path, tmp_path: Path) -> None:
    with redis_server(tmp_path) as redis:
        store = ("--state-store", redis.url)
        script = [tool_reply(call("run_code", {"code": "pods = list(range(80))"})), text_reply("bound")]
        with ScriptedOpenAI(script) as model:
            first = ask(model, project, "-p", "bind them", *store)
        assert first.status == 0, first.stderr
        session = session_of(first)
        assert not _saved(session).exists()  # in Redis, not in the state directory
        result, requests = _resume(project, session, *store)
    assert result.status == 0, result.stderr
    assert "pods: list[80]" in requests[0]["messages"][-1]["content"]
    assert json.loads(requests[1]["messages"][-1]["content"]) == sum(range(80))


def test_redis_that_goes_away_gives_warnings_and_an_unreachable_one_a_one_line_error(
    project: Path, tmp_path: Path
) -> None:
    def answer(body: dict[str, Any]) -> dict[str, Any]:
        if body["messages"][-1]["role"] == "tool":
            return text_reply(body["messages"][-1]["content"])
        return tool_reply(call("run_code", {"code": "x = 1\nx"}))

    with redis_server(tmp_path) as redis, ScriptedOpenAI([answer] * 4) as model:
        process = subprocess.Popen(
            [str(BIN / "asyncai"), "--jsonl", "--base-url", model.base_url, "--model", "m",
             "--mcp-stdio", SIMPLE, "--state-store", redis.url],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=project,
        )  # fmt: skip
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write('{"thread": "a", "text": "one"}\n')
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["reply"] == "1"
        redis.stop()  # Redis goes away between two runs of a live process
        process.stdin.write('{"thread": "b", "text": "two"}\n')
        process.stdin.close()
        assert json.loads(process.stdout.readline())["reply"] == "1"
        assert process.wait(timeout=60) == 0
        stderr = process.stderr.read() if process.stderr else ""
    warnings = [json.loads(line) for line in stderr.splitlines() if "state.not_saved" in line]
    assert warnings and all(w["level"] == "warn" for w in warnings)

    with ScriptedOpenAI([]) as model:
        result = ask(model, project, "-p", "hi", "--state-store", redis.url)
    assert result.status == 2
    assert result.stderr.strip().startswith(f"asyncai: cannot reach state store {redis.url}")
    assert len(result.stderr.strip().splitlines()) == 1


def test_the_state_directory_expires_old_scopes_and_left_over_temporary_files(tmp_path: Path) -> None:
    root = tmp_path / "scopes"
    root.mkdir()
    old, legacy, leftover = root / f"old{SUFFIX}", root / "legacy.scope", root / ".abc.tmp"
    fresh = root / f"fresh{SUFFIX}"
    for path in (old, legacy, leftover, fresh):
        path.write_bytes(b"x")
    day_ago = time.time() - 24 * 3600
    for path in (old, legacy, leftover):
        os.utime(path, (day_ago, day_ago))
    asyncio.run(open_store(str(root), ttl=3600).check())
    assert sorted(p.name for p in root.iterdir()) == [fresh.name]


def test_restart_in_the_chat_clears_the_saved_state_too(project: Path) -> None:
    script = [tool_reply(call("run_code", {"code": "pods = [1, 2]"})), text_reply("bound")]
    with ScriptedOpenAI(script) as model:
        chat = on_a_terminal(
            ["--base-url", model.base_url, "--model", "m", "--mcp-stdio", SIMPLE],
            "bind\n/restart\n/exit\n",
            Path(os.environ["XDG_STATE_HOME"]),  # where the resume below looks for saved REPLs
            cwd=project,
        )
    assert chat.returncode == 0, chat.stderr
    [session] = [
        line.removeprefix("session: ") for line in chat.stderr.splitlines() if line.startswith("session: ")
    ]
    resumed, requests = _resume(project, session)  # what was saved is the cleared REPL
    assert resumed.status == 0, resumed.stderr
    assert "NameError" in requests[1]["messages"][-1]["content"]
