"""``asyncai tools`` and ``asyncai run-code`` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import SIMPLE, asyncai
from tests.fakes.servers import server_command


def test_tools_prints_the_routed_table() -> None:
    result = asyncai("tools", "--mcp-stdio", SIMPLE)
    assert result.status == 0, result.stderr
    header, row = result.stdout.splitlines()[:2]
    assert header.split() == ["TOOL", "SERVER", "ACCESS", "OUTPUT", "SCHEMA"]
    assert row.split() == ["http_get", "asyncai-mcp-simple", "read-only", "yes"]


def test_tools_with_a_config_whose_names_collide(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    first, second = server_command("first").split(" ", 1), server_command("second").split(" ", 1)
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "simple": {"command": SIMPLE},
                    "first": {"command": first[0], "args": first[1].split()},
                    "second": {"command": second[0], "args": second[1].split()},
                }
            }
        )
    )
    result = asyncai("tools", "--mcp-config", str(config))
    assert result.status == 0, result.stderr
    rows = {
        line.split()[0]: line.split()[1]
        for line in result.stdout.splitlines()[1:]
        if not line.startswith("dup")
    }
    assert rows["http_get"] == "simple" and rows["whoami"] == "first" and rows["write_note"] == "first"
    assert "duplicate: whoami from second ignored (served by first)" in result.stdout
    warnings = [line for line in result.log() if line["event"] == "mcp.duplicate_tool"]
    assert {line["tool"] for line in warnings} >= {"whoami", "echo"}
    assert all(line["level"] == "warn" for line in warnings)


def test_missing_server_command_is_one_line_and_exit_2() -> None:
    result = asyncai("tools", "--mcp-stdio", "/nonexistent/no-such-mcp-server")
    assert result.status == 2
    assert result.stderr.count("\n") == 1
    assert (
        result.stderr.startswith("asyncai: cannot start MCP server")
        and "/nonexistent/no-such-mcp-server" in result.stderr
    )


def test_bad_config_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = asyncai("tools", "--mcp-config", str(bad))
    assert result.status == 2 and result.stderr.count("\n") == 1 and "not valid JSON" in result.stderr


def test_run_code_prints_what_the_model_would_get(http_url: str) -> None:
    code = (
        f"r = await http_get(url='{http_url}/things')\n"
        "data = json.loads(r['body'])\n"
        "[r['status'], len(data['items'])]"
    )
    result = asyncai("run-code", "--mcp-stdio", SIMPLE, "-c", code)
    assert (result.status, result.stdout) == (0, "[200,200]\n"), result.stderr


def test_run_code_keeps_state_between_snippets_and_reads_stdin() -> None:
    result = asyncai("run-code", "-c", "x = 20", "-c", "x * 2 + 2")
    assert result.stdout.splitlines() == ["(no output; the last expression was None)", "42"]
    piped = asyncai("run-code", stdin="print('hi')\n7\n")
    assert (piped.status, piped.stdout) == (0, '{"output":"hi\\n","result":7}\n')


def test_run_code_error_result_exits_1() -> None:
    result = asyncai("run-code", "-c", "1 / 0")
    assert result.status == 1
    assert "ZeroDivisionError" in result.stdout


def test_run_code_catalog_prints_the_run_code_description() -> None:
    result = asyncai("run-code", "--mcp-stdio", SIMPLE, "--catalog")
    assert result.status == 0
    assert "async def http_get(*, url: str, headers: dict[str, Any] | None = None" in result.stdout
    assert "Returns: {" in result.stdout


def test_code_limits_apply_from_flags() -> None:
    result = asyncai("run-code", "--code-max-memory", "64MiB", "-c", "x = 'a' * (200 * 1024 * 1024)")
    assert result.status == 1 and "MemoryError" in result.stdout and "67108864" in result.stdout
    small = asyncai("run-code", "--code-max-result", "10", "-c", "'x' * 11")
    assert small.status == 1 and "over the 10-char limit" in small.stdout


def test_in_process_sandbox_is_explained_in_one_line() -> None:
    result = asyncai("run-code", "--code-sandbox", "in-process", "-c", "1")
    assert result.status == 2
    assert result.stderr.count("\n") == 1 and "not available in Python" in result.stderr


def test_bad_memory_size_is_a_usage_error() -> None:
    result = asyncai("run-code", "--code-max-memory", "lots", "-c", "1")
    assert result.status == 2 and "bad size" in result.stderr
