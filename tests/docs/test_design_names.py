"""Every code name ``docs/design.md`` mentions exists: its links, the paths and modules it names,
and each backticked class, function, method, attribute, constant and log event.

The code side is an AST index of ``src/asyncai`` (every module, class, function, method,
parameter, class attribute, ``self.`` attribute, module-level name and string literal), so a
renamed definition makes its old name in the doc fail. ``Class.member`` must be a member of that
class (or of an in-tree base) and ``module.name`` a top-level name of that module. Names from
Python itself, the SDKs and the wire protocols are resolved by importing them; the few words in
backticks that are not code names are listed in ``NOT_CODE_NAMES`` with where they come from.
"""

from __future__ import annotations

import ast
import builtins
import fnmatch
import importlib
import importlib.util
import os
import re
import shutil
import sys
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "docs" / "design.md"
SRC = ROOT / "src" / "asyncai"
TESTS = ROOT / "tests"

EXTERNAL: dict[str, str] = {
    # The SDKs' own names, each checked by importing it (so a stale entry here fails too).
    "pm": "pydantic_monty",  # the alias every module uses: `import pydantic_monty as pm`
    "MontyTypingError": "pydantic_monty.MontyTypingError",
    "feed_run": "pydantic_monty.AsyncMontySession.feed_run",
    "feed_start": "pydantic_monty.AsyncMontySession.feed_start",
    "load_session": "pydantic_monty.AsyncMontySession.load_session",
    "dump": "pydantic_monty.AsyncMontySession.dump",
    "resume_auto": "pydantic_monty.AsyncFunctionSnapshot.resume_auto",
    "max_feed_duration_secs": "pydantic_monty.ResourceLimits.max_feed_duration_secs",
    "Client": "mcp.Client",
    "Tool": "mcp.server.mcpserver.tools.Tool",
    "fn_metadata": "mcp.server.mcpserver.tools.Tool.fn_metadata",
    "convert_result": "mcp.server.mcpserver.utilities.func_metadata.FuncMetadata.convert_result",
    "OAuthClientProvider": "mcp.client.auth.OAuthClientProvider",
    "RequestStateBoundary": "mcp.server.request_state.RequestStateBoundary",
    "structuredContent": "mcp.types.CallToolResult.structured_content",  # the wire name of the field
    "Lock": "redis.lock.Lock",
    "Protocol": "typing.Protocol",
    "TYPE_CHECKING": "typing.TYPE_CHECKING",
}

NOT_CODE_NAMES: dict[str, str] = {
    # Backticked words that name no definition: what each is, and where it comes from.
    "_2": "a suffix sanitize_names adds on a name collision (an example value)",
    "_3": "a suffix sanitize_names adds on a name collision (an example value)",
    "_meta": "the MCP wire field (the SDK's `meta`, aliased)",
    "Host": "an HTTP header (RFC 9110)",
    "Origin": "an HTTP header (RFC 6454)",
    "Authorization": "an HTTP header (RFC 9110)",
    "GETDEL": "a Redis command",
    "input_required": "the MCP result a stateless server answers with (2026-07-28 era)",
}

# The package's extras (`otel`), as pyproject.toml names them.
EXTRAS = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])

PATH = re.compile(r"[\w.-]+(/[\w.-]+)*/?")
LINK = re.compile(r"\]\(([^)\s]+)\)")
SPAN = re.compile(r"`([^`\n]+)`")
PREFIX = re.compile(r"[A-Za-z_]\w*\*")  # `_asyncai_*`: some name must start with it
SANDBOX_DEF = re.compile(r"^(?:async )?def ([A-Za-z_]\w*)|^([A-Za-z_]\w*) = ", re.MULTILINE)


@dataclass
class ClassInfo:
    members: set[str] = field(default_factory=set)
    bases: set[str] = field(default_factory=set)


@dataclass
class Index:
    """What the code defines, by name."""

    modules: dict[str, set[str]] = field(default_factory=dict)  # stem -> top-level names, submodules
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    defined: set[str] = field(default_factory=set)  # any definition, parameter or attribute
    bound: set[str] = field(default_factory=set)  # `defined` plus local variables
    params: dict[str, set[str]] = field(default_factory=dict)  # callable -> its parameters or fields
    strings: set[str] = field(default_factory=set)  # string literals that are not docstrings
    test_defs: set[str] = field(default_factory=set)  # classes and functions defined in tests/

    def members(self, cls: str, seen: frozenset[str] = frozenset()) -> set[str]:
        info = self.classes.get(cls)
        if info is None or cls in seen:
            return set()
        inherited = [self.members(base, seen | {cls}) for base in info.bases]
        return info.members.union(*inherited)


