"""An MCP server whose calls hang until cancelled, and which says how many are running:
``python tests/fakes/hanging_server.py``.

Tools: ``hang`` (waits until the client cancels it; counts itself in flight while it waits) and
``in_flight`` (how many ``hang`` calls run now, and how many ever started). A test cancels
``hang`` calls and asks ``in_flight`` whether the server stopped every one.
"""

from __future__ import annotations

from typing import TypedDict

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False)

server = MCPServer("hanging", version="0.0.1")
running = 0
started = 0


class InFlight(TypedDict):
    running: int
    started: int


@server.tool(annotations=READ_ONLY)
async def hang(tag: str = "") -> str:
    """Wait until cancelled (a real answer never comes)."""
    global running, started
    running += 1
    started += 1
    try:
        await anyio.sleep_forever()
    finally:
        running -= 1
    return tag  # unreachable: sleep_forever ends only by cancellation


@server.tool(annotations=READ_ONLY)
def in_flight() -> InFlight:
    """How many ``hang`` calls are running now, and how many ever started."""
    return {"running": running, "started": started}


if __name__ == "__main__":
    server.run()
