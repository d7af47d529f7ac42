"""An in-process MCP server on 127.0.0.1 that serves Streamable HTTP (``/mcp``) and the legacy
HTTP+SSE transport (``/sse``) and records the headers of every request it gets."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from starlette.types import Receive, Scope, Send

from tests.fakes.loopback import listening_socket, serving, url_of


@dataclass
class LoopbackServer:
    base_url: str
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    """(path, lower-cased headers) of every HTTP request, in arrival order."""

    @property
    def http_url(self) -> str:
        return f"{self.base_url}/mcp"

    @property
    def sse_url(self) -> str:
        return f"{self.base_url}/sse"

    def headers_seen(self, name: str) -> list[str]:
        return [headers[name] for _, headers in self.requests if name in headers]


def _build(name: str) -> MCPServer:
    server = MCPServer(name, version="0.0.1")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def whoami() -> dict[str, Any]:
        """The server's name."""
        return {"server": name}

    @server.resource("loop://greeting", name="greeting", mime_type="text/plain")
    def greeting() -> str:
        return f"hello from {name}"

    return server


@contextlib.contextmanager
def loopback_server(name: str = "loopback") -> Iterator[LoopbackServer]:
    """Serve until the block ends; the socket is bound and listening before it starts."""
    mcp = _build(name)
    streamable = mcp.streamable_http_app()
    sse = mcp.sse_app()
    sock = listening_socket()
    record = LoopbackServer(url_of(sock))

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await streamable(scope, receive, send)  # runs the Streamable HTTP session manager
            return
        if scope["type"] == "http":
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            record.requests.append((scope["path"], headers))
        target = streamable if scope["path"].startswith("/mcp") else sse
        await target(scope, receive, send)

    with serving(app, sock):
        yield record
