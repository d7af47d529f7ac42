"""Start-up stays cheap: parsing the command line (``--help``, a usage error) never imports the
heavy libraries a run needs. A structural check, not a timing: the benchmark times it."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("mcp", "mcp_types", "httpx2", "pydantic_monty", "numpy", "bm25s", "uvicorn", "starlette")

PROBE = """
import sys
from asyncai.cli.main import parse_settings
for argv in (["--model", "m", "-p", "hi"], ["serve-mcp", "--http", "127.0.0.1:0"], ["run-code", "-c", "1"]):
    parse_settings(argv)
print(" ".join(sorted(name for name in {heavy!r} if name in sys.modules)))
"""


def test_parsing_any_command_imports_none_of_the_heavy_libraries() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY)], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == ""


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
