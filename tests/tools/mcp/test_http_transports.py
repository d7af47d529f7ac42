"""HTTP servers from config files: headers are sent (Streamable HTTP and legacy SSE) and ``${VAR}``
in them is expanded; a loopback server records what it received."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from asyncai.tools import McpServers, ServerStartError, specs_from_config
from asyncai.tools.mcp.specs import HttpServerSpec
from tests.fakes.servers import free_port
from tests.tools.mcp.loopback_http import LoopbackServer, loopback_server

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def loopback() -> Iterator[LoopbackServer]:
    with loopback_server() as server:
        yield server


def _config(tmp_path: Path, servers: dict[str, Any]) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


async def test_headers_reach_a_streamable_http_server(
    loopback: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASYNCAI_TEST_HTTP_SECRET", "s3cret-value")
    config = _config(
        tmp_path,
        {
            "remote": {
                "type": "http",
                "url": loopback.http_url,
                "headers": {
                    "Authorization": "Bearer ${ASYNCAI_TEST_HTTP_SECRET}",
                    "X-Client": "asyncai-test-1",
                },
            }
        },
    )
    async with McpServers(specs_from_config(config)) as executor:
        output = await executor.call_tool("whoami", {})
    assert not output.is_error and json.loads(output.content) == {"server": "loopback"}
    tagged = [
        (path, headers) for path, headers in loopback.requests if headers.get("x-client") == "asyncai-test-1"
    ]
    assert tagged and all(path.startswith("/mcp") for path, _ in tagged)
    assert all(headers["authorization"] == "Bearer s3cret-value" for _, headers in tagged)


async def test_legacy_sse_servers_work_with_their_headers(loopback: LoopbackServer, tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        {"legacy": {"type": "sse", "url": loopback.sse_url, "headers": {"X-Client": "asyncai-test-sse"}}},
    )
    async with McpServers(specs_from_config(config)) as executor:
        output = await executor.call_tool("whoami", {})
        [greeting] = await executor.read_resource("loop://greeting")
    assert not output.is_error and json.loads(output.content) == {"server": "loopback"}
    assert greeting == {"uri": "loop://greeting", "mime_type": "text/plain", "text": "hello from loopback"}
    paths = {path for path, headers in loopback.requests if headers.get("x-client") == "asyncai-test-sse"}
    assert "/sse" in paths and "/messages/" in paths, "both the event stream and the posts carry the headers"


async def test_an_unreachable_sse_server_is_a_one_line_start_error() -> None:
    url = f"http://127.0.0.1:{free_port()}/sse"
    with pytest.raises(ServerStartError) as info:
        async with McpServers([HttpServerSpec("gone", url, transport="sse")]):
            pass
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"cannot start MCP server 'gone' (url: {url} (sse)): ")
