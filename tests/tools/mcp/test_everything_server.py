"""asyncai against ``@modelcontextprotocol/server-everything`` (npm): resources, task-only tools and
what a stdio server's environment holds."""

from __future__ import annotations

import base64
import json
import shlex
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from asyncai.tools import McpServers, ResourceError, specs_from_config, stdio_spec
from tests.third_party import npm_server

pytestmark = pytest.mark.anyio

KEY = "sk-asyncai-test-0123456789"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def everything() -> AsyncIterator[McpServers]:
    """One server-everything for the module's read-only tests."""
    async with McpServers([stdio_spec(npm_server("everything", "stdio"), name="everything")]) as executor:
        yield executor


async def test_resources_are_listed_with_their_server(everything: McpServers) -> None:
    assert everything.resource_servers() == ["everything"]
    listed = await everything.list_resources()
    assert listed == await everything.list_resources(server="everything")
    by_uri = {entry["uri"]: entry for entry in listed}
    architecture = by_uri["demo://resource/static/document/architecture.md"]
    assert architecture["server"] == "everything" and architecture["name"] == "architecture.md"
    assert architecture["mime_type"] == "text/markdown" and "architecture.md" in architecture["description"]
    assert len(listed) == 7 and all(set(entry) >= {"uri", "name", "server"} for entry in listed)


async def test_text_and_blob_resources_are_read(everything: McpServers) -> None:
    [text] = await everything.read_resource("demo://resource/static/document/architecture.md")
    assert text["uri"] == "demo://resource/static/document/architecture.md"
    assert text["mime_type"] == "text/markdown" and text["text"].startswith("# Everything Server")
    # Not listed (it comes from a resource template): the only resource server gets it.
    [blob] = await everything.read_resource("demo://resource/dynamic/blob/7")
    assert set(blob) == {"uri", "mime_type", "data"}
    assert base64.b64decode(blob["data"]).decode().startswith("Resource 7: This is a base64 blob")


async def test_resource_errors_are_one_line(everything: McpServers) -> None:
    with pytest.raises(ResourceError) as missing:
        await everything.read_resource("demo://no/such/thing")
    assert "\n" not in str(missing.value)
    assert str(missing.value).startswith("cannot read demo://no/such/thing: server 'everything': ")
    assert "not found" in str(missing.value)
    with pytest.raises(ResourceError, match=r"unknown server 'nope' \(servers with resources: everything\)"):
        await everything.list_resources(server="nope")


async def test_task_only_tool_is_flagged(everything: McpServers) -> None:
    tools = {tool.name: tool for tool in everything.tools()}
    assert tools["simulate-research-query"].task_required
    assert not tools["echo"].task_required


async def test_summary_counts_tools_resources_and_prompts(everything: McpServers) -> None:
    [summary] = await everything.summaries()
    # 13, plus trigger-elicitation-request and trigger-url-elicitation: asyncai declares elicitation.
    assert (summary.name, summary.tools, summary.resources, summary.error) == ("everything", 15, 7, None)
    assert summary.prompts is not None and summary.prompts > 0


async def test_the_api_key_never_reaches_a_server_unless_its_env_names_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ASYNCAI_TEST_COPY", KEY)
    monkeypatch.setenv("ASYNCAI_FUTURE_TOKEN", "another-asyncai-secret")
    monkeypatch.setenv("ASYNCAI_TEST_PLAIN", "kept")
    command = shlex.split(npm_server("everything", "stdio"))
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "default": {"command": command[0], "args": ["stdio"]},
                    "named": {
                        "command": command[0],
                        "args": ["stdio"],
                        "env": {"OPENAI_API_KEY": "${OPENAI_API_KEY}"},
                    },
                }
            }
        )
    )
    async with McpServers(specs_from_config(config), secrets=[KEY]) as executor:
        default = json.loads((await executor.server("default").call_tool("get-env", {})).content)
        named = json.loads((await executor.server("named").call_tool("get-env", {})).content)
    assert default["ASYNCAI_TEST_PLAIN"] == "kept" and "PATH" in default
    assert KEY not in default.values() and "OPENAI_API_KEY" not in default
    assert "ASYNCAI_FUTURE_TOKEN" not in default
    assert named["OPENAI_API_KEY"] == KEY
    assert "ASYNCAI_TEST_COPY" not in named, "only the variable the config names is passed on"
