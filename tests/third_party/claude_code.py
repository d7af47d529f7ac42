"""The real Claude Code CLI as an MCP client: ``@anthropic-ai/claude-code``, pinned in
``package.json`` and installed by ``make``, run in print mode against a scripted Messages API on
loopback (``tests.fakes.anthropic_server``) with the MCP servers of an ``--mcp-config`` file.

Nothing leaves the machine: its home and config directory are a temporary directory, its
non-essential traffic and auto-updater are off, and its model is the scripted one.
"""

from __future__ import annotations

import json
import platform
import subprocess
from pathlib import Path
from typing import Any

from tests.fakes.anthropic_server import ScriptedAnthropic
from tests.third_party import _missing

PACKAGES = Path(__file__).parent / "node_modules" / "@anthropic-ai"
MCP_SERVER = "asyncai"
"""The name the servers are configured under: Claude Code calls their tools ``mcp__asyncai__*``."""
RUN_CODE_TOOL = f"mcp__{MCP_SERVER}__run_code"
CUT_MARK = "[truncated]"
"""What Claude Code appends where it cut a description or a server's instructions."""


def claude_binary() -> Path:
    """The CLI's native binary (the npm package's platform dependency), or a skip saying why."""
    arch = {"x86_64": "x64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    binary = PACKAGES / f"claude-code-linux-{arch}" / "claude"
    if not binary.exists():
        _missing("npm @anthropic-ai/claude-code", "run `make test`, which installs it")
    return binary


def claude_env(home: Path, model: ScriptedAnthropic, path: str) -> dict[str, str]:
    """The environment the CLI runs in: ``home`` its own, ``model`` its Messages API, no traffic
    off the machine."""
    return {
        "PATH": path,
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_BASE_URL": model.base_url,
        "ANTHROPIC_API_KEY": "sk-ant-scripted",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }


def run_claude(
    model: ScriptedAnthropic, command: list[str], home: Path, prompt: str = "go", timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``claude -p PROMPT`` with one MCP server, ``command``, allowed to run ``run_code``."""
    config = home / "mcp.json"
    server: dict[str, Any] = {"command": command[0], "args": command[1:]}
    config.write_text(json.dumps({"mcpServers": {MCP_SERVER: server}}))
    env = claude_env(home, model, "/usr/bin:/bin")
    return subprocess.run(
        [str(claude_binary()), "-p", prompt, "--mcp-config", str(config), "--allowedTools", RUN_CODE_TOOL],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def tool_description(request: dict[str, Any], name: str = RUN_CODE_TOOL) -> str:
    """The description a request gave its model for the tool ``name``."""
    [description] = [tool.get("description", "") for tool in request["tools"] if tool["name"] == name]
    return str(description)


def server_instructions(request: dict[str, Any]) -> str | None:
    """The section of a request's prompt that holds the MCP servers' instructions, if it has one."""
    texts = [block["text"] for block in request.get("system") or [] if isinstance(block, dict)]
    for message in request["messages"]:
        content = message["content"]
        texts += [content] if isinstance(content, str) else [b.get("text", "") for b in content]
    found = [
        text[text.index("# MCP Server Instructions") :]
        for text in texts
        if "# MCP Server Instructions" in text
    ]
    return found[-1] if found else None


def run_code_results(request: dict[str, Any], name: str = RUN_CODE_TOOL) -> list[dict[str, Any]]:
    """The ``tool_result`` blocks a request sends for its earlier ``run_code`` calls (the tool
    ``name``), in order."""
    calls: list[str] = []
    results: dict[str, dict[str, Any]] = {}
    for message in request["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_use" and block["name"] == name:
                calls.append(block["id"])
            elif block.get("type") == "tool_result":
                results[block["tool_use_id"]] = block
    return [results[call] for call in calls]


def tool_result_text(block: dict[str, Any]) -> str:
    """A ``tool_result`` block's content as its model reads it."""
    content = block["content"]
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)
