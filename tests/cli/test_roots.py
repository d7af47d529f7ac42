"""Roots only when the user names them (issue 34): npm ``mcp-server-filesystem`` replaces the
directories on its own command line with its client's roots, so a client offering the working
directory by default would widen (run from ``/``) or move (run from a project) what it may touch.

Without ``--root`` asyncai declares no roots capability, through every door (``run-code``, the
agent, ``serve-mcp``): the server keeps the directory its command line gave it. With ``--root``
(or the ``root`` config key) the server is given exactly the named directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp.types as mt
import pytest
from mcp import Client
from mcp.client.stdio import stdio_client

from tests.cli.conftest import asyncai
from tests.fakes.openai_server import ScriptedOpenAI, call, text_reply, tool_reply
from tests.serve.helpers import stdio_params
from tests.third_party import npm_server

DENIED = "denied: Access denied - path outside allowed directories"


def probe(first: Path, second: Path) -> str:
    """A snippet: the server's allowed directories, then reading one file in each of two directories
    (each read's text, or why it was denied)."""
    return f"""
listed = await list_allowed_directories()
try:
    first = (await read_text_file(path={str(first / "note.txt")!r}))["content"]
except RuntimeError as exc:
    first = "denied: " + str(exc)
try:
    second = (await read_text_file(path={str(second / "note.txt")!r}))["content"]
except RuntimeError as exc:
    second = "denied: " + str(exc)
{{"allowed": listed["content"].splitlines()[1:], "first": first, "second": second}}
"""


def directories(tmp_path: Path, *names: str) -> list[Path]:
    """Each directory made under ``tmp_path`` with a ``note.txt`` holding its name."""
    made = []
    for name in names:
        directory = tmp_path / name
        directory.mkdir()
        (directory / "note.txt").write_text(f"{name}\n")
        made.append(directory)
    return made


def first_value(text: str) -> dict[str, Any]:
    """A snippet's value as the CLI prints it and the model reads it: JSON on the first line."""
    value: dict[str, Any] = json.loads(text.splitlines()[0])
    return value


def filesystem(granted: Path) -> str:
    return "fs=" + npm_server("filesystem", str(granted))


def through_run_code(granted: Path, project: Path, snippet: str) -> dict[str, Any]:
    result = asyncai("run-code", "--mcp-stdio", filesystem(granted), "-c", snippet, cwd=project)
    assert result.status == 0, result.stderr
    return first_value(result.stdout)


def through_the_agent(granted: Path, project: Path, snippet: str) -> dict[str, Any]:
    with ScriptedOpenAI([tool_reply(call("run_code", {"code": snippet})), text_reply("done")]) as model:
        result = asyncai(
            "--base-url", model.base_url, "--model", "m", "--no-session",
            "--mcp-stdio", filesystem(granted), "-p", "read the notes", cwd=project,
        )  # fmt: skip
    assert result.status == 0, result.stderr
    [read_back] = [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"]
    return first_value(read_back)


def through_serve_mcp(granted: Path, project: Path, snippet: str) -> dict[str, Any]:
    params = stdio_params("--mcp-stdio", filesystem(granted)).model_copy(update={"cwd": str(project)})
    results: list[mt.CallToolResult] = []

    async def session() -> None:
        with anyio.fail_after(60):
            async with Client(stdio_client(params), mode="legacy") as client:
                results.append(await client.call_tool("run_code", {"code": snippet}))

    anyio.run(session)
    [result] = results
    block = result.content[0]
    assert isinstance(block, mt.TextContent) and not result.is_error, result
    return first_value(block.text)


@pytest.mark.parametrize("door", [through_run_code, through_the_agent, through_serve_mcp])
def test_without_root_a_server_keeps_the_directory_its_command_line_gave_it(
    tmp_path: Path, door: Any
) -> None:
    granted, project = directories(tmp_path, "granted", "project")
    value = door(granted, project, probe(granted, project))
    assert value["allowed"] == [str(granted)], "the working directory replaced the server's own"
    assert value["first"] == "granted\n"
    assert value["second"].startswith(DENIED), "the working directory was opened to the server"


def settled(snippet: str, root: Path) -> str:
    """``snippet`` once the server lists ``root``: the filesystem server applies roots after it
    starts and may answer a first call with its command-line directories (servers#3204)."""
    return f"""
for _ in range(100):
    if {str(root)!r} in (await list_allowed_directories())["content"]:
        break
    await asyncio.sleep(0.05)
{snippet}"""


@pytest.mark.parametrize("how", ["flag", "config"])
def test_a_named_root_is_what_the_server_is_given(tmp_path: Path, how: str) -> None:
    granted, project, named = directories(tmp_path, "granted", "project", "named")
    config = tmp_path / "config.toml"
    config.write_text(f"root = [{json.dumps(str(named))}]\n")
    chosen = ["--root", str(named)] if how == "flag" else ["--config", str(config)]
    result = asyncai(
        "run-code",
        "--mcp-stdio",
        filesystem(granted),
        *chosen,
        "-c",
        settled(probe(named, granted), named),
        cwd=project,
    )
    assert result.status == 0, result.stderr
    value = first_value(result.stdout)
    assert value["allowed"] == [str(named)]
    assert value["first"] == "named\n"
    assert value["second"].startswith(DENIED), "the roots replace the server's own directories"