def _params(args: ast.arguments) -> list[str]:
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return [a.arg for a in every if a is not None]


def _targets(node: ast.AST) -> list[str]:
    """Names bound by an assignment target (``a``, ``a, b``, ``self.a``)."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.Tuple | ast.List):
        return [name for elt in node.elts for name in _targets(elt)]
    if isinstance(node, ast.Starred):
        return _targets(node.value)
    return []


class _Indexer(ast.NodeVisitor):
    """One pass over a module: what it defines, binds and spells as a string."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self.classes: list[tuple[str, ClassInfo]] = []  # the enclosing classes, innermost last
        self.docstrings: set[int] = set()

    def generic_visit(self, node: ast.AST) -> None:
        body = getattr(node, "body", None)  # a statement list, or an expression (`IfExp`, `Lambda`)
        for stmt in body if isinstance(body, list) else ():  # docstrings, and those under attributes
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                self.docstrings.add(id(stmt.value))
        super().generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        info = self.index.classes.setdefault(node.name, ClassInfo())
        info.bases.update(name for base in node.bases for name in _targets(base))
        fields = self.index.params.setdefault(node.name, set())
        for stmt in node.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                info.members.add(stmt.name)
            elif isinstance(stmt, ast.Assign):
                info.members.update(name for target in stmt.targets for name in _targets(target))
            elif isinstance(stmt, ast.AnnAssign):
                info.members.update(_targets(stmt.target))
                fields.update(_targets(stmt.target))  # dataclass and NamedTuple fields
        self.index.defined.add(node.name)
        self.classes.append((node.name, info))
        self.generic_visit(node)
        self.classes.pop()
        self.index.defined.update(info.members)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        params = _params(node.args)
        self.index.defined.add(node.name)
        self.index.defined.update(params)
        self.index.params.setdefault(node.name, set()).update(params)
        if node.name == "__init__" and self.classes:  # a class is called with its __init__'s parameters
            self.index.params[self.classes[-1][0]].update(params)
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.index.defined.update(_params(node.args))
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        owner = node.value
        on_self = isinstance(owner, ast.Name) and owner.id in ("self", "cls")
        if isinstance(node.ctx, ast.Store) and on_self and self.classes:
            self.classes[-1][1].members.add(node.attr)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Store):  # local variables: `worker`, `session_id`
            self.index.bound.add(node.id)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and id(node) not in self.docstrings:
            self.index.strings.add(node.value)
            # Python held in a string (the sandbox preamble) defines names too.
            self.index.defined.update(a or b for a, b in SANDBOX_DEF.findall(node.value))


def _index_module(index: Index, path: Path) -> None:
    tree = ast.parse(path.read_text(), str(path))
    stem = path.parent.name if path.name == "__init__.py" else path.stem
    top = index.modules.setdefault(stem, set())
    for child in path.parent.iterdir() if path.name == "__init__.py" else ():
        if child.suffix == ".py" or (child / "__init__.py").exists():
            top.add(child.stem if child.suffix == ".py" else child.name)
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            top.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            top.update(name for target in stmt.targets for name in _targets(target))
        elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
            top.update(_targets(stmt.target))
    _Indexer(index).visit(tree)
    index.defined.add(stem)
    index.defined.update(top)


@cache
def build_index(src: Path = SRC, tests: Path = TESTS) -> Index:
    index = Index()
    for path in sorted(src.rglob("*.py")):
        _index_module(index, path)
    index.bound |= index.defined
    for path in sorted(tests.rglob("*.py")):
        if "node_modules" in path.parts:  # the npm servers' own files
            continue
        tree = ast.parse(path.read_text(), str(path))
        index.test_defs.update(
            node.name
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        )
    return index


