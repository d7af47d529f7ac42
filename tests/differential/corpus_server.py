"""The MCP server every door of the differential harness calls: ``python -m tests.differential.corpus_server``.

Its tools are pure (the same arguments give the same answer whichever door calls), so any
difference between doors is the engine's: ``echo`` (any JSON value back, as structured content),
``numbers``, ``pods``, ``wait``, ``fail`` (an error result) and ``record``, which says it writes
(mutating, not destructive) but keeps nothing, so eager execution and the mutation gate meet it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import JsonValue

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False)


def build() -> MCPServer:
    server = MCPServer("corpus", version="0.0.1")

    @server.tool(annotations=READ_ONLY, structured_output=True)
    def echo(value: JsonValue = None) -> JsonValue:
        """``value``, unchanged."""
        return value

    @server.tool(annotations=READ_ONLY)
    def numbers(n: int = 3) -> list[int]:
        """The integers 0 to ``n - 1``."""
        return list(range(n))

    @server.tool(annotations=READ_ONLY)
    def pods(namespace: str = "default") -> dict[str, Any]:
        """Five pods of ``namespace``, two not running."""
        phases = ["Running", "Pending", "Running", "Failed", "Running"]
        items = [{"name": f"{namespace}-pod-{i}", "phase": phase} for i, phase in enumerate(phases)]
        return {"items": items}

    @server.tool(annotations=READ_ONLY)
    async def wait(seconds: float = 0.0, tag: str = "") -> dict[str, Any]:
        """Wait ``seconds``; says which ``tag`` it was."""
        await asyncio.sleep(min(seconds, 1.0))
        return {"waited": seconds, "tag": tag}

    @server.tool(annotations=READ_ONLY)
    def fail(message: str = "it failed") -> str:
        """Fail with ``message``."""
        raise ToolError(message)

    @server.tool(annotations=WRITES)
    def record(text: str) -> dict[str, Any]:
        """Record ``text`` (says it writes; keeps nothing)."""
        return {"recorded": text}

    return server


if __name__ == "__main__":
    build().run()
