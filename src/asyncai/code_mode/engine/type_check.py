"""The type check before a snippet runs: pydantic-monty checks each feed against stubs (ty inside
the worker), so a wrong call fails before the first tool runs.

A check that rejects valid code is worse than none, so only what is certain stops a snippet:

- the shape of a call to a catalog function: a missing or unknown keyword, positional arguments,
  a keyword given twice;
- a literal of the wrong kind for a parameter (``limit="ten"`` for an ``int``), not a variable:
  the checker's idea of a variable from an earlier snippet can be stale (a feed that failed half
  way, or ran unchecked), and ``1.0`` for an ``int`` or ``1`` for a ``bool`` may well be accepted;
- a coroutine used as a value (a missing ``await``): a tool call, or a name the snippet itself
  bound to one, at the spot the checker points at.

Anything else the checker reports (an unknown name, an attribute it cannot see) lets the snippet
run unchecked: Monty itself raises if it really is wrong.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from asyncai.code_mode.catalog.entries import CatalogEntry, call_mistakes
from asyncai.code_mode.catalog.stubs import render_signature
from asyncai.code_mode.engine.variables import SCAN_ON_LOOP_CHARS, parse_snippet

SCRIPT_NAME = "run_code.py"
HEADER = "from typing import Any, Literal\nimport asyncio\nimport json\nimport re\n"
HELPER_STUBS = """
def items(x: Any) -> list[Any]: ...
def names(x: Any) -> list[Any]: ...
def dig(obj: Any, *path: Any, default: Any = None) -> Any: ...
def count_by(xs: Any, *path: Any) -> dict[Any, int]: ...
def to_json(x: Any, indent: int | None = None) -> str: ...
def shape(x: Any) -> str: ...
"""
CALL_SHAPE_RULES = frozenset(
    {"missing-argument", "unknown-argument", "too-many-positional-arguments", "parameter-already-assigned"}
)
_DIAGNOSTIC = re.compile(rf"^{re.escape(SCRIPT_NAME)}:(\d+):(\d+): error\[([\w-]+)\] (.*)$")
_FUNCTION = re.compile(r"function `([^`]+)`")
_ARGUMENT_TYPES = re.compile(r"Expected `(.+)`, found `(.+)`$")
_STR_LITERAL = re.compile(r"^Literal\[(['\"]).*\1\]$")
_INT_LITERAL = re.compile(r"^Literal\[-?\d+\]$")
_LITERAL_SOURCE = re.compile(r"\s*(['\"]|-?\d)")
_NUMERIC = ("int", "float", "bool", "complex")


def type_check_stubs(catalog: Mapping[str, CatalogEntry]) -> str:
    """Every catalog function's signature (returning ``Any``) and the helpers'."""
    signatures = "\n".join(render_signature(name, entry.tool) for name, entry in catalog.items())
    return HEADER + HELPER_STUBS + signatures + "\n"


@dataclass(frozen=True)
class Diagnostic:
    line: int
    column: int
    rule: str
    message: str

    @property
    def function(self) -> str | None:
        found = _FUNCTION.search(self.message)
        return found.group(1) if found else None


def parse_diagnostics(text: str) -> list[Diagnostic]:
    """The snippet's errors in ty's ``concise`` format (diagnostics about the stubs are left out)."""
    found = []
    for line in text.splitlines():
        match = _DIAGNOSTIC.match(line.strip())
        if match:
            found.append(Diagnostic(int(match[1]), int(match[2]), match[3], match[4]))
    return found


def _source_at(diagnostic: Diagnostic, lines: list[str]) -> str:
    source = lines[diagnostic.line - 1] if 0 < diagnostic.line <= len(lines) else ""
    return source[max(diagnostic.column - 1, 0) :]


def argument_at(diagnostic: Diagnostic, lines: list[str]) -> tuple[str | None, str]:
    """(keyword, the source from its value on) of the argument the diagnostic points at."""
    rest = _source_at(diagnostic, lines)
    keyword = re.match(r"(\w+)\s*=(?!=)\s*", rest)
    return (keyword[1], rest[keyword.end() :]) if keyword else (None, rest)


def is_certain(
    diagnostic: Diagnostic,
    lines: list[str],
    functions: Mapping[str, CatalogEntry],
    bound_here: Collection[str] = (),
) -> bool:
    """Whether ``diagnostic`` is sure to be a mistake (the module docstring says which are)."""
    if "CoroutineType[" in diagnostic.message:
        # Only a tool call, or a name this snippet bound, at the spot: a variable from an earlier
        # snippet may have been rebound since where the checker did not look.
        name = re.match(r"\s*(\w+)\s*(\()?", _source_at(diagnostic, lines))
        return name is not None and ((name[1] in functions and name[2] is not None) or name[1] in bound_here)
    if diagnostic.function not in functions:
        return False
    if diagnostic.rule in CALL_SHAPE_RULES:
        return True
    if diagnostic.rule != "invalid-argument-type":
        return False
    types = _ARGUMENT_TYPES.search(diagnostic.message)
    if types is None or not _LITERAL_SOURCE.match(argument_at(diagnostic, lines)[1]):
        return False  # not a literal written here: the checker's idea of a variable may be stale
    return not literal_accepted(types[1], types[2])


def literal_accepted(expected: str, found: str) -> bool:
    """Whether a parameter typed ``expected`` could take the literal ``found`` (ty's renderings,
    e.g. ``Literal["a", "b"] | None`` and ``Literal["x"]``); unsure cases count as accepted."""
    plain: tuple[str, ...]
    if _STR_LITERAL.match(found):
        plain = ("str", "LiteralString")
    elif _INT_LITERAL.match(found):
        plain = _NUMERIC
    else:
        return True
    value = found.removeprefix("Literal[").removesuffix("]")
    for member in expected.split(" | "):
        if member in (*plain, "Any", "object") or member.startswith(("Unknown", "@Todo")):
            return True
        if member.startswith("Literal[") and value in member.removeprefix("Literal[").removesuffix("]").split(
            ", "
        ):
            return True
    return False


def rejection(
    text: str,
    code: str,
    functions: Mapping[str, CatalogEntry],
    bound_here: Collection[str] = (),
    launched: int = 0,
) -> str | None:
    """The error result for a snippet the check stops, or ``None`` to let it run unchecked;
    ``bound_here`` are the names the snippet itself binds, ``launched`` the read-only calls started
    early while it streamed (speculation). A wrong call is worded as the host's own check words it
    (``TypeError: f() got an unexpected keyword argument 'x'; accepted: a, b``), every mistake of it
    listed, with its line."""
    lines = code.splitlines()
    certain = [d for d in parse_diagnostics(text) if is_certain(d, lines, functions, bound_here)]
    if not certain:
        return None
    calls = _calls_by_line(code, functions)
    listed: list[str] = []
    for diagnostic in certain:
        if diagnostic.rule in CALL_SHAPE_RULES and diagnostic.function in functions:
            found = [call for call in calls.get(diagnostic.line, []) if call[0] == diagnostic.function]
            mistakes = [
                f"- line {diagnostic.line}: TypeError: {mistake}"
                for name, positional, keywords in found
                for mistake in call_mistakes(name, functions[name], positional, keywords)
            ]
            if mistakes:
                listed.extend(m for m in mistakes if m not in listed)
                continue
        line = f"- line {diagnostic.line}: {_readable(diagnostic, lines, functions)}"
        if line not in listed:
            listed.append(line)
    return "\n".join(
        [
            "error: the type check found mistakes before anything ran "
            + (
                f"(the snippet called no tool; {launched} read-only "
                f"call{'s' if launched > 1 else ''} started early while it streamed, unused):"
                if launched
                else "(no tool was called):"
            ),
            *listed,
            "Fix them and run the snippet again.",
        ]
    )


def _calls_by_line(
    code: str, functions: Mapping[str, CatalogEntry]
) -> dict[int, list[tuple[str, list[str], list[str]]]]:
    """Line -> the catalog calls starting there: (name, positional arguments' source, keywords)."""
    found: dict[int, list[tuple[str, list[str], list[str]]]] = {}
    if len(code) > SCAN_ON_LOOP_CHARS:  # not parsed on the event loop: ty's own wording then
        return found
    tree = parse_snippet(code)
    if tree is None:
        return found
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions:
            positional = [ast.get_source_segment(code, arg) or "..." for arg in node.args]
            keywords = [keyword.arg for keyword in node.keywords if keyword.arg is not None]
            found.setdefault(node.lineno, []).append((node.func.id, positional, keywords))
    return found


def _readable(diagnostic: Diagnostic, lines: list[str], functions: Mapping[str, CatalogEntry]) -> str:
    """ty's message with what it leaves implicit: the keyword a wrong value was given for, the
    keywords a function takes, the missing ``await``."""
    message = diagnostic.message
    entry = functions.get(diagnostic.function or "")
    if diagnostic.rule == "invalid-argument-type" and entry is not None:
        keyword, _ = argument_at(diagnostic, lines)
        types = _ARGUMENT_TYPES.search(message)
        if keyword and types:
            found = types[2].removeprefix("Literal[").removesuffix("]")
            return f"TypeError: {diagnostic.function}(): `{keyword}` must be {types[1]}, not {found}"
    if diagnostic.rule == "unknown-argument" and entry is not None:
        accepted = ", ".join(entry.parameters) or "none"
        return f"{message} (it takes: {accepted})"
    if "CoroutineType[" in message:
        return f"{message}: a tool call needs `await` (`result = await tool(...)`)"
    return message


_LITERAL_KINDS: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
}


