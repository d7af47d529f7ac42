"""``asyncai tools``: connect to the configured servers and print the routed tool table."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from ..tools import DuplicateTool, ToolRoute
from .settings import Settings, add_mcp_options
from .wiring import mcp_executor


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("tools", help="print the routed MCP tool table")
    add_mcp_options(parser)


def render_table(routes: list[ToolRoute], duplicates: list[DuplicateTool]) -> str:
    rows = [("TOOL", "SERVER", "ACCESS", "OUTPUT SCHEMA")]
    for route in routes:
        tool = route.tool
        access = "destructive" if tool.destructive else "read-only" if tool.read_only else "read-write"
        rows.append((tool.name, route.server, access, "yes" if tool.output_schema else "no"))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True)) + "  " + row[3]
        for row in rows
    ]
    for duplicate in duplicates:
        lines.append(
            f"duplicate: {duplicate.name} from {duplicate.dropped_server} ignored "
            f"(served by {duplicate.kept_server})"
        )
    return "\n".join(line.rstrip() for line in lines)


async def run(settings: Settings, out: TextIO = sys.stdout) -> int:
    async with mcp_executor(settings) as executor:
        print(render_table(list(executor.routes.values()), executor.duplicates), file=out)
        if not executor.routes:
            print("(no tools: configure servers with --mcp-stdio, --mcp-http or --mcp-config)", file=out)
    return 0
