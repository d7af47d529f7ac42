"""``asyncai tools`` and ``asyncai run-code`` as a user runs them."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from tests.cli.conftest import SIMPLE, asyncai
from tests.fakes.servers import broken_server_config, resource_server, server_command
from tests.third_party import npm_server


def test_tools_prints_the_routed_table() -> None:
    result = asyncai("tools", "--mcp-stdio", SIMPLE)
    assert result.status == 0, result.stderr
    header, row, summary = result.stdout.splitlines()
    assert header.split() == ["TOOL", "PYTHON", "NAME", "SERVER", "ACCESS", "OUTPUT", "SCHEMA"]
    assert row.split() == ["http_get", "http_get", "asyncai-mcp-simple", "read-only", "yes"]
    assert summary == "server asyncai-mcp-simple: 1 tool, 0 resources, 0 prompts"


def test_tools_shows_python_names_task_only_tools_and_what_each_server_offers() -> None:
    result = asyncai("tools", "--mcp-stdio", "everything=" + npm_server("everything", "stdio"))
    assert result.status == 0, result.stderr
    rows = {
        line.split()[0]: line.split()
        for line in result.stdout.splitlines()[1:]
        if not line.startswith("server ")
    }
    assert rows["get-env"][:3] == ["get-env", "get_env", "everything"]
    assert rows["trigger-long-running-operation"][1] == "trigger_long_running_operation"
    task_only = rows["simulate-research-query"]
    assert task_only[1] == "-" and "(task-only: not callable from snippets)" in " ".join(task_only)
    summary = result.stdout.splitlines()[-1]
    # 13, and the ones it offers a client that declares elicitation (2); no roots without --root
    assert summary.startswith("server everything: 15 tools, 7 resources, ") and summary.endswith(" prompts")


def test_a_server_with_only_resources_and_prompts_is_configured() -> None:
    result = asyncai("tools", "--mcp-stdio", "docs=" + resource_server("docs"))
    assert result.status == 0, result.stderr
    assert result.stdout == "server docs: 0 tools, 7 resources, 1 prompt\n"


def test_tools_without_servers_says_how_to_configure_them() -> None:
    result = asyncai("tools")
    assert result.status == 0, result.stderr
    assert result.stdout == "(no MCP servers: configure them with --mcp-stdio, --mcp-http or --mcp-config)\n"


def _claude_config(tmp_path: Path, good: bool) -> Path:
    simple = {"simple": {"command": SIMPLE}} if good else None
    return broken_server_config(tmp_path / "claude_desktop_config.json", simple, bom=True)


def test_a_broken_server_is_a_warning_while_the_others_serve(tmp_path: Path) -> None:
    result = asyncai("tools", "--mcp-config", str(_claude_config(tmp_path, good=True)))
    assert result.status == 0, result.stderr
    assert "http_get" in result.stdout and "server simple: 1 tool, 0 resources, 0 prompts" in result.stdout
    assert "server broken: not started: cannot start MCP server 'broken'" in result.stdout
    assert "never-started" not in result.stdout + result.stderr and "server off" not in result.stdout
    [warning] = [line for line in result.log() if line["event"] == "mcp.server_start_failed"]
    assert warning["level"] == "warn" and warning["server"] == "broken" and "no token" in warning["error"]


def test_when_no_server_starts_the_exit_status_is_2(tmp_path: Path) -> None:
    result = asyncai("tools", "--mcp-config", str(_claude_config(tmp_path, good=False)))
    assert result.status == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(
        "asyncai: cannot start MCP server 'broken'"
    )


def test_the_api_key_does_not_reach_servers(tmp_path: Path) -> None:
    key = "sk-asyncai-cli-test-0123456789"
    snippet = (
        "env = await get_env()\n[k for k, v in env.items() if 'ASYNCAI_TEST' in k or v == " + repr(key) + "]"
    )
    command = "everything=" + npm_server("everything", "stdio")
    env = {"OPENAI_API_KEY": key, "ASYNCAI_TEST_COPY": key, "ASYNCAI_TEST_PLAIN": "kept"}
    result = asyncai("run-code", "--mcp-stdio", command, "-c", snippet, env=env)
    assert (result.status, result.stdout) == (0, '["ASYNCAI_TEST_PLAIN"]\n'), result.stderr
    config = tmp_path / "mcp.json"
    argv = shlex.split(npm_server("everything", "stdio"))
    entry = {"command": argv[0], "args": argv[1:], "env": {"OPENAI_API_KEY": "${OPENAI_API_KEY}"}}
    config.write_text(json.dumps({"mcpServers": {"everything": entry}}))
    named = asyncai(
        "run-code", "--mcp-config", str(config), "-c", "(await get_env())['OPENAI_API_KEY']", env=env
    )
    assert (named.status, named.stdout) == (0, key + "\n"), named.stderr


def test_name_equals_command_and_a_command_starting_with_env() -> None:
    plain = shlex.join(["env", "ASYNCAI_TEST_FLAG=1", sys.executable, "-m", "asyncai.servers.simple"])
    result = asyncai("tools", "--mcp-stdio", "web=" + SIMPLE, "--mcp-stdio", plain)
    assert result.status == 0, result.stderr
    assert "server web: 1 tool" in result.stdout
    assert "duplicate: http_get from " in result.stdout, "the env-prefixed command started too"


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
        line.split()[0]: line.split()[2]
        for line in result.stdout.splitlines()[1:]
        if not line.startswith(("dup", "server "))
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
    assert result.stdout.splitlines() == ["20", "42"]  # a snippet ending in an assignment returns its value
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


def test_mutations_gate_applies_to_run_code_and_the_agent_too() -> None:
    """The one gate serve-mcp uses: deny refuses, ask refuses when nobody can be asked."""
    server = f"{sys.executable} {Path(__file__).parent.parent / 'fakes' / 'mcp_test_server.py'}"
    code = 'try:\n    await write_note(text="x")\nexcept PermissionError as e:\n    r = str(e)\nr'
    denied = asyncai("run-code", "--mcp-stdio", server, "--mutations", "deny", "-c", code)
    asked = asyncai("run-code", "--mcp-stdio", server, "--mutations", "ask", "-c", code)
    reads = asyncai("run-code", "--mcp-stdio", server, "--mutations", "deny", "-c", 'await echo(text="ok")')
    assert denied.stdout.startswith("write_note() was not run: mutating calls are denied here")
    assert asked.stdout.startswith("write_note() was not run: mutating calls need approval (--mutations ask)")
    assert reads.stdout.startswith("ok")
    refused = [json.loads(line) for line in denied.stderr.splitlines() if '"mcp.tool_refused"' in line]
    assert [(e["tool"], e["level"]) for e in refused] == [("write_note", "warn")]


def test_no_type_check_lets_a_wrong_call_reach_the_server() -> None:
    code = "await echo(text=1)"
    checked = asyncai("run-code", "--mcp-stdio", server_command("t"), "-c", code)
    assert checked.status == 1 and "the type check found mistakes" in checked.stdout
    assert "`text` must be str, not 1" in checked.stdout
    unchecked = asyncai("run-code", "--no-type-check", "--mcp-stdio", server_command("t"), "-c", code)
    assert unchecked.status == 1 and "the type check" not in unchecked.stdout
    assert "validation error for echoArguments" in unchecked.stdout  # the server's own answer
