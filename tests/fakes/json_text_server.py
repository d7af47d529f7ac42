"""An MCP server as most community servers are: its tool answers JSON as text and declares no
output schema. ``python tests/fakes/json_text_server.py``; ``status(region)``."""

from __future__ import annotations

import json

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("status-page", version="0.0.1")


@server.tool(annotations=ToolAnnotations(read_only_hint=True), structured_output=False)
def status(region: str) -> str:
    """The status of a region's services."""
    services = [{"name": "api", "up": True, "latency_ms": 12.5}, {"name": "db", "up": False}]
    return json.dumps({"region": region, "services": services, "incident": None})


if __name__ == "__main__":
    server.run()