def _exists(dotted: str) -> bool:
    """Whether ``dotted`` can be imported, then its attributes read (a TypedDict key or a pydantic
    field counts as an attribute)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            if hasattr(found, part):
                found = getattr(found, part)
            elif part in getattr(found, "model_fields", {}) or part in getattr(found, "__annotations__", {}):
                found = None  # a field has no object of its own: it must be the last part
            else:
                return False
        return True
    return False


@cache
def _importable(name: str) -> bool:
    return name in sys.stdlib_module_names or importlib.util.find_spec(name) is not None


def _chain(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]``; None for anything that is not a dotted name."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        head = _chain(node.value)
        return None if head is None else [*head, node.attr]
    return None


def _dotted_problem(parts: list[str], index: Index, *, in_expression: bool) -> str | None:
    name = ".".join(parts)
    head, rest = parts[0], parts[1:]
    if name in index.strings:  # a log event (`mcp.tool_call`), a tool name (`run_code`)
        return None
    if not rest:
        known = index.bound if in_expression else index.defined
        if any(head in names for names in (known, index.test_defs, EXTERNAL, NOT_CODE_NAMES, EXTRAS)):
            return None
        if hasattr(builtins, head) or _importable(head):  # `RuntimeError`, `ast`, `redis`
            return None
        return f"`{name}` is not defined in src/asyncai"
    if head in index.classes:
        members = index.members(head)
        if rest[0] not in members:
            return f"`{name}`: class {head} has no member {rest[0]}"
    elif head in index.modules:
        if rest[0] not in index.modules[head]:
            return f"`{name}`: module {head} defines no {rest[0]}"
    elif head in EXTERNAL or _importable(head):
        target = ".".join([EXTERNAL.get(head, head), *rest])
        return None if _exists(target) else f"`{name}` does not exist ({target})"
    elif head not in index.bound:  # a variable (`session`, `self`): its attributes are checked below
        return f"`{name}`: {head} is neither a class, a module nor a variable in src/asyncai"
    for part in rest[1:] if head in index.classes or head in index.modules else rest:
        if part not in index.defined and part not in EXTERNAL:
            return f"`{name}`: no attribute {part} is defined anywhere"
    return None


def _in_tree(head: str, index: Index) -> bool:
    """Whether a chain starting with ``head`` names asyncai's code (not ``asyncio.timeout``)."""
    if head in index.classes or head in index.modules:
        return True
    return head not in EXTERNAL and not _importable(head)


