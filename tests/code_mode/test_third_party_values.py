"""Values in snippets match the stubs, against MCP servers nobody on the team wrote (issue 8):
npm ``server-filesystem``, ``server-memory`` and ``server-everything``, PyPI ``mcp-server-git``.

Every tool with an output schema that a test calls has its value checked against that schema
(unwrapped as the stub shows it) with ``jsonschema``."""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from asyncai.code_mode import CodeMode
from asyncai.code_mode.engine.crossing import unwrapped_output_schema
from asyncai.tools import McpServers, stdio_spec
from asyncai.tools.types import ToolCallOutput
from tests.third_party import npm_server, pypi_server

pytestmark = pytest.mark.anyio


@pytest.fixture
async def filesystem(tmp_path: Path) -> AsyncIterator[CodeMode]:
    (tmp_path / "number.txt").write_text("123")
    (tmp_path / "hello.txt").write_text("hello\n")
    async with (
        McpServers([stdio_spec(npm_server("filesystem", str(tmp_path)))]) as mcp,
        CodeMode(mcp) as code_mode,
    ):
        yield code_mode


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[CodeMode]:
    command = f"env MEMORY_FILE_PATH={tmp_path / 'memory.jsonl'} {npm_server('memory')}"
    async with McpServers([stdio_spec(command)]) as mcp, CodeMode(mcp) as code_mode:
        yield code_mode


@pytest.fixture
async def everything() -> AsyncIterator[CodeMode]:
    async with (
        McpServers([stdio_spec(npm_server("everything", "stdio"), name="everything")]) as mcp,
        CodeMode(mcp) as code_mode,
    ):
        yield code_mode


async def _run(code_mode: CodeMode, code: str) -> ToolCallOutput:
    output = await code_mode.call_tool("run_code", {"code": code})
    assert not output.is_error, output.content
    return output


async def _values(code_mode: CodeMode, calls: dict[str, str]) -> dict[str, Any]:
    """Run ``{tool: "call expression"}`` in one snippet, return each value, checked against its tool's
    output schema when the tool has one."""
    body = ", ".join(f"{json.dumps(tool)}: await {call}" for tool, call in calls.items())
    values: dict[str, Any] = json.loads((await _run(code_mode, "{" + body + "}")).content)
    for tool, value in values.items():
        schema = code_mode.catalog[tool].tool.output_schema
        if schema is not None:
            jsonschema.validate(value, unwrapped_output_schema(schema))
    return values


async def test_filesystem_values_are_the_structured_results(filesystem: CodeMode, tmp_path: Path) -> None:
    values = await _values(
        filesystem,
        {
            "read_text_file": f'read_text_file(path="{tmp_path / "number.txt"}")',
            "list_directory": f'list_directory(path="{tmp_path}")',
            "get_file_info": f'get_file_info(path="{tmp_path / "hello.txt"}")',
            "write_file": f'write_file(path="{tmp_path / "new.txt"}", content="written")',
            "list_allowed_directories": "list_allowed_directories()",
        },
    )
    assert values["read_text_file"] == {"content": "123"}, "a file holding 123 is text, not an int"
    assert "[FILE] hello.txt" in values["list_directory"]["content"]
    assert (tmp_path / "new.txt").read_text() == "written"
    typed = await _run(filesystem, f'r = await read_text_file(path="{tmp_path / "hello.txt"}")\nr["content"]')
    assert typed.content == "hello\n"


async def test_memory_values_match_their_documented_shapes(memory: CodeMode) -> None:
    entity = {"name": "asyncai", "entityType": "project", "observations": ["code mode"]}
    values = await _values(
        memory,
        {
            "create_entities": f"create_entities(entities=[{entity!r}])",
            "read_graph": "read_graph()",
            "search_nodes": 'search_nodes(query="code")',
        },
    )
    assert values["create_entities"] == {"entities": [entity]}, "documented {entities: ...}, not a list"
    assert values["read_graph"] == {"entities": [entity], "relations": []}
    assert [e["name"] for e in values["search_nodes"]["entities"]] == ["asyncai"]


