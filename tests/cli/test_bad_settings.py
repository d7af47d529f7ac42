"""Wrong settings from flags, the config file or named files: one line on stderr and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import asyncai
from tests.cli.helpers import assert_one_line_usage_error
from tests.fakes.openai_server import ScriptedOpenAI, text_reply

NOT_UTF8 = b"x = '\xff\xfe'\n"


@pytest.mark.parametrize(
    ("toml", "option"),
    [
        ('code_timeout = "abc"', "--code-timeout"),
        ("code_wall_timeout = true", "--code-wall-timeout"),
        ("tool_timeout = [1]", "--tool-timeout"),
        ('code_max_calls = "x"', "--code-max-calls"),
        ("code_max_result = 2.5", "--code-max-result"),
        ('code_preamble = ["a.py", "b.py"]', "--code-preamble"),
        ('code_sandbox = ["pool"]', "--code-sandbox"),
        ('code_sandbox = "docker"', "--code-sandbox"),
        ("mcp_stdio = [1, 2]", "--mcp-stdio"),
        ("mcp_config = 7", "--mcp-config"),
        ('verbose = "yes"', "--verbose"),
    ],
)
def test_wrong_types_in_the_config_file_for_run_code(tmp_path: Path, toml: str, option: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text(toml + "\n")
    assert_one_line_usage_error(asyncai("run-code", "--config", str(config), "-c", "1"), option)


@pytest.mark.parametrize(
    ("toml", "option"),
    [
        ('max_rounds = "x"', "--max-rounds"),
        ("max_rounds = 0", "--max-rounds"),
        ('model = ["a", "b"]', "--model"),
        ("base_url = 8080", "--base-url"),
        ('stream = "yes"', "--stream"),
        ("system = ['be brief']", "--system"),
    ],
)
def test_wrong_types_in_the_config_file_for_the_agent(tmp_path: Path, toml: str, option: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'model = "m"\n{toml}\n' if not toml.startswith("model") else toml + "\n")
    assert_one_line_usage_error(asyncai("--config", str(config), "-p", "hi"), option)


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--code-timeout", "inf"),
        ("--code-timeout", "nan"),
        ("--code-timeout", "-1"),
        ("--code-wall-timeout", "nan"),
        ("--tool-timeout", "inf"),
    ],
)
def test_limits_must_be_finite_and_positive(flag: str, value: str) -> None:
    assert_one_line_usage_error(asyncai("run-code", f"{flag}={value}", "-c", "1"), flag, "positive")


def test_unreadable_or_non_utf8_snippet_file(tmp_path: Path) -> None:
    binary = tmp_path / "snippet.py"
    binary.write_bytes(NOT_UTF8)
    assert_one_line_usage_error(asyncai("run-code", str(binary)), str(binary), "not UTF-8")
    assert_one_line_usage_error(asyncai("run-code", str(tmp_path)), str(tmp_path), "Is a directory")


def test_non_utf8_code_preamble(tmp_path: Path) -> None:
    preamble = tmp_path / "preamble.py"
    preamble.write_bytes(NOT_UTF8)
    result = asyncai("run-code", "--code-preamble", str(preamble), "-c", "1")
    assert_one_line_usage_error(result, "--code-preamble", "not UTF-8")


def test_non_utf8_or_unreadable_system_file(tmp_path: Path) -> None:
    system = tmp_path / "system.txt"
    system.write_bytes(NOT_UTF8)
    binary = asyncai("--model", "m", "--system-file", str(system), "-p", "hi")
    assert_one_line_usage_error(binary, "--system-file", "not UTF-8")
    missing = asyncai("--model", "m", "--system-file", str(tmp_path / "nope.txt"), "-p", "hi")
    assert_one_line_usage_error(missing, "--system-file", "No such file")


def test_system_file_is_the_system_message(tmp_path: Path) -> None:
    system = tmp_path / "system.txt"
    system.write_text("Answer in French. ✓\n", encoding="utf-8")
    with ScriptedOpenAI([text_reply("bonjour")]) as model:
        result = asyncai(
            "--base-url", model.base_url, "--model", "m", "--system-file", str(system), "-p", "hi"
        )
        requests = model.requests
    assert (result.status, result.stdout) == (0, "bonjour\n"), result.stderr
    assert requests[0]["messages"][0] == {"role": "system", "content": "Answer in French. ✓\n"}


def test_http_headers_that_are_not_an_object(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    entry = {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": ["Authorization: x"]}
    config.write_text(json.dumps({"mcpServers": {"web": entry}}))
    assert_one_line_usage_error(asyncai("tools", "--mcp-config", str(config)), '"headers" must be an object')


def test_non_utf8_or_invalid_config_file(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_bytes(b'model = "\xff"\n')
    assert_one_line_usage_error(asyncai("--config", str(config), "-p", "x"), "config file", "not UTF-8")
    config.write_text("model = \n")
    assert_one_line_usage_error(asyncai("--config", str(config), "-p", "x"), "config file", "Invalid value")