def check_can_catch(
    tree: ast.Module, catalog: Mapping[str, CatalogEntry], nodes: Sequence[ast.AST] | None = None
) -> bool:
    """Whether the type check could stop this snippet. ``False`` only when every use of a catalog
    function is a call of a known shape, awaited (``await f(k=v)``) or gathered (``await
    asyncio.gather(f(...), *[g(...) for ...])``), with no literal of the wrong kind: then the
    check (about a millisecond, and the checker's upkeep after it) would find nothing it is sure of.
    ``nodes``: the tree's nodes in ``ast.walk`` order, when the caller has them already."""
    nodes = tuple(ast.walk(tree)) if nodes is None else nodes
    placed: set[int] = set()
    for node in nodes:
        if isinstance(node, ast.Await) and isinstance(node.value, ast.Call):
            call = node.value
            if not _is_gather(call):
                placed.add(id(call))
                continue
            for arg in call.args:
                inner = arg.value if isinstance(arg, ast.Starred) else arg
                if isinstance(inner, ast.ListComp | ast.GeneratorExp):
                    inner = inner.elt
                if isinstance(inner, ast.Call):
                    placed.add(id(inner))
    called: set[int] = set()
    for node in nodes:  # breadth first: a call before the name it calls
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in catalog:
            if id(node) not in placed or not _well_formed(node, catalog[node.func.id]):
                return True
            called.add(id(node.func))
        elif isinstance(node, ast.Name) and node.id in catalog and id(node) not in called:
            return True  # a catalog function used as a value
    return False


