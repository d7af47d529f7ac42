"""The agent command against a scripted OpenAI-compatible server, the bundled http_get server and a
loopback HTTP server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from asyncai.backend import FINAL_ROUND_INSTRUCTION
from asyncai.transcripts import is_session_id
from tests.cli.conftest import SIMPLE, asyncai
from tests.fakes.openai_server import ScriptedOpenAI, call, text_reply, tool_reply


def _fetch_code(url: str) -> str:
    return f"r = await http_get(url='{url}/data')\nlen(json.loads(r['body'])['items'])"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_one_shot_runs_http_get_through_run_code(http_url: str, stream: bool) -> None:
    script = [
        tool_reply(call("run_code", {"code": _fetch_code(http_url)})),
        text_reply("There are 200 items."),
    ]
    with ScriptedOpenAI(script) as model:
        flags = ["--stream"] if stream else []
        result = asyncai(
            "--mcp-stdio", SIMPLE, "--base-url", model.base_url, "--model", "m", *flags, "-p", "count"
        )
        requests = model.requests
    assert (result.status, result.stdout) == (0, "There are 200 items.\n"), result.stderr
    assert [[tool["function"]["name"] for tool in body["tools"]] for body in requests] == [
        ["run_code"],
        ["run_code"],
    ]
    assert all(body.get("stream", False) is stream for body in requests)
    tool_message = requests[1]["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["content"] == "200"


def test_round_budget_forces_a_final_round_without_tools(http_url: str) -> None:
    explore = tool_reply(call("run_code", {"code": "1 + 1"}))
    script = [explore, explore, text_reply("Two, from what I found.")]
    with ScriptedOpenAI(script) as model:
        result = asyncai("--base-url", model.base_url, "--model", "m", "--max-rounds", "3", "-v", "-p", "add")
        requests = model.requests
    assert result.status == 0 and result.stdout == "Two, from what I found.\n"
    assert ["tools" in body for body in requests] == [True, True, False]
    assert requests[-1]["messages"][-1]["content"] == FINAL_ROUND_INSTRUCTION
    summary = next(line for line in result.log() if line["event"] == "model.turn_summary")
    assert summary["final_round_forced"] is True and summary["rounds"] == 3


def test_turn_summary_counts_bytes_in_and_out(http_url: str) -> None:
    script = [tool_reply(call("run_code", {"code": _fetch_code(http_url)})), text_reply("done")]
    with ScriptedOpenAI(script) as model:
        result = asyncai(
            "--mcp-stdio", SIMPLE, "--base-url", model.base_url, "--model", "m", "-v", "-p", "go"
        )
    log = result.log()
    nested = next(line for line in log if line["event"] == "mcp.tool_result")
    summary = next(line for line in log if line["event"] == "model.turn_summary")
    assert summary["run_code_calls"] == 1 and summary["nested_calls"] == 1
    assert summary["bytes_in"] == nested["bytes"] > 4000
    assert summary["bytes_out"] == len("200")
    assert summary["final_round_forced"] is False


def test_malformed_arguments_become_an_error_the_model_can_retry() -> None:
    script = [
        tool_reply(call("run_code", "this is not json")),
        tool_reply(call("run_code", {"code": "6 * 7"})),
        text_reply("42"),
    ]
    with ScriptedOpenAI(script) as model:
        result = asyncai("--base-url", model.base_url, "--model", "m", "-p", "compute")
        requests = model.requests
    assert result.status == 0 and result.stdout == "42\n"
    first_result = requests[1]["messages"][-1]
    assert first_result["role"] == "tool" and "not a JSON object" in first_result["content"]
    assert requests[2]["messages"][-1]["content"] == "42"


def test_jsonl_threads_keep_their_variables_and_replies_name_their_thread() -> None:
    script = [
        tool_reply(call("run_code", {"code": "x = 41"})),
        text_reply("stored"),
        tool_reply(call("run_code", {"code": "x + 1"})),
        text_reply("x+1 is 42"),
    ]
    lines = [{"thread": "t1", "text": "store 41"}, {"thread": "t1", "text": "add one"}]
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    with ScriptedOpenAI(script) as model:
        result = asyncai("--base-url", model.base_url, "--model", "m", "--jsonl", stdin=stdin)
        requests = model.requests
    assert result.status == 0, result.stderr
    replies = [json.loads(line) for line in result.stdout.splitlines()]
    session = replies[0]["session"]
    assert is_session_id(session)
    assert replies == [
        {"thread": "t1", "reply": "stored", "run": 1, "session": session},
        {"thread": "t1", "reply": "x+1 is 42", "run": 2, "session": session},
    ]
    assert requests[3]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": requests[3]["messages"][-2]["tool_calls"][0]["id"],
        "content": "42",
    }
    second_run_user = [m for m in requests[2]["messages"] if m["role"] == "user"][-1]["content"]
    assert "[run_code variables still in scope: x: int]" in second_run_user


def test_jsonl_bad_line_is_answered_not_fatal() -> None:
    with ScriptedOpenAI([text_reply("hello")]) as model:
        result = asyncai(
            "--base-url",
            model.base_url,
            "--model",
            "m",
            "--jsonl",
            stdin='nope\n{"thread": "a", "text": "hi"}\n',
        )
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[0]["error"].startswith("not JSON")
    assert lines[1] == {"thread": "a", "reply": "hello", "run": 1, "session": lines[1]["session"]}
    assert result.status == 1


def test_model_server_down_is_one_line_and_exit_1() -> None:
    result = asyncai("--base-url", "http://127.0.0.1:9/v1", "--model", "m", "-p", "hello")
    assert result.status == 1
    assert result.stdout == ""
    error, session = result.stderr.splitlines()
    assert "http://127.0.0.1:9/v1/chat/completions" in error and "--base-url" in error
    assert session.startswith("session: ") and is_session_id(session.removeprefix("session: "))


def test_missing_model_is_a_usage_error() -> None:
    result = asyncai("-p", "hello")
    assert result.status == 2 and "--model" in result.stderr


def test_prompt_from_piped_stdin_and_env_settings() -> None:
    with ScriptedOpenAI([text_reply("piped ok")]) as model:
        env = {"OPENAI_BASE_URL": model.base_url, "ASYNCAI_MODEL": "env-model"}
        result = asyncai(stdin="a question from a pipe\n", env=env)
        requests = model.requests
    assert result.stdout == "piped ok\n"
    assert requests[0]["model"] == "env-model"
    assert requests[0]["messages"][-1]["content"].startswith("a question from a pipe")


def test_flags_win_over_env_and_env_over_config_file(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    with ScriptedOpenAI([text_reply("a"), text_reply("b")]) as model:
        config.write_text(f'base_url = "{model.base_url}"\nmodel = "file-model"\nmax_rounds = 2\n')
        from_file = asyncai("--config", str(config), "-p", "x")
        from_flag = asyncai(
            "--config", str(config), "--model", "flag-model", "-p", "x", env={"ASYNCAI_MODEL": "env-model"}
        )
        requests = model.requests
    assert from_file.status == 0 and from_flag.status == 0
    assert [body["model"] for body in requests] == ["file-model", "flag-model"]