def _expression_problems(tree: ast.AST, index: Index) -> list[str]:
    problems: list[str] = []
    inner: set[int] = set()  # the inner links of a chain, checked as part of it
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            inner.add(id(node.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name | ast.Attribute) and id(node) not in inner:
            parts = _chain(node)
            if parts is not None:
                problem = _dotted_problem(parts, index, in_expression=True)
                if problem is not None:
                    problems.append(problem)
        if isinstance(node, ast.Call):
            parts = _chain(node.func)
            accepted = index.params.get(parts[-1]) if parts is not None else None
            if parts is not None and accepted is not None and _in_tree(parts[0], index):
                problems.extend(
                    f"`{'.'.join(parts)}` takes no argument {keyword.arg}"
                    for keyword in node.keywords
                    if keyword.arg is not None and keyword.arg not in accepted
                )
    return problems


@cache
def _tree_paths() -> tuple[str, ...]:
    """Every file and folder under src/asyncai and tests, as ``/a/b.py`` relative to its root."""
    found: list[str] = []
    for base in (SRC, TESTS):
        for directory, folders, files in os.walk(base):
            folders[:] = [name for name in folders if name not in ("node_modules", "__pycache__")]
            found.extend(f"/{(Path(directory) / name).relative_to(base)}" for name in [*folders, *files])
    return tuple(found)


def _path_problem(span: str) -> str | None:
    if span.startswith(("src/", "tests/")):
        return None if (ROOT / span).exists() else f"`{span}` does not exist"
    wanted = "/" + span.rstrip("/")  # `engine/repl.py` may stand for src/asyncai/code_mode/engine/repl.py
    if any(path.endswith(wanted) for path in _tree_paths()):
        return None
    return f"`{span}` is no file or package under src/asyncai or tests"


def span_problems(span: str, index: Index) -> list[str]:
    """What is wrong with one backticked span (nothing for a span that is no code name)."""
    if PATH.fullmatch(span) and (span.endswith((".py", "/")) or "/" in span.rstrip("/")):
        if not span.endswith((".py", "/")):
            return []  # an MCP method (`tools/call`, `server/discover`), not a path
        problem = _path_problem(span)
        return [] if problem is None else [problem]
    if PREFIX.fullmatch(span):
        known = index.defined | index.strings
        matched = any(fnmatch.fnmatchcase(name, span) for name in known)
        return [] if matched else [f"`{span}` matches no name or string in src/asyncai"]
    if "-" in span or span.startswith("$"):
        return []  # a CLI word (`--root`, `asyncai -p`), a package or header name, `${VAR}`
    text = span[1:] if span.startswith("@") else span  # a decorator: `@tool`
    try:
        tree: ast.AST = ast.parse(text, mode="eval")
    except SyntaxError:
        if not text.startswith(("import ", "async def ", "def ")):
            return []  # prose in backticks: `SET NX`, `Args:`, `*, a: str, ...`
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return []
        if isinstance(tree.body[0], ast.Import):
            modules = [alias.name.split(".") for alias in tree.body[0].names]
            found = [_dotted_problem(parts, index, in_expression=False) for parts in modules]
            return [problem for problem in found if problem is not None]
        definition = tree.body[0]
        assert isinstance(definition, ast.AsyncFunctionDef | ast.FunctionDef)
        return _expression_problems(ast.Module(body=definition.body, type_ignores=[]), index)
    body = tree.body if isinstance(tree, ast.Expression) else tree
    if isinstance(body, ast.Name | ast.Attribute):
        parts = _chain(body)
        assert parts is not None
        problem = _dotted_problem(parts, index, in_expression=False)
        return [] if problem is None else [problem]
    return _expression_problems(tree, index)


def doc_problems(text: str, index: Index, doc: Path = DESIGN) -> list[str]:
    problems: list[str] = []
    for target in LINK.findall(text):
        if target.startswith(("http://", "https://", "#")):
            continue
        if not (doc.parent / target.split("#")[0]).resolve().exists():
            problems.append(f"link {target} does not exist")
    for span in dict.fromkeys(SPAN.findall(text)):
        problems.extend(span_problems(span, index))
    return problems


def test_every_name_in_the_design_doc_exists() -> None:
    problems = doc_problems(DESIGN.read_text(), build_index())
    assert problems == [], "\n".join(problems)


def test_the_external_names_exist() -> None:
    missing = {name: target for name, target in EXTERNAL.items() if not _exists(target)}
    assert missing == {}


def test_every_allowlisted_name_is_still_in_the_doc() -> None:
    words = set(re.findall(r"\w+", " ".join(SPAN.findall(DESIGN.read_text()))))
    assert set(EXTERNAL) - words == set()
    assert set(NOT_CODE_NAMES) - words == set()


@pytest.mark.parametrize(
    ("stale", "problem"),
    [
        ("`_EXIT_GRACE_SECONDS`", "`_EXIT_GRACE_SECONDS` is not defined"),
        ("`ReplScope.parks()`", "class ReplScope has no member parks"),
        ("`wire.tool_spec`", "module wire defines no tool_spec"),
        ("`engine/clocks.py`", "`engine/clocks.py` is no file"),
        ("`mcp.tool_called`", "module mcp defines no tool_called"),
        ("`use(key, save_as=...)`", "`use` takes no argument save_as"),
        ("`_asyncai_tool(code, no_such_name)`", "`no_such_name` is not defined"),
        ("[x](../src/asyncai/code_mode/engine/clocks.py)", "clocks.py does not exist"),
    ],
)
def test_a_stale_name_is_found(stale: str, problem: str) -> None:
    [found] = doc_problems(f"Some prose {stale} here.", build_index())
    assert problem in found


def test_a_definition_renamed_in_the_code_fails_the_doc(tmp_path: Path) -> None:
    copy = tmp_path / "asyncai"
    shutil.copytree(SRC, copy)
    guard = copy / "code_mode" / "sandbox" / "guard.py"
    guard.write_text(guard.read_text().replace("EXIT_GRACE_SECONDS", "EXIT_GRACE"))
    doc = "`EXIT_GRACE_SECONDS`, `guard.EXIT_GRACE_SECONDS` and `PoolGuard`"
    assert doc_problems(doc, build_index(SRC, TESTS)) == []
    assert len(doc_problems(doc, build_index(copy, tmp_path / "no-tests"))) == 2