def _is_gather(call: ast.Call) -> bool:
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "gather"
        and isinstance(func.value, ast.Name)
        and func.value.id == "asyncio"
    )


def _well_formed(call: ast.Call, entry: CatalogEntry) -> bool:
    if call.args or any(keyword.arg is None for keyword in call.keywords):
        return False
    names = [str(keyword.arg) for keyword in call.keywords]
    if call_mistakes("f", entry, [], names):
        return False
    properties = entry.tool.input_schema.get("properties") or {}
    for keyword in call.keywords:
        kind = _literal_kind(keyword.value)
        if kind is _NOT_LITERAL:
            continue
        schema = properties.get(entry.parameters[str(keyword.arg)]) if isinstance(properties, dict) else None
        expected = schema.get("type") if isinstance(schema, dict) else None
        if not isinstance(expected, str) or expected not in _LITERAL_KINDS:
            continue  # a union, or no type: the checker is not sure either
        if kind is None or not isinstance(kind, _LITERAL_KINDS[expected]):
            return False
        if isinstance(kind, bool) and expected in ("integer", "number"):
            return False
    return True


_NOT_LITERAL = object()


def _literal_kind(node: ast.expr) -> Any:
    """A literal's value (enough to know its kind), or ``_NOT_LITERAL`` for anything else."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.List | ast.Tuple):
        return []
    if isinstance(node, ast.Dict):
        return {}
    return _NOT_LITERAL
