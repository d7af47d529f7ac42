"""Stage 2 of a snippet, *plan*: what runs, and how, decided from what ``read`` found. Pure
functions: no worker, no I/O.

- Whether it runs at all (``refusal``): a tool function or an internal name rebound, a call
  without ``await``.
- Whether the type check runs (``type_check_wanted``) and whether the variables probe rides on
  the snippet's own feed (``plan_feed``).
- Which read-only calls may start before the snippet reaches them (``may_speculate``).
- Which statements of a snippet that is still streaming may run now (eager execution). The model
  writes ``run_code``'s ``code`` a few tokens at a time; a top-level statement is complete once
  the next one has begun at column 0. A complete statement runs early only when it cannot change
  the world: every call in it is a read-only catalog function, a built-in, a helper or a method of
  a value (a mutating call reached anyway, through an object, is held at run time until the whole
  snippet has arrived and passed its checks). The last statement always waits for the stream's
  end, since its value is the snippet's.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from asyncai.code_mode.catalog.entries import CatalogEntry, os_denied_text
from asyncai.code_mode.catalog.host_functions import HOST_FUNCTIONS
from asyncai.code_mode.catalog.stubs import RESERVED_HELPERS
from asyncai.code_mode.engine.contract import RunCodeText, preview_chars, tool_name_taken
from asyncai.code_mode.engine.preamble import BOUNDED, DISABLED_BUILTINS, INTERNAL_PREFIX
from asyncai.code_mode.engine.read import (
    LAST_VALUE,
    SCAN_ON_LOOP_CHARS,
    SNIPPET_FILE,
    SnippetScan,
    bind_last_value,
    parse_snippet,
    scan_snippet,
)
from asyncai.code_mode.engine.type_check import check_can_catch
from asyncai.code_mode.engine.variables import names_to_probe, probe_source

TYPE_CHECKED_SNIPPETS = 100
"""Snippets of one REPL that are type-checked; later ones run unchecked (``type_check_wanted``)."""


def refusal(scan: SnippetScan, catalog: Mapping[str, CatalogEntry]) -> RunCodeText | None:
    """An error for a snippet that must not run, from what the scan found. A helper's name may
    be bound (the helper is then shadowed in this REPL); a tool function's may not. A listing of
    files the sandbox would answer with nothing is refused before it runs (``read.empty_listings``)."""
    taken = [name for name in scan.bound if name in catalog]
    if taken:
        return RunCodeText(tool_name_taken(taken, scan.defined), is_error=True)
    for name in scan.bound:
        if name.startswith(INTERNAL_PREFIX) or name in DISABLED_BUILTINS:
            text = (
                f"error: `{name}` is reserved for asyncai and cannot be rebound; "
                f"pick another name (e.g. `{name}_`). Nothing was run."
            )
            return RunCodeText(text, is_error=True)
    if scan.empty_listings:
        text = (
            f"error: `{scan.empty_listings[0]}()` finds no files in the sandbox, without an error, so it "
            f"is refused: "
            f"{os_denied_text(catalog)}. Nothing was run."
        )
        return RunCodeText(text, is_error=True)
    if scan.unawaited:
        call = scan.unawaited[0]
        text = (
            f"error: `{call}(...)` is called without await, so it would never run. "
            f"Write `result = await {call}(...)`. Nothing was run."
        )
        return RunCodeText(text, is_error=True)
    return None


def type_check_wanted(
    code: str, scan: SnippetScan, catalog: Mapping[str, CatalogEntry], checked_snippets: int
) -> bool:
    """Whether ``code`` is type-checked (unless the catalog changed since its worker's checkout).
    Only a snippet that names a catalog function can make a mistake the check is sure of, and
    only one the check might stop (``type_check.check_can_catch``; a long snippet is not parsed
    again on the event loop, and is checked). The checker re-reads the REPL's checked history on
    every feed (45 ms after 300 snippets, measured), so a long-lived REPL stops checking after
    ``TYPE_CHECKED_SNIPPETS``."""
    if not scan.uses_functions or checked_snippets >= TYPE_CHECKED_SNIPPETS:
        return False
    tree = scan.tree
    if tree is None and len(code) <= SCAN_ON_LOOP_CHARS:
        tree = parse_snippet(code)
    return tree is None or check_can_catch(tree, catalog, scan.nodes)


def may_speculate(entry: CatalogEntry, *, enabled: bool, also: Collection[str] = ()) -> bool:
    """Whether a call of ``entry`` with literal arguments may start before the snippet reaches it:
    a read-only tool that is not destructive, or one named in ``also``."""
    tool = entry.tool
    return (
        enabled
        and not entry.host_function
        and (tool.name in also or (tool.read_only and not tool.destructive))
    )


def wants_restart(arguments: Mapping[str, Any]) -> bool:
    """Whether the call asks for a fresh REPL (``restart``, as a model may spell true)."""
    return arguments.get("restart") in (True, "true", "True", 1)


def finished_refusal(
    arguments: Mapping[str, Any], fed: str, catalog: Mapping[str, CatalogEntry]
) -> tuple[str | None, SnippetScan | None]:
    """Why the rest of a streamed snippet must not run once its whole call arrived (``None``: it
    may), after the statements ``fed`` ran early; and the whole snippet's scan, when it got that
    far."""
    code = arguments.get("code")
    if not isinstance(code, str):
        return "the call has no code", None
    if not code.startswith(fed):
        return "the finished code differs from the code that streamed", None
    if wants_restart(arguments):
        return "restart was asked for after statements had already run", None
    if parse_snippet(code) is None:
        return "the finished snippet does not compile", None
    scan = scan_snippet(code, catalog.keys())
    refused = refusal(scan, catalog)
    if refused is not None:
        reason = refused.text.removeprefix("error: ").removesuffix(" Nothing was run.")
        return f"the finished snippet was refused ({reason})", scan
    return None, scan


@dataclass(frozen=True)
class FeedPlan:
    """How a piece of a snippet is fed to its worker."""

    source: str
    """What the worker runs: the code with its value bound to ``_``, and maybe the probe."""
    type_check: bool
    probed: tuple[str, ...] | None
    """The names whose variables probe rides on this feed (its value is then ``(value, rows)``);
    ``None``: the probe, if any, is its own feed afterwards."""


def plan_feed(
    code: str, scan: SnippetScan, *, type_check: bool, pausing: bool, held: list[str], result_chars: int
) -> FeedPlan:
    """The feed of ``code`` in a REPL holding ``held`` (oldest first). Its value leaves the sandbox
    through ``preamble.BOUNDED`` (a value over ``result_chars`` stays in, only its JSON's length and
    head cross) unless the feed is type-checked (the checker knows no helper). The variables probe of
    the names it may have changed (``names_to_probe``) rides on the snippet's own feed (one round
    trip instead of two) unless the snippet is type-checked (a probe would be checked too) or may
    pause (its snapshot ends the feed)."""
    source = bind_last_value(code, scan.value_at, scan.assigned)
    if type_check:
        return FeedPlan(source, True, None)
    value = None if source == code else LAST_VALUE if scan.value_at is not None else scan.assigned
    if value is not None:
        value = f"{BOUNDED}({value}, {result_chars}, {preview_chars(result_chars)})"
    fed = source if value is None else f"{source}\n{value}"
    if pausing:
        return FeedPlan(fed, False, None)
    names = names_to_probe(source, held, list(scan.bound))
    if not names:  # nothing it did can show in the note: no probe, and every row stays
        return FeedPlan(fed, False, ())
    probe = probe_source(list(reversed(names))).rsplit("\n", 1)[0]  # its statements, not its value
    return FeedPlan(f"{source}\n{probe}\n({value or 'None'}, _asyncai_probe)", False, tuple(names))


CONTINUATIONS = ("else", "elif", "except", "finally", "case")
_FIRST_WORD = re.compile(r"[A-Za-z_]\w*[^\w]")
"""Keywords that go on the statement above them, not start one."""
SAFE_BUILTINS = frozenset(
    {
        "abs", "all", "any", "bool", "dict", "divmod", "enumerate", "filter", "float", "format",
        "frozenset", "hash", "int", "isinstance", "issubclass", "iter", "len", "list", "map", "max",
        "min", "next", "print", "range", "repr", "reversed", "round", "set", "sorted", "str", "sum",
        "tuple", "type", "zip",
    }
)  # fmt: skip
SAFE_MODULES = frozenset({"asyncio", "json", "re", "math"})
"""Modules whose functions a statement may call (``asyncio.gather``, ``json.dumps``)."""


@dataclass(frozen=True)
class Statement:
    """A complete top-level statement (or a decorated definition with its decorators)."""

    source: str
    start_line: int
    """1-based, in the whole snippet."""


def complete_statements(prefix: str, fed_lines: int) -> list[Statement]:
    """The statements of ``prefix`` after its first ``fed_lines`` lines that are complete: each one
    followed by the start of another at column 0. The statement being written is not among them."""
    lines = prefix.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n") and _may_continue(lines[-1]):
        lines = lines[:-1]  # a line still arriving that may yet become ``else:`` starts nothing
    statements: list[Statement] = []
    start = fed_lines
    for number in range(fed_lines + 1, len(lines)):
        if not _starts_statement(lines[number]):
            continue
        source = "".join(lines[start:number])
        if _nothing_to_run(source):  # comments and blank lines before the first statement
            start = number
            continue
        if _parses(source):
            statements.append(Statement(source, start + 1))
            start = number
    return statements


def _nothing_to_run(source: str) -> bool:
    return all(not line.strip() or line.lstrip().startswith("#") for line in source.splitlines())


def _may_continue(partial: str) -> bool:
    """Whether a line that is still arriving may turn out not to start a statement."""
    if not partial or partial[0] in " \t\r#)]}":
        return True
    if _FIRST_WORD.match(partial):
        return not _starts_statement(partial)
    return any(keyword.startswith(partial) for keyword in CONTINUATIONS)


def _starts_statement(line: str) -> bool:
    if line.startswith("@"):
        return True  # a decorator starts its definition
    if not line or line[0] in " \t\n\r#)]}":
        return False
    word = line.split(None, 1)[0].split(":", 1)[0]
    return word not in CONTINUATIONS


def _parses(source: str) -> bool:
    try:
        ast.parse(source, SNIPPET_FILE)
    except (SyntaxError, ValueError):
        return False
    return True


def runs_early(
    statement: Statement, catalog: Mapping[str, CatalogEntry], bound: Collection[str] = ()
) -> bool:
    """Whether ``statement`` may run before the snippet has fully arrived: it calls only read-only
    catalog functions, built-ins, helpers, functions of ``SAFE_MODULES`` and methods of values,
    and binds no name the scan protects."""
    try:
        tree = ast.parse(statement.source, SNIPPET_FILE)
    except (SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and not _safe_callee(node.func, catalog, bound):
            return False
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and _protected(node.id, catalog):
            return False
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            return False  # a definition is cheap: nothing is gained by running it early
        if isinstance(node, ast.Import | ast.ImportFrom | ast.Global | ast.Nonlocal | ast.Delete):
            return False
    return True


def _safe_callee(func: ast.expr, catalog: Mapping[str, CatalogEntry], bound: Collection[str]) -> bool:
    if isinstance(func, ast.Name):
        name = func.id
        if name in bound:
            return False  # the snippet rebinds it: not the function it names now
        entry = catalog.get(name)
        if entry is not None:
            return entry.host_function or not entry.tool.mutating
        return name in SAFE_BUILTINS or name in RESERVED_HELPERS or name in HOST_FUNCTIONS
    if isinstance(func, ast.Attribute):
        if isinstance(func.value, ast.Name) and func.value.id in SAFE_MODULES:
            return True
        return not (isinstance(func.value, ast.Name) and func.value.id in catalog)
    return False


def _protected(name: str, catalog: Mapping[str, CatalogEntry]) -> bool:
    # A helper's name may be bound (it shadows the helper); a later call of it then is not safe.
    return name in catalog or name in HOST_FUNCTIONS or name.startswith("_asyncai")
