"""Read-only calls started before the snippet reaches them (speculation).

A call of a read-only tool whose arguments are all literal keywords is launched as soon as its line
has arrived (a streamed snippet) or the snippet has passed its scan (one that arrived whole),
wherever the line is (inside a branch, after a slow statement). When the snippet makes the same
call (the same tool, the same MCP arguments) it takes the launch's result instead of calling again;
a launch nobody claims is cancelled when the snippet ends. Once the snippet makes a mutating call,
no launch is claimed: each may have read the world as it was before that call. Launches are capped
per snippet and counted apart from the snippet's call budget: a claimed one becomes its call.
"""

from __future__ import annotations

import ast
import asyncio
import json
import re
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from asyncai.code_mode.catalog.entries import CatalogEntry
from asyncai.log import log_event
from asyncai.tools.types import ToolCallOutput

MAX_LAUNCHES = 8
"""Launches per snippet: a loop of literal calls must not fan out unbounded work."""
_CALL_START = re.compile(r"\b([A-Za-z_]\w*)\(")


@dataclass(frozen=True)
class LiteralCall:
    function: str
    """The Python name called."""
    keywords: dict[str, Any]


def literal_calls(
    line: str, catalog: Mapping[str, CatalogEntry], allowed: Callable[[CatalogEntry], bool]
) -> list[LiteralCall]:
    """The calls in ``line`` (of a snippet still streaming, so not parsed whole) of catalog
    functions ``allowed`` picks whose arguments are all keywords with literal values
    (``pods(namespace="default")``, not ``pods(namespace=ns)``)."""
    found = []
    for match in _CALL_START.finditer(line):
        entry = catalog.get(match.group(1))
        if entry is None or not allowed(entry):
            continue
        end = _closing(line, match.end() - 1)
        if end is None:
            continue
        try:
            node = ast.parse(line[match.start() : end + 1], mode="eval").body
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        call = _literal_call(node, catalog, allowed)
        if call is not None:
            found.append(call)
    return found


def literal_calls_in(
    nodes: Iterable[ast.AST], catalog: Mapping[str, CatalogEntry], allowed: Callable[[CatalogEntry], bool]
) -> list[LiteralCall]:
    """``literal_calls`` of a parsed snippet (its ``nodes``), in the order they are written."""
    calls = sorted((n for n in nodes if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset))
    return [call for node in calls if (call := _literal_call(node, catalog, allowed)) is not None]


def _literal_call(
    node: ast.AST, catalog: Mapping[str, CatalogEntry], allowed: Callable[[CatalogEntry], bool]
) -> LiteralCall | None:
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or node.args:
        return None
    entry = catalog.get(node.func.id)
    if entry is None or not allowed(entry) or any(k.arg is None for k in node.keywords):
        return None
    try:
        keywords = {str(k.arg): ast.literal_eval(k.value) for k in node.keywords}
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return LiteralCall(node.func.id, keywords)


def _closing(text: str, opening: int) -> int | None:
    """The index of the parenthesis closing the one at ``opening`` (strings and nesting heeded)."""
    depth, quote, escaped = 0, "", False
    for index in range(opening, len(text)):
        char = text[index]
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return index
    return None


def _key(tool: str, arguments: Mapping[str, Any]) -> tuple[str, str]:
    return tool, json.dumps(arguments, sort_keys=True, default=repr)


class Speculations:
    """One snippet's launches: started, claimed by the snippet's own call, or cancelled at its end."""

    def __init__(self, cap: int = MAX_LAUNCHES) -> None:
        self.cap = cap
        self._running: dict[tuple[str, str], asyncio.Task[ToolCallOutput]] = {}
        self._dropped: list[asyncio.Task[ToolCallOutput]] = []
        self._closed = False
        self.launched = self.claimed = 0

    def launch(
        self, tool: str, arguments: dict[str, Any], call: Callable[[], Coroutine[Any, Any, ToolCallOutput]]
    ) -> None:
        """Start ``call()`` (the call of ``tool`` with ``arguments``) unless it runs already or the
        cap is reached."""
        key = _key(tool, arguments)
        if self._closed or key in self._running or self.launched >= self.cap:
            return
        self.launched += 1
        self._running[key] = asyncio.ensure_future(call())
        log_event("code_mode.speculative_launch", tool=tool)

    def claim(self, tool: str, arguments: Mapping[str, Any]) -> asyncio.Task[ToolCallOutput] | None:
        """The launch of this very call, now the snippet's own; ``None`` when there is none."""
        if not self._running:  # most calls, once the launches are claimed: no key to make
            return None
        task = self._running.pop(_key(tool, arguments), None)
        if task is not None:
            self.claimed += 1
            log_event("code_mode.speculative_claimed", tool=tool)
        return task

    def invalidate(self) -> None:
        """A mutating call is about to start: a launch may have read the world before it, so none
        is claimed after it (the snippet's own calls go to the server) and none starts later."""
        self._closed = True
        for task in self._running.values():
            task.cancel()
        self._dropped += self._running.values()
        self._running.clear()

    async def cancel_rest(self) -> None:
        """The snippet ended: what it never claimed is stopped, and its result dropped."""
        tasks = [*self._running.values(), *self._dropped]
        self._running.clear()
        self._dropped.clear()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
            for task in tasks:
                if not task.cancelled():
                    task.exception()  # retrieved: an unclaimed failure is nobody's error
            log_event("code_mode.speculative_cancelled", count=len(tasks))

    def report(self) -> dict[str, int]:
        """Launches, and what became of them (an unclaimed one is cancelled as the snippet ends)."""
        return {"launched": self.launched, "claimed": self.claimed, "cancelled": self.launched - self.claimed}
