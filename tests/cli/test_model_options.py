"""The agent with what a small local model sends (issue 35): its calls written as text run, the
model controls (``--temperature``, ``--max-tokens``, ``--request-timeout`` and their config keys),
and the one-line errors for wrong values."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.cli.conftest import SIMPLE, asyncai
from tests.cli.helpers import assert_one_line_usage_error
from tests.fakes.openai_server import ScriptedOpenAI, text_reply


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_a_call_written_as_fenced_json_runs_instead_of_being_printed(http_url: str, stream: bool) -> None:
    # What llama-server sent for Qwen2.5-Coder-1.5B: the call as a ```json block, tool_calls empty.
    code = f"r = await http_get(url='{http_url}/data')\\nlen(json.loads(r['body'])['items'])"
    fenced = '```json\n{"name": "run_code", "arguments": {"code": "' + code + '"}}\n```'
    script = [text_reply(fenced, content_chunk=4), text_reply("There are 200 items.")]
    with ScriptedOpenAI(script) as model:
        flags = ["--stream"] if stream else []
        result = asyncai(
            "--mcp-stdio", SIMPLE, "--base-url", model.base_url, "--model", "m", *flags, "-v", "-p", "count"
        )  # fmt: skip
        requests = model.requests
    assert (result.status, result.stdout) == (0, "There are 200 items.\n"), result.stderr
    assert requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "200"}
    summary = next(line for line in result.log() if line["event"] == "model.turn_summary")
    assert (summary["run_code_calls"], summary["nested_calls"], summary["repaired"]) == (1, 1, 1)
    assert summary["repairs"] == {"fenced_json": 1}


def test_temperature_and_max_tokens_from_flags_and_from_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('model = "m"\ntemperature = 0.7\nmax_tokens = 100\nrequest_timeout = 60\n')
    with ScriptedOpenAI([text_reply("a"), text_reply("b"), text_reply("c")]) as model:
        flags = asyncai(
            "--base-url",
            model.base_url,
            "--model",
            "m",
            "--temperature",
            "0",
            "--max-tokens",
            "256",
            "-p",
            "q",
        )
        from_file = asyncai("--base-url", model.base_url, "--config", str(config), "-p", "q")
        neither = asyncai("--base-url", model.base_url, "--model", "m", "-p", "q")
        requests = model.requests
    assert [r.status for r in (flags, from_file, neither)] == [0, 0, 0], from_file.stderr
    assert [(body.get("temperature"), body.get("max_tokens")) for body in requests] == [
        (0.0, 256),
        (0.7, 100),
        (0.2, 512),  # neither set: the eval's settings, as --help says
    ]


@pytest.mark.parametrize("where", ["flag", "config"])
def test_a_model_that_does_not_answer_in_time_names_request_timeout(tmp_path: Path, where: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text('model = "m"\nrequest_timeout = 0.5\n')
    setting = ["--request-timeout", "0.5"] if where == "flag" else ["--config", str(config)]
    held = text_reply("late", hold_at=1, holding=threading.Event(), release=threading.Event())
    try:
        with ScriptedOpenAI([held]) as model:
            result = asyncai("--base-url", model.base_url, "--model", "m", "--stream", *setting, "-p", "q")
            held["release"].set()
    finally:
        held["release"].set()
    assert result.status == 1, result.stderr
    [error] = [line for line in result.stderr.splitlines() if line.startswith("asyncai: ")]
    assert "did not answer within 0.5 s" in error and error.endswith("raise --request-timeout)")


@pytest.mark.parametrize(
    ("flag", "value", "words"),
    [
        ("--temperature", "-0.5", "0 or more"),
        ("--temperature", "nan", "0 or more"),
        ("--max-tokens", "0", "positive integer"),
        ("--request-timeout", "0", "positive"),
        ("--request-timeout", "inf", "positive"),
    ],
)
def test_wrong_model_option_values_are_one_line_errors(flag: str, value: str, words: str) -> None:
    assert_one_line_usage_error(asyncai("--model", "m", f"{flag}={value}", "-p", "q"), flag, words)


@pytest.mark.parametrize(
    ("toml", "option"),
    [
        ("temperature = -1", "--temperature"),
        ('max_tokens = "many"', "--max-tokens"),
        ("request_timeout = false", "--request-timeout"),
    ],
)
def test_wrong_model_option_values_in_the_config_file(tmp_path: Path, toml: str, option: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'model = "m"\n{toml}\n')
    assert_one_line_usage_error(asyncai("--config", str(config), "-p", "q"), option)
