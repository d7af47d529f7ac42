"""The type check before a snippet runs: pydantic-monty checks each feed against stubs (ty inside
the worker), so a wrong call fails before the first tool runs.

A check that rejects valid code is worse than none, so only what is certain stops a snippet:

- the shape of a call to a catalog function: a missing or unknown keyword, positional arguments,
  a keyword given twice;
- a literal of the wrong kind for a parameter (``limit="ten"`` for an ``int``), not a variable:
  the checker's idea of a variable from an earlier snippet can be stale (a feed that failed half
  way, or ran unchecked), and ``1.0`` for an ``int`` or ``1`` for a ``bool`` may well be accepted;
- a coroutine used as a value (a missing ``await``): a tool call, or a name the snippet itself
  bound to one, at the spot the checker points at;
- in a dict written in a tool call's argument (nested objects are TypedDicts in the stubs): a
  required key missing, or a literal of the wrong kind for a key.

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
from asyncai.code_mode.catalog.stubs import StubTypes, catalog_types, inline_local_refs, render_signature
from asyncai.code_mode.engine.read import SCAN_ON_LOOP_CHARS, parse_snippet

SCRIPT_NAME = "run_code.py"
HEADER = "from typing import Any, Literal, NotRequired, TypedDict\nimport asyncio\nimport json\nimport re\n"
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
_MISSING_KEY = re.compile(r"^Missing required key '(?P<key>[^']+)' in TypedDict `(?P<typed>\w+)`")
_KEY_TYPE = re.compile(
    r'^Invalid argument to key "(?P<key>[^"]+)" with declared type `(?P<expected>.+)` on TypedDict '
    r"`(?P<typed>\w+)`: value of type `(?P<found>.+)`$"
)
_DIAGNOSTIC = re.compile(rf"^{re.escape(SCRIPT_NAME)}:(\d+):(\d+): error\[([\w-]+)\] (.*)$")
_FUNCTION = re.compile(r"function `([^`]+)`")
_ARGUMENT_TYPES = re.compile(r"Expected `(.+)`, found `(.+)`$")
_STR_LITERAL = re.compile(r"^Literal\[(['\"]).*\1\]$")
_INT_LITERAL = re.compile(r"^Literal\[-?\d+\]$")
_LITERAL_SOURCE = re.compile(r"\s*(['\"]|-?\d)")
_NUMERIC = ("int", "float", "bool", "complex")


def stub_types(catalog: Mapping[str, CatalogEntry]) -> StubTypes:
    """The catalog's TypedDicts, named as the description names them."""
    return catalog_types({name: entry.tool for name, entry in catalog.items()})


def type_check_stubs(catalog: Mapping[str, CatalogEntry]) -> str:
    """Every catalog function's signature (returning ``Any``), the TypedDicts they name, and the
    helpers'."""
    types = stub_types(catalog)
    signatures = "\n".join(render_signature(name, entry.tool, types) for name, entry in catalog.items())
    classes = "".join(f"\n{source}\n" for source in types.sources.values())
    return HEADER + HELPER_STUBS + classes + signatures + "\n"


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


@dataclass(frozen=True)
class _InArgument:
    """Where a node sits inside a literal argument of a catalog call: ``entities[0]['name']``."""

    function: str
    path: str
    node: ast.AST


def _node_at(tree: ast.Module, code_lines: list[str], line: int, column: int) -> list[ast.AST]:
    """The expressions that start at ``line``:``column`` (ty's: 1-based, in characters)."""
    text = code_lines[line - 1] if 0 < line <= len(code_lines) else ""
    prefix = text.encode()
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.expr)
        and node.lineno == line
        and len(prefix[: node.col_offset].decode(errors="replace")) == column - 1
    ]


def _path_to(node: ast.AST, target: ast.AST, path: str) -> str | None:
    """``path`` extended down to ``target`` through literal containers only (a list, a dict with
    str keys, a comprehension's element, ``dict(k=v)``, a conditional), else ``None``."""
    if node is target:
        return path
    children: list[tuple[ast.AST, str]] = []
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        children = [(element, f"{path}[{index}]") for index, element in enumerate(node.elts)]
    elif isinstance(node, ast.Dict):
        children = [
            (value, f"{path}[{key.value!r}]")
            for key, value in zip(node.keys, node.values, strict=True)
            if isinstance(key, ast.Constant) and isinstance(key.value, str)
        ]
    elif isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp):
        children = [(node.elt, f"{path}[...]")]
    elif isinstance(node, ast.IfExp):
        children = [(node.body, path), (node.orelse, path)]
    elif isinstance(node, ast.Call):
        children = [(k.value, f"{path}[{k.arg!r}]") for k in node.keywords if k.arg is not None]
    for child, where in children:
        found = _path_to(child, target, where)
        if found is not None:
            return found
    return None


def _in_argument(
    tree: ast.Module, code_lines: list[str], functions: Mapping[str, CatalogEntry], line: int, column: int
) -> _InArgument | None:
    """The node at ``line``:``column`` when it is written inside a literal argument of a catalog call."""
    targets = _node_at(tree, code_lines, line, column)
    if not targets:
        return None
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions):
            continue
        for argument in node.keywords:
            if argument.arg is None:
                continue
            for target in targets:
                path = _path_to(argument.value, target, argument.arg)
                if path is not None:
                    return _InArgument(node.func.id, path, target)
    return None


