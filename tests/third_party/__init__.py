"""Third-party MCP servers the tests run against: npm packages installed by ``make`` into
``tests/third_party/node_modules`` (pinned by ``package-lock.json``) and PyPI packages installed
as dev dependencies. Nothing is downloaded at test time."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

import pytest

NODE_BIN = Path(__file__).parent / "node_modules" / ".bin"
PYTHON_BIN = Path(sys.executable).parent


def _missing(what: str, how: str) -> None:
    message = f"{what} is not installed ({how})"
    if os.environ.get("CI"):
        pytest.fail(message)  # CI installs everything: a missing server is a broken set-up, not a skip
    pytest.skip(message)


def npm_server(package: str, *args: str) -> str:
    """The command line of ``@modelcontextprotocol/server-<package>`` with ``args``."""
    binary = NODE_BIN / f"mcp-server-{package}"
    if not binary.exists():
        _missing(f"npm @modelcontextprotocol/server-{package}", "run `make test`, which installs it")
    return shlex.join([str(binary), *args])


def pypi_server(name: str, *args: str) -> str:
    """The command line of a PyPI MCP server installed in this environment (a dev dependency)."""
    local = PYTHON_BIN / name
    found = str(local) if local.exists() else shutil.which(name)
    if found is None:
        _missing(name, "it is a dev dependency: pip install -e '.[dev]'")
    return shlex.join([str(found), *args])
