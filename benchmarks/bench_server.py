"""The stdio MCP server every speed benchmark talks to: ``python benchmarks/bench_server.py``.

Tools, all read-only:

- ``ping()``: answers at once (nested-call overhead).
- ``nap(ms)``: sleeps, then answers (fan-out).
- ``records(count)``: a JSON document ``{"items": [...]}`` of ``count`` records of about 134 bytes
  as text content (a 10 MB result is ``records(RECORDS_PER_10_MB)``).
- ``sales(region)``: a small structured result (the gather-and-aggregate scenario).
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False)
REGIONS = ("eu", "us", "apac")
RECORDS_PER_10_MB = 74_500


def record(i: int) -> dict[str, Any]:
    return {"metadata": {"name": f"cm-{i}"}, "n": i, "pad": "x" * 58, "warning": i % 7 == 0}


def build() -> MCPServer:
    server = MCPServer("bench", version="0.0.1")

    @server.tool(annotations=READ_ONLY)
    def ping() -> dict[str, Any]:
        """Answers at once."""
        return {"ok": True}

    @server.tool(annotations=READ_ONLY)
    async def nap(ms: int) -> dict[str, Any]:
        """Sleeps ``ms`` milliseconds, then answers."""
        await anyio.sleep(ms / 1000)
        return {"slept_ms": ms}

    @server.tool(annotations=READ_ONLY, structured_output=False)
    def records(count: int) -> str:
        """A JSON document {"items": [...]} of ``count`` records; every 7th has warning=true."""
        return json.dumps({"items": [record(i) for i in range(count)]})

    @server.tool(annotations=READ_ONLY)
    def sales(region: str) -> dict[str, Any]:
        """Orders of one region: {"region": str, "orders": [{"id": int, "total": float}]}."""
        seed = REGIONS.index(region) if region in REGIONS else 3
        orders = [{"id": seed * 100 + i, "total": round(10.5 * (i + 1) + seed, 2)} for i in range(20)]
        return {"region": region, "orders": orders}

    return server


def main() -> None:
    build().run()


if __name__ == "__main__":
    main()