def _plain_dict(node: ast.AST) -> bool:
    """A dict display or ``dict(k=v)``/``Entity(k=v)`` with every key written out: no ``**``
    (with one, ty reports keys missing that the unpacked mapping may hold)."""
    if isinstance(node, ast.Dict):
        return all(key is not None for key in node.keys)
    if isinstance(node, ast.Call):
        return not node.args and all(keyword.arg is not None for keyword in node.keywords)
    return False


def is_certain(
    diagnostic: Diagnostic,
    lines: list[str],
    functions: Mapping[str, CatalogEntry],
    bound_here: Collection[str] = (),
    tree: ast.Module | None = None,
) -> bool:
    """Whether ``diagnostic`` is sure to be a mistake (the module docstring says which are);
    ``tree`` is the parsed snippet, for mistakes inside a dict argument."""
    if diagnostic.rule == "missing-typed-dict-key" or _KEY_TYPE.match(diagnostic.message):
        return tree is not None and _typed_dict_mistake(diagnostic, lines, functions, tree) is not None
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


def _typed_dict_mistake(
    diagnostic: Diagnostic, lines: list[str], functions: Mapping[str, CatalogEntry], tree: ast.Module
) -> str | None:
    """The mistake in a dict written in a tool call's argument, worded as the host words a call's
    mistakes, when it is certain: a required key missing (no ``**`` in the dict), or a literal of
    the wrong kind for a key."""
    missing = _MISSING_KEY.match(diagnostic.message)
    wrong = _KEY_TYPE.match(diagnostic.message)
    located = _in_argument(tree, lines, functions, diagnostic.line, diagnostic.column)
    if located is None:
        return None
    if missing is not None and _plain_dict(located.node):
        return (
            f"TypeError: {located.function}(): `{located.path}` is missing required key "
            f"'{missing['key']}' (see {missing['typed']} in the stubs)"
        )
    if (
        wrong is not None
        and isinstance(located.node, ast.Constant)
        and _LITERAL_SOURCE.match(_source_at(diagnostic, lines))
        and not literal_accepted(wrong["expected"], wrong["found"])
    ):
        found = wrong["found"].removeprefix("Literal[").removesuffix("]")
        return f"TypeError: {located.function}(): `{located.path}` must be {wrong['expected']}, not {found}"
    return None


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
    tree = parse_snippet(code) if len(code) <= SCAN_ON_LOOP_CHARS else None  # not parsed on the loop
    certain = [d for d in parse_diagnostics(text) if is_certain(d, lines, functions, bound_here, tree)]
    if not certain:
        return None
    calls = _calls_by_line(tree, code, functions)
    listed: list[str] = []
    for diagnostic in certain:
        if tree is not None and (mistake := _typed_dict_mistake(diagnostic, lines, functions, tree)):
            if (line := f"- line {diagnostic.line}: {mistake}") not in listed:
                listed.append(line)
            continue
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
    tree: ast.Module | None, code: str, functions: Mapping[str, CatalogEntry]
) -> dict[int, list[tuple[str, list[str], list[str]]]]:
    """Line -> the catalog calls starting there: (name, positional arguments' source, keywords);
    none without a tree (a long snippet is not parsed on the event loop: ty's own wording then)."""
    found: dict[int, list[tuple[str, list[str], list[str]]]] = {}
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
        if _writes_dict(keyword.value) and _has_typed_dict(entry, str(keyword.arg)):
            return False  # a dict written for a parameter whose objects are TypedDicts: check its keys
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


def _writes_dict(node: ast.expr) -> bool:
    """Whether a dict is written inside the argument ``node`` (a display or a call with keywords)."""
    return any(
        isinstance(child, ast.Dict) or (isinstance(child, ast.Call) and child.keywords)
        for child in ast.walk(node)
    )


def _has_typed_dict(entry: CatalogEntry, parameter: str) -> bool:
    """Whether the schema of ``parameter`` holds an object with properties (a TypedDict in the stubs)."""
    properties = inline_local_refs(entry.tool.input_schema).get("properties")
    schema = properties.get(entry.parameters.get(parameter, "")) if isinstance(properties, dict) else None

    def objects(node: Any) -> bool:
        if isinstance(node, list):
            return any(objects(item) for item in node)
        if not isinstance(node, dict):
            return False
        props = node.get("properties")
        if isinstance(props, dict) and props:
            return True
        return any(objects(value) for key, value in node.items() if key in _NESTING)

    return objects(schema)


_NESTING = ("items", "anyOf", "oneOf", "allOf", "prefixItems")


def _literal_kind(node: ast.expr) -> Any:
    """A literal's value (enough to know its kind), or ``_NOT_LITERAL`` for anything else."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.List | ast.Tuple):
        return []
    if isinstance(node, ast.Dict):
        return {}
    return _NOT_LITERAL
