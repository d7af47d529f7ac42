"""Resources across several servers: paginated listing, routing by URI, one-line errors, and a
server that has resources and prompts but no tools."""

from __future__ import annotations

import base64
import io
from collections.abc import AsyncIterator, Iterator

import pytest

from asyncai.tools import McpServers, ResourceError, stdio_spec
from tests.fakes.logs import captured_log
from tests.fakes.servers import resource_server, server_command

pytestmark = pytest.mark.anyio


@pytest.fixture
def warnings() -> Iterator[io.StringIO]:
    with captured_log() as stream:
        yield stream


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def two_servers() -> AsyncIterator[McpServers]:
    """Two resource-only servers and one tool-only server."""
    specs = [
        stdio_spec(resource_server("alpha"), name="a"),
        stdio_spec(resource_server("beta"), name="b"),
        stdio_spec(server_command("tools"), name="tools"),
    ]
    async with McpServers(specs) as executor:
        yield executor


async def test_a_resource_only_server_is_configured_without_tools(two_servers: McpServers) -> None:
    assert [c.name for c in two_servers.connections] == ["a", "b", "tools"]
    assert two_servers.resource_servers() == ["a", "b"]
    assert {route.server for route in two_servers.routes.values()} == {"tools"}
    summaries = {s.name: s for s in await two_servers.summaries()}
    assert (summaries["a"].tools, summaries["a"].resources, summaries["a"].prompts) == (0, 7, 1)
    tool_count = len([route for route in two_servers.routes.values() if route.server == "tools"])
    assert tool_count > 0 and summaries["tools"].tools == tool_count
    assert summaries["tools"].resources is None, (
        "declaring the capability with no resources is not offering any"
    )


async def test_every_page_is_listed_in_server_order(two_servers: McpServers) -> None:
    listed = await two_servers.list_resources()
    assert [entry["uri"] for entry in listed[:7]] == [f"alpha://doc/{i}" for i in range(5)] + [
        "alpha://bin",
        "alpha://broken",
    ]
    assert [entry["server"] for entry in listed] == ["a"] * 7 + ["b"] * 7
    assert listed[5] == {
        "uri": "alpha://bin",
        "name": "bin",
        "server": "a",
        "mime_type": "application/octet-stream",
        "size": 256,
    }
    only_b = await two_servers.list_resources(server="b")
    assert {entry["server"] for entry in only_b} == {"b"} and len(only_b) == 7


async def test_reads_go_to_the_server_that_listed_the_uri(two_servers: McpServers) -> None:
    assert await two_servers.read_resource("beta://doc/3") == [
        {"uri": "beta://doc/3", "mime_type": "text/plain", "text": "beta says beta://doc/3"}
    ]
    [blob] = await two_servers.read_resource("alpha://bin")
    assert base64.b64decode(blob["data"]) == bytes(range(256)) and "text" not in blob


async def test_resource_errors_name_the_servers(two_servers: McpServers) -> None:
    with pytest.raises(ResourceError) as unlisted:
        await two_servers.read_resource("gamma://x")
    assert str(unlisted.value) == "cannot read gamma://x: no server lists it (servers with resources: a, b)"
    with pytest.raises(ResourceError) as failed:
        await two_servers.read_resource("beta://broken")
    assert str(failed.value) == "cannot read beta://broken: server 'b': no resource beta://broken"
    with pytest.raises(
        ResourceError, match=r"no resources on server 'tools' \(servers with resources: a, b\)"
    ):
        await two_servers.list_resources(server="tools")


async def test_an_unlisted_uri_is_found_without_listing_first() -> None:
    specs = [stdio_spec(resource_server("alpha"), name="a"), stdio_spec(resource_server("beta"), name="b")]
    async with McpServers(specs) as executor:
        [part] = await executor.read_resource("beta://doc/0")
    assert part["text"] == "beta says beta://doc/0"


async def test_no_resource_server_at_all() -> None:
    async with McpServers([stdio_spec(server_command("plain"))]) as executor:
        assert executor.resource_servers() == [] and await executor.list_resources() == []
        with pytest.raises(ResourceError, match=r"^cannot read x://y: no MCP server offers resources$"):
            await executor.read_resource("x://y")


async def test_a_server_that_dies_fails_its_resources_in_one_line(warnings: io.StringIO) -> None:
    async with McpServers([stdio_spec(resource_server("alpha"), name="a")]) as executor:
        with pytest.raises(ResourceError) as died:
            await executor.read_resource("alpha://exit")
        with pytest.raises(ResourceError) as later:
            await executor.read_resource("alpha://doc/1")
    assert str(died.value).startswith("cannot read alpha://exit: server 'a': ")
    assert str(later.value).startswith("cannot read alpha://doc/1: MCP server 'a' is not running (")
    died_lines = [line for line in warnings.getvalue().splitlines() if '"mcp.server_died"' in line]
    assert len(died_lines) == 1 and '"server": "a"' in died_lines[0]
