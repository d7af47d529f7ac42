"""A small MCP server for tests: ``python tests/fakes/mcp_test_server.py [--name N] [--http PORT]``.

Tools: ``whoami`` (routing), ``echo``, ``sleep`` (concurrency and timeouts), ``blob`` (large
results), ``fail`` (is_error), ``die`` (a server crash mid-call), ``write_note`` (a mutating tool),
``getenv`` (the server's environment), ``grow`` (adds a tool at run time and sends
``tools/list_changed``), ``trace_id`` (the trace the call arrived in, from its ``_meta``).
With ``--http PORT`` it serves Streamable HTTP on 127.0.0.1 and prints ``ready`` when listening.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from opentelemetry import trace

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False)


def build(name: str) -> MCPServer:
    server = MCPServer(name, version="0.0.1")

    @server.tool(annotations=READ_ONLY)
    def whoami() -> dict[str, Any]:
        """The server's name and pid."""
        return {"server": name, "pid": os.getpid()}

    @server.tool(annotations=READ_ONLY)
    def echo(text: str) -> str:
        """Return the text."""
        return text

    @server.tool(annotations=READ_ONLY)
    async def sleep(seconds: float) -> dict[str, Any]:
        """Sleep, then say so."""
        await anyio.sleep(seconds)
        return {"slept": seconds, "server": name}

    @server.tool(annotations=READ_ONLY)
    def blob(size: int) -> dict[str, Any]:
        """About ``size`` bytes of JSON: records with a name, a number and padding."""
        record_size = 100
        count = max(1, size // record_size)
        return {"items": [{"name": f"item-{i}", "n": i, "pad": "x" * 60} for i in range(count)]}

    @server.tool(annotations=READ_ONLY, structured_output=False)
    def text_blob(size: int) -> str:
        """Exactly ``size`` characters of plain text."""
        return "y" * size

    @server.tool(annotations=READ_ONLY)
    def fail(message: str) -> str:
        """Always an error result."""
        raise ToolError(message)

    @server.tool(annotations=READ_ONLY)
    def die() -> str:
        """Exit the server process at once."""
        print(f"{name}: dying on request", file=sys.stderr, flush=True)
        os._exit(3)

    @server.tool(annotations=READ_ONLY)
    def getenv(name: str) -> dict[str, str | None]:
        """The value of the environment variable ``name`` in the server process (null when unset)."""
        return {"name": name, "value": os.environ.get(name)}

    @server.tool(annotations=READ_ONLY)
    def trace_id() -> str:
        """The W3C trace id this call carried in _meta (the SDK continues it), or "" for none."""
        context = trace.get_current_span().get_span_context()
        return format(context.trace_id, "032x") if context.is_valid else ""

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
    def write_note(text: str) -> dict[str, Any]:
        """Pretend to store a note (a mutating tool)."""
        return {"stored": text}

    @server.tool(annotations=READ_ONLY)
    async def grow(name: str, ctx: Context) -> str:
        """Add a read-only tool ``name`` (it returns its own name) and announce ``tools/list_changed``."""

        def grown() -> str:
            return name

        server.add_tool(
            grown, name=name, description=f"Added at run time; returns {name!r}.", annotations=READ_ONLY
        )
        await ctx.notify_tools_changed()  # 2026-07-28: to subscriptions/listen streams
        await ctx.session.send_tool_list_changed()  # the 2025 era: a notification on the session
        return f"added {name}"

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="test-server")
    parser.add_argument("--http", type=int, metavar="PORT")
    args = parser.parse_args()
    server = build(args.name)
    print(f"{args.name} starting", file=sys.stderr, flush=True)
    if args.http is None:
        server.run()
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.http)


if __name__ == "__main__":
    main()
