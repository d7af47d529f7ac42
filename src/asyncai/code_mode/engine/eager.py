"""Which statements of a snippet that is still streaming may run now (eager execution).

The model writes ``run_code``'s ``code`` a few tokens at a time; a top-level statement is complete
once the next one has begun at column 0. A complete statement runs early only when it cannot
change the world: every call in it is a read-only catalog function, a built-in, a helper or a
method of a value (a mutating call reached anyway, through an object, is held at run time until
the whole snippet has arrived and passed its checks). The last statement always waits for the
stream's end, since its value is the snippet's. Pure functions: no worker, no I/O.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from asyncai.code_mode.catalog.entries import CatalogEntry
from asyncai.code_mode.catalog.host_functions import HOST_FUNCTIONS
from asyncai.code_mode.catalog.stubs import RESERVED_HELPERS

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
        ast.parse(source)
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
        tree = ast.parse(statement.source)
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
