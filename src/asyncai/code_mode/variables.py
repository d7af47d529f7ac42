"""What a snippet binds at module level: the reserved-helper check (A11) and the variables note.

Names are found with CPython's ``ast`` on the snippet's source. Monty is a subset of Python, so
anything Monty runs parses here; a snippet that does not parse is left to Monty to report.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .preamble import INTERNAL_PREFIX

MAX_NOTE_NAMES = 30
MAX_NOTE_CHARS = 600
_SIZED_TYPES = ("list", "dict", "str", "tuple", "set", "frozenset", "bytes")


def parse_snippet(code: str) -> ast.Module | None:
    try:
        tree = compile(code, "<snippet>", "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except (SyntaxError, ValueError):
        return None
    return tree if isinstance(tree, ast.Module) else None


def _target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [name for element in target.elts for name in _target_names(element)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return []


def _statement_names(node: ast.stmt) -> list[str]:
    match node:
        case ast.Assign(targets=targets):
            return [name for target in targets for name in _target_names(target)]
        case ast.AnnAssign(target=target) | ast.AugAssign(target=target):
            return _target_names(target)
        case ast.For(target=target) | ast.AsyncFor(target=target):
            inner = [name for child in node.body + node.orelse for name in _statement_names(child)]
            return _target_names(target) + inner
        case ast.FunctionDef(name=name) | ast.AsyncFunctionDef(name=name) | ast.ClassDef(name=name):
            return [name]
        case ast.Import(names=aliases) | ast.ImportFrom(names=aliases):
            return [(alias.asname or alias.name).split(".")[0] for alias in aliases]
        case ast.With(items=items) | ast.AsyncWith(items=items):
            bound = [n for item in items if item.optional_vars for n in _target_names(item.optional_vars)]
            return bound + [name for child in node.body for name in _statement_names(child)]
        case ast.If(body=body, orelse=orelse) | ast.While(body=body, orelse=orelse):
            return [name for child in body + orelse for name in _statement_names(child)]
        case ast.Try(body=body, orelse=orelse, finalbody=final, handlers=handlers):
            children = body + orelse + final + [s for h in handlers for s in h.body]
            return [name for child in children for name in _statement_names(child)]
        case ast.Expr(value=ast.NamedExpr(target=target)):
            return _target_names(target)
    return []


def bound_names(code: str) -> list[str]:
    """Module-level names the snippet binds, in order of first appearance, without duplicates."""
    tree = parse_snippet(code)
    if tree is None:
        return []
    seen: dict[str, None] = {}
    for statement in tree.body:
        for name in _statement_names(statement):
            seen.setdefault(name, None)
    return list(seen)


def rebound_helper(code: str, reserved: tuple[str, ...]) -> str | None:
    """The first reserved helper name the snippet rebinds at module level, if any."""
    return next((name for name in bound_names(code) if name in reserved), None)


def note_candidates(names: list[str]) -> list[str]:
    return [name for name in names if not name.startswith(INTERNAL_PREFIX)]


def probe_source(names: list[str]) -> str:
    """Sandbox code returning ``[(name, type name, size or -1), ...]`` for the names still bound."""
    lines = ["_asyncai_probe = []"]
    for name in names:
        lines += [
            "try:",
            f"    _asyncai_value = {name}",
            "    _asyncai_size = -1",
            f"    if type(_asyncai_value).__name__ in {_SIZED_TYPES!r}:",
            "        _asyncai_size = len(_asyncai_value)",
            f"    _asyncai_probe.append(({name!r}, type(_asyncai_value).__name__, _asyncai_size))",
            "except NameError:",
            "    pass",
        ]
    lines.append("_asyncai_probe")
    return "\n".join(lines)


@dataclass(frozen=True)
class BoundVariable:
    name: str
    type_name: str
    size: int = -1

    def describe(self) -> str:
        return (
            f"{self.name}: {self.type_name}[{self.size}]"
            if self.size >= 0
            else f"{self.name}: {self.type_name}"
        )


def format_note(variables: list[BoundVariable]) -> str | None:
    """``[run_code variables still in scope: pods: list[80], n: int]``: at most 30 names, 600 chars."""
    if not variables:
        return None
    parts: list[str] = []
    length = 0
    for variable in variables[:MAX_NOTE_NAMES]:
        text = variable.describe()
        if length + len(text) + 2 > MAX_NOTE_CHARS:
            break
        parts.append(text)
        length += len(text) + 2
    omitted = len(variables) - len(parts)
    listing = ", ".join(parts) + (f", ... ({omitted} more)" if omitted else "")
    return f"[run_code variables still in scope: {listing}]"
