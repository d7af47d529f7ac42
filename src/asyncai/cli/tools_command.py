"""``asyncai tools``: connect to the configured servers and print the routed tool table, the name
each tool has in snippets, and what every server offers (tools, resources, prompts)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

from asyncai.cli.settings import Settings, add_mcp_options
from asyncai.humanize import count

if TYPE_CHECKING:
    from asyncai.tools import DuplicateTool, McpServers, ServerSummary, ToolRoute

TASK_ONLY_NOTE = "task-only: not callable from snippets"
NO_SERVERS = "(no MCP servers: configure them with --mcp-stdio, --mcp-http or --mcp-config)"


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("tools", help="print the routed MCP tool table")
    add_mcp_options(parser)


def render_table(routes: list[ToolRoute], duplicates: list[DuplicateTool]) -> str:
    """One row per routed tool: its MCP name, its Python name in snippets, server, access, schema.

    A tool that the server runs only as an MCP task has no Python name and is marked task-only.
    """
    from asyncai.code_mode.catalog.entries import build_catalog

    catalog = build_catalog([route.tool for route in routes])  # the names snippets use, by the same rule
    python_names = {id(entry.tool): name for name, entry in catalog.items()}
    rows = [("TOOL", "PYTHON NAME", "SERVER", "ACCESS", "OUTPUT SCHEMA")]
    for route in routes:
        tool = route.tool
        access = "destructive" if tool.destructive else "read-only" if tool.read_only else "read-write"
        schema = "yes" if tool.output_schema else "no"
        python = "-" if tool.task_required else python_names[id(tool)]
        rows.append(
            (
                tool.name,
                python,
                route.server,
                access,
                f"{schema}  ({TASK_ONLY_NOTE})" if tool.task_required else schema,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True)) + "  " + row[4]
        for row in rows
    ]
    for duplicate in duplicates:
        lines.append(
            f"duplicate: {duplicate.name} from {duplicate.dropped_server} ignored "
            f"(served by {duplicate.kept_server})"
        )
    return "\n".join(line.rstrip() for line in lines)


def _counted(number: int, noun: str) -> str:
    return f"{count(number)} {noun}" + ("" if number == 1 else "s")


def render_summary(summary: ServerSummary) -> str:
    """``server everything: 13 tools, 7 resources, 4 prompts`` (or why the server is missing)."""
    if summary.needs_sign_in:
        return f"server {summary.name}: needs sign-in (asyncai mcp login {summary.name})"
    if not summary.started:
        return f"server {summary.name}: not started: {summary.error}"
    parts = [
        _counted(summary.tools, "tool"),
        _counted(summary.resources or 0, "resource"),
        _counted(summary.prompts or 0, "prompt"),
    ]
    line = f"server {summary.name}: {', '.join(parts)}"
    return f"{line} ({summary.error})" if summary.error else line


async def listing(executor: McpServers) -> str:
    """What ``asyncai tools`` prints (the chat's ``/tools`` too): the routed tool table, then a
    line per server."""
    summaries = await executor.summaries()
    lines = [render_table(list(executor.routes.values()), executor.duplicates)] if executor.routes else []
    lines += [render_summary(summary) for summary in summaries] or [NO_SERVERS]
    return "\n".join(lines)


async def run(settings: Settings, out: TextIO = sys.stdout) -> int:
    from asyncai.cli.wiring import mcp_executor  # the event loop's world: only to run

    # A listing never opens a browser, and lists the servers that need sign-in rather than fail.
    async with mcp_executor(settings, sign_in="never", list_sign_in=True) as executor:
        print(await listing(executor), file=out)
    return 0