async def test_everything_images_and_resources_arrive_as_dicts(everything: CodeMode) -> None:
    values = await _values(
        everything,
        {
            "get_tiny_image": "get_tiny_image()",
            "get_resource_reference": 'get_resource_reference(resourceType="Text", resourceId=1)',
            "get_resource_links": "get_resource_links(count=2)",
            "get_structured_content": 'get_structured_content(location="Chicago")',
            "echo": 'echo(message="123")',
        },
    )
    text, image, closing = values["get_tiny_image"]
    assert isinstance(text, str) and isinstance(closing, str), "several blocks are a list of values"
    assert image["type"] == "image" and image["mime_type"] == "image/png"
    assert base64.b64decode(image["data"]).startswith(b"\x89PNG\r\n\x1a\n")
    embedded = values["get_resource_reference"][1]
    assert embedded["type"] == "resource" and embedded["uri"] == "demo://resource/dynamic/text/1"
    assert embedded["mime_type"] == "text/plain" and embedded["text"].startswith("Resource 1")
    links = [block for block in values["get_resource_links"] if isinstance(block, dict)]
    assert [link["type"] for link in links] == ["resource_link", "resource_link"]
    assert all(link["uri"].startswith("demo://resource/") for link in links)
    assert set(values["get_structured_content"]) == {"temperature", "conditions", "humidity"}
    assert values["echo"] == "Echo: 123"


async def test_everything_image_data_is_kept_from_the_model_by_the_result_guard(
    everything: CodeMode,
) -> None:
    output = await everything.call_tool("run_code", {"code": "[await get_tiny_image() for _ in range(5)]"})
    assert output.is_error and "over the 20,000-char limit" in output.content
    kept = await _run(everything, 'img = (await get_tiny_image())[1]\n[img["mime_type"], len(img["data"])]')
    mime, size = json.loads(kept.content)
    assert mime == "image/png" and size > 1_000


async def test_task_only_tools_are_left_out_with_a_note(everything: CodeMode) -> None:
    description = everything.tools()[0].description
    assert "async def simulate_research_query(" not in description
    assert "need MCP task augmentation" in description and "simulate-research-query" in description
    output = await everything.call_tool("run_code", {"code": "await simulate_research_query(topic='x')"})
    assert output.is_error and "NameError" in output.content


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A repository with one commit and one untracked file."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    (repo / "a.txt").write_text("a\n")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first commit"], check=True)
    (repo / "b.txt").write_text("b\n")
    return repo


async def test_git_tools_without_schemas_give_text(git_repo: Path) -> None:
    command = pypi_server("mcp-server-git", "--repository", str(git_repo))
    async with McpServers([stdio_spec(command)]) as mcp, CodeMode(mcp) as code_mode:
        description = code_mode.tools()[0].description
        output = await _run(
            code_mode,
            f's = await git_status(repo_path="{git_repo}")\n'
            f'log = await git_log(repo_path="{git_repo}", max_count=1)\n'
            "[type(s).__name__, s, log]",
        )
    kind, status, log = json.loads(output.content)
    assert kind == "str" and "b.txt" in status
    assert "first commit" in str(log)
    assert "async def git_status(*, repo_path: str) -> Any:" in description


async def test_everything_resources_from_a_snippet(everything: CodeMode) -> None:
    description = everything.tools()[0].description
    assert "# MCP resources, offered by: everything" in description
    assert "async def read_resource(*, uri: str) -> dict[str, Any]:" in description
    output = await _run(
        everything,
        "listed = await list_resources()\n"
        "text = await read_resource(uri=[r for r in listed if r['name'] == 'features.md'][0]['uri'])\n"
        "blob = await read_resource(uri='demo://resource/dynamic/blob/1')\n"
        "mine = await list_resources(server='everything')\n"
        "{'servers': sorted({r['server'] for r in listed}), 'same': len(mine) == len(listed),\n"
        " 'text': text, 'blob_keys': sorted(blob), 'blob': blob['data']}",
    )
    value = json.loads(output.content)
    assert value["servers"] == ["everything"] and value["same"]
    assert value["text"]["mime_type"] == "text/markdown" and value["text"]["text"].startswith("#")
    assert value["blob_keys"] == ["data", "mime_type", "uri"]
    assert base64.b64decode(value["blob"]), "binary content arrives as base64"
    assert output.audit == {"nested_calls": []}, "resource reads are not nested tool calls"
    missing = await everything.call_tool(
        "run_code",
        {
            "code": "try:\n    await read_resource(uri='demo://nope')\nexcept RuntimeError as e:\n    m = str(e)\nm"
        },
    )
    assert not missing.is_error and "demo://nope" in missing.content
    refused = await everything.call_tool("run_code", {"code": "read_resource = 1"})
    assert refused.is_error and "cannot assign to it" in refused.content
