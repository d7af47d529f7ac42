"""Start-up stays cheap: a command imports what it uses when it uses it. Parsing the command line
(``--help``, a usage error) loads no event loop, no MCP SDK, no sandbox, no HTTP client and none of
the agent; ``run-code`` runs a snippet without the agent (issue 36: ``asyncai --help`` had grown to
10x a bare interpreter's start). Structural checks, not timings: the benchmark times it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = (
    "asyncio",
    "ssl",
    "anyio",
    "mcp",
    "mcp_types",
    "httpx2",
    "pydantic",
    "pydantic_monty",
    "numpy",
    "bm25s",
    "uvicorn",
    "starlette",
    "rich",
    "redis",
    "asyncai.approvals.gate",
    "asyncai.backend.openai",
    "asyncai.code_mode.engine",
    "asyncai.runtime",
    "asyncai.state",
    "asyncai.transcripts",
)
"""What parsing arguments and printing help never needs."""

RUN_ONLY = (
    "logging",
    "asyncai.log",
    "asyncai.telemetry.export",
    "asyncai.tools.mcp.specs",
    "asyncai.tools.types",
    "asyncai.code_mode.limits",
)
"""What a command loads once it runs, never to print its help: logging and tracing, the server
specs, the tool types, the limits (their dataclasses alone took a tenth of ``--help``'s time)."""

AGENT = ("asyncai.backend.openai", "asyncai.cli.chat", "asyncai.runtime", "asyncai.transcripts", "rich")
"""What only the agent (a model, a chat, sessions) needs."""

PROBE = """
import json, sys
from asyncai.cli.main import main, parse_settings
if sys.argv[1:] == ["parse"]:
    from asyncai.cli.settings import server_requests
    for argv in (["--model", "m", "-p", "hi"], ["serve-mcp", "--http", "127.0.0.1:0"], ["run-code", "-c", "1"]):
        # How servers' questions are answered is set up before the servers spawn: without the SDK.
        server_requests(parse_settings(argv))
else:
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(json.dumps(sorted(sys.modules)))
"""


def imported_by(*argv: str) -> set[str]:
    """The modules a fresh interpreter has imported after ``asyncai ARGV`` (or, for ``parse``,
    after parsing three command lines)."""
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def loaded(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(f"{p}.") for p in packages))


def test_parsing_any_command_and_setting_up_its_answers_import_none_of_the_heavy_libraries() -> None:
    assert loaded(imported_by("parse"), HEAVY) == []


@pytest.mark.parametrize("command", ["", "tools", "run-code", "sessions", "serve-mcp", "mcp"])
def test_help_loads_nothing_heavy(command: str) -> None:
    modules = imported_by(*command.split(), "--help")
    assert "asyncai.cli.agent_command" in modules, "the probe ran the real entry point"
    assert loaded(modules, HEAVY + RUN_ONLY) == []


def test_run_code_runs_without_loading_the_agent() -> None:
    modules = imported_by("run-code", "-c", "6 * 7")
    assert "pydantic_monty" in modules, "the snippet ran in the sandbox"
    assert loaded(modules, AGENT) == []


@pytest.mark.parametrize("package", ["asyncai.tools", "asyncai.code_mode", "asyncai.backend"])
def test_every_name_a_package_exports_imports_on_first_use(package: str) -> None:
    code = f"import {package} as p; print(sorted(n for n in p.__all__ if getattr(p, n) is None))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_usage_error_exits_2_in_one_line_though_its_class_was_never_imported() -> None:
    from asyncai.cli.main import _bad_input
    from asyncai.code_mode import SandboxConfigError
    from asyncai.tools import ConfigError, ServerStartError

    assert {ConfigError, ServerStartError, SandboxConfigError} <= set(_bad_input())
    done = subprocess.run(
        [sys.executable, "-m", "asyncai.cli.main", "--mcp-config", "/nonexistent/asyncai.json", "tools"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("asyncai: ") and len(done.stderr.strip().splitlines()) == 1


def test_the_library_names_still_import_on_first_use() -> None:
    from asyncai.backend import OpenAiCompatibleBackend
    from asyncai.code_mode import CodeMode
    from asyncai.tools import McpServers, ServerSummary

    assert {c.__name__ for c in (OpenAiCompatibleBackend, CodeMode, McpServers, ServerSummary)} == {
        "OpenAiCompatibleBackend",
        "CodeMode",
        "McpServers",
        "ServerSummary",
    }
