"""``asyncai run-code``: run snippets through code mode without a model, printing exactly what the
model would get. Also how a person debugs a snippet a model wrote."""

from __future__ import annotations

import argparse
import ast
import sys
from typing import TYPE_CHECKING, TextIO

from asyncai.cli.settings import (
    Settings,
    UsageError,
    add_code_options,
    add_mcp_options,
    mutation_policy,
    read_text_file,
)

if TYPE_CHECKING:
    from asyncai.code_mode import CodeMode


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("run-code", help="run Python snippets in code mode without a model")
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "-c", "--code", action="append", metavar="CODE", help="snippet (repeatable: one REPL)"
    )
    source.add_argument("-i", "--interactive", action="store_true", help="interactive REPL over one scope")
    source.add_argument("--catalog", action="store_true", help="print the run_code description and exit")
    source.add_argument("file", nargs="?", metavar="FILE", help="file with a snippet ('-' or nothing: stdin)")
    add_mcp_options(parser)
    add_code_options(parser)


def _snippets(settings: Settings) -> list[str]:
    if code := settings.texts("code"):
        return code
    path = settings.text("file")
    if path and path != "-":
        return [_read_snippet_file(path, settings.hints.get("file"))]
    if sys.stdin.isatty():
        raise UsageError("run-code needs -c CODE, a FILE, code on stdin, -i or --catalog")
    return [sys.stdin.read()]


def _read_snippet_file(path: str, hint: str | None) -> str:
    """FILE's text; when FILE directly followed a ``--mcp-stdio`` command and cannot be read, the
    error asks whether it was one of the server's arguments."""
    try:
        return read_text_file(path, "snippet file")
    except UsageError as exc:
        if hint is None:
            raise
        raise UsageError(f"{exc} (if {path} belongs to the server command, quote it: {hint})") from None


async def run(settings: Settings, out: TextIO = sys.stdout) -> int:
    from asyncai.cli.approval import TerminalApprover  # what running needs: only to run
    from asyncai.cli.history import line_editing
    from asyncai.cli.wiring import code_mode_executor

    catalog, interactive = settings.switch("catalog"), settings.switch("interactive")
    snippets = [] if catalog or interactive else _snippets(settings)
    # In the interactive REPL a person is at the terminal to approve mutating calls.
    approver = TerminalApprover() if interactive and mutation_policy(settings) == "ask" else None
    async with code_mode_executor(settings, approver) as executor:
        if catalog:
            print(executor.tools()[0].description, file=out)
            return 0
        if interactive:
            with line_editing("run-code"):
                return await _interactive(executor, out)
        status = 0
        for code in snippets:
            output = await executor.call_tool("run_code", {"code": code})
            print(output.content, file=out, flush=True)
            status = 1 if output.is_error else status
        return status


def _complete(source: str) -> bool:
    """A block ends with a blank line; a single line ends at once unless it opens a block or bracket."""
    if source.endswith("\n\n"):
        return True
    lines = source.rstrip("\n").split("\n")
    if len(lines) > 1 or lines[0].rstrip().endswith(":"):
        return False
    try:
        compile(source, "<stdin>", "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError as exc:
        return "never closed" not in str(exc)
    return True


async def _interactive(executor: CodeMode, out: TextIO) -> int:
    from asyncai.cli.blocking import read_in_thread

    print("asyncai run-code: Python in the Monty sandbox. /restart clears state, /exit quits.", file=out)
    buffer = ""
    while True:
        try:
            line = await read_in_thread(input, "... " if buffer else ">>> ")
        except EOFError:
            return 0
        if not buffer and line.strip() in {"/exit", "/quit"}:
            return 0
        if not buffer and line.strip() == "/restart":
            await executor.call_tool("run_code", {"code": "None", "restart": True})
            print("(REPL state cleared)", file=out)
            continue
        buffer += line + "\n"
        if not _complete(buffer):
            continue
        code, buffer = buffer, ""
        if code.strip():
            output = await executor.call_tool("run_code", {"code": code})
            print(output.content, file=out, flush=True)
