"""``asyncai-mcp-simple``: a stdio MCP server with one tool, ``http_get``."""

from __future__ import annotations

from typing import TypedDict

import httpx2
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from asyncai.humanize import seconds

server = MCPServer("asyncai-mcp-simple", version="0.1.0")


class HttpResponse(TypedDict):
    status: int
    content_type: str
    body: str


@server.tool(annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=True))
async def http_get(
    url: str, headers: dict[str, str] | None = None, timeout: float | None = None
) -> HttpResponse:
    """HTTP GET a URL and return its status, content type and the full body as text (never truncated).

    Non-2xx statuses are results, not errors; bad URLs, refused connections and timeouts are errors.
    Example: r = await http_get(url="http://127.0.0.1:8000/items.json"); data = json.loads(r["body"])
    """
    limit = 30.0 if timeout is None else timeout
    try:
        async with httpx2.AsyncClient(timeout=limit, follow_redirects=True) as client:
            response = await client.get(url, headers=headers or {})
    except httpx2.TimeoutException:
        raise ToolError(f"GET {url} timed out after {seconds(limit)}") from None
    except httpx2.ConnectError as exc:
        raise ToolError(f"GET {url} failed to connect: {exc or 'connection refused'}") from None
    except (httpx2.UnsupportedProtocol, httpx2.InvalidURL) as exc:
        raise ToolError(f"bad URL {url!r}: {exc}") from None
    except httpx2.HTTPError as exc:
        raise ToolError(f"GET {url} failed: {type(exc).__name__}: {exc}") from None
    return {
        "status": response.status_code,
        "content_type": response.headers.get("content-type", ""),
        "body": response.text,
    }


def main() -> None:
    server.run()


if __name__ == "__main__":
    main()
