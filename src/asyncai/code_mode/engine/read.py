"""Stage 1 of a snippet, *read*: parsing it, what it binds at module level, the tool calls it
leaves un-awaited, the rewrite that binds its last value to ``_``, and its calls with literal
arguments (what ``speculation`` may start early). Pure functions: no worker, no I/O.

Names are found with CPython's ``ast`` on the snippet's source. Monty is a subset of Python, so
anything Monty runs parses here; a snippet that does not parse is left to Monty to report.
"""

from __future__ import annotations

import ast
import asyncio
import json
import re
import sys
import warnings
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from asyncai.code_mode.catalog.entries import CatalogEntry

_CALL_START = re.compile(r"\b([A-Za-z_]\w*)\(")

SNIPPET_FILE = "<snippet>"
"""The file name every parse of a model's code gives: its parse-time warnings are told apart by it."""


# The SyntaxWarnings of parsing a model's code (``1if x``) are noise on the user's terminal.
warnings.filterwarnings("ignore", category=SyntaxWarning, module=re.escape(SNIPPET_FILE) + r"\Z")


def parse_snippet(code: str) -> ast.Module | None:
    try:
        tree = compile(code, SNIPPET_FILE, "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except Exception:  # SyntaxError, and MemoryError/RecursionError on pathological input
        return None
    return tree if isinstance(tree, ast.Module) else None


class _ModuleBindings(ast.NodeVisitor):
    """Collects the names a snippet binds in the module scope, in order of first appearance."""

    def __init__(self, code: str) -> None:
        self.names: dict[str, None] = {}
        self.defined: dict[str, None] = {}
        """The names bound by a ``def`` or ``class`` (a stub pasted back, when it is a tool's)."""
        # Most snippets have neither: their nested scopes need no walk.
        self.has_walrus = ":=" in code
        self.has_global = "global" in code

    def _add(self, name: str) -> None:
        self.names.setdefault(name, None)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Store):
            self._add(node.id)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self._add(node.name)
        self.defined.setdefault(node.name, None)
        if not self.has_global:
            return
        # A nested scope binds module names only through ``global``.
        for child in ast.walk(node):
            if isinstance(child, ast.Global):
                for name in child.names:
                    self._add(name)

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_ClassDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        pass

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp) -> None:
        # Comprehension targets are local to it; a walrus inside binds in the enclosing scope.
        if not self.has_walrus:
            return
        for child in ast.walk(node):
            if isinstance(child, ast.NamedExpr) and isinstance(child.target, ast.Name):
                self._add(child.target.id)

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            self._add((alias.asname or alias.name).split(".")[0])

    visit_ImportFrom = visit_Import

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self._add(node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs | ast.MatchStar) -> None:  # case [first, *rest]
        if node.name:
            self._add(node.name)
        self.generic_visit(node)

    visit_MatchStar = visit_MatchAs

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:  # case {"k": v, **rest}
        self.generic_visit(node)
        if node.rest:
            self._add(node.rest)


def _is_bare_tool_call(node: ast.AST, functions: Collection[str]) -> str | None:
    """``f(...)`` or ``asyncio.gather(...)`` used as a statement: a coroutine made and dropped."""
    if not isinstance(node, ast.Expr) or not isinstance(node.value, ast.Call):
        return None
    func = node.value.func
    if isinstance(func, ast.Name) and func.id in functions:
        return func.id
    if isinstance(func, ast.Attribute) and func.attr == "gather" and isinstance(func.value, ast.Name):
        return f"{func.value.id}.gather" if func.value.id == "asyncio" else None
    return None


@dataclass(frozen=True)
class SnippetScan:
    """What the snippet's source says before it runs."""

    bound: tuple[str, ...]
    """Module-level names it binds."""
    unawaited: tuple[str, ...]
    """Catalog functions (or ``asyncio.gather``) called as statements without ``await``."""
    uses_functions: bool = True
    """Whether it names a catalog function (True too when CPython cannot parse it)."""
    value_at: tuple[int, int] | None = None
    """(line, character) where the trailing expression starts: its value is bound to ``_``."""
    assigned: str | None = None
    """When the snippet ends with an assignment to plain names (``x = ...``, ``x: T = ...``,
    ``x += ...``, ``a, b = ...``): the expression of what it assigned (``x``, ``(a, b,)``), which is
    then the snippet's value."""
    defined: tuple[str, ...] = ()
    """Module-level names bound by ``def`` or ``class``."""
    empty_listings: tuple[str, ...] = ()
    """Calls that list files and, in the sandbox, find none without an error (``empty_listings``)."""
    tree: ast.Module | None = field(default=None, compare=False, repr=False)
    """The parsed snippet, for the checks after the scan (not parsed twice)."""
    nodes: tuple[ast.AST, ...] | None = field(default=None, compare=False, repr=False)
    """Every node of ``tree``, breadth first, when it names a catalog function or ``gather``."""


def function_sources(code: str, tree: ast.Module | None) -> tuple[tuple[str, str], ...]:
    """``(name, source)`` of each top-level function ``code`` defines, decorators included: what
    ``save_skill`` stores of a function the REPL knows."""
    if tree is None:
        return ()
    lines = code.splitlines(keepends=True)
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
            start = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
            found.append((node.name, "".join(lines[start - 1 : node.end_lineno]).rstrip() + "\n"))
    return tuple(found)


def assigned_value(statement: ast.stmt) -> str | None:
    """The expression of what ``statement`` assigns when it is an assignment to plain names (the
    first target of ``a = b = v``; a flat tuple or list of names as a tuple), else ``None``."""
    if isinstance(statement, ast.Assign):
        target: ast.expr = statement.targets[0]
    elif isinstance(statement, ast.AugAssign) or (
        isinstance(statement, ast.AnnAssign) and statement.value is not None
    ):
        target = statement.target
    else:
        return None
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Tuple | ast.List) and all(isinstance(e, ast.Name) for e in target.elts):
        names = [e.id for e in target.elts if isinstance(e, ast.Name)]
        return f"({', '.join(names)},)" if names else None
    return None  # an attribute, an item, a starred target: no single value to name


def empty_listings(tree: ast.Module) -> tuple[str, ...]:
    """The calls of ``tree`` that list files and, in the sandbox, answer an empty list instead of
    failing (``os.walk``, ``Path.glob``, ``Path.rglob``, ``Path.walk``: as in CPython, they swallow
    the error of listing a directory): a program that counts files with one gets 0, a wrong answer
    with no error."""
    os_names, walk_names = {"os"}, set[str]()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            os_names.update(alias.asname or "os" for alias in node.names if alias.name == "os")
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            walk_names.update(alias.asname or "walk" for alias in node.names if alias.name == "walk")
    found = []
    for node in ast.walk(tree):
        function = node.func if isinstance(node, ast.Call) else None
        if isinstance(function, ast.Name) and function.id in walk_names:
            found.append("os.walk")
        elif isinstance(function, ast.Attribute) and function.attr in ("glob", "rglob", "walk"):
            owner = function.value
            if isinstance(owner, ast.Name) and owner.id in os_names:
                found.extend(["os.walk"] if function.attr == "walk" else [])  # os.glob(): no such name
            elif isinstance(owner, ast.Name) and owner.id == "glob":
                continue  # glob.glob(): the module is missing, and its import says so
            elif function.attr != "walk" or isinstance(owner, ast.Call):  # x.walk(): maybe the model's own
                found.append(f"Path.{function.attr}")
    return tuple(dict.fromkeys(found))


def scan_snippet(code: str, functions: Collection[str] = ()) -> SnippetScan:
    """Bindings and dropped calls of ``code``; an empty scan when CPython cannot parse it."""
    tree = parse_snippet(code)
    if tree is None:
        return SnippetScan((), ())
    bindings = _ModuleBindings(code)
    for statement in tree.body:
        bindings.visit(statement)
    # A name that is nowhere in the text is nowhere in the tree: most snippets skip the second walk.
    named = [function for function in functions if function in code]
    unawaited: list[str] = []
    uses = False
    nodes = None
    if named or "gather" in code:
        nodes = tuple(ast.walk(tree))
        unawaited = [name for node in nodes if (name := _is_bare_tool_call(node, named))]
        uses = any(isinstance(node, ast.Name) and node.id in named for node in nodes)
    last = tree.body[-1] if tree.body else None
    value_at = None
    assigned = None
    if isinstance(last, ast.Expr):
        lines = code.splitlines()
        line = lines[last.lineno - 1] if last.lineno <= len(lines) else ""
        value_at = (last.lineno, len(line.encode()[: last.col_offset].decode(errors="replace")))
    elif last is not None:
        assigned = assigned_value(last)
    return SnippetScan(
        tuple(bindings.names),
        tuple(dict.fromkeys(unawaited)),
        uses,
        value_at,
        assigned,
        tuple(bindings.defined),
        empty_listings(tree) if "walk" in code or "glob" in code else (),
        tree=tree,
        nodes=nodes,
    )


SCAN_ON_LOOP_CHARS = 50_000
"""A longer snippet is scanned in a child process: CPython's parser holds the GIL for the whole
parse (seconds for a few MB), and the event loop must keep serving other threads and clients."""
_SCAN_PROGRAM = """
import json, sys
from asyncai.code_mode.engine.read import scan_snippet
request = json.load(sys.stdin)
scan = scan_snippet(request["code"], request["functions"])
json.dump(
    [scan.bound, scan.unawaited, scan.uses_functions, scan.value_at, scan.assigned, scan.defined,
     scan.empty_listings],
    sys.stdout,
)
"""


async def scan_snippet_off_loop(code: str, functions: Collection[str], timeout: float) -> SnippetScan:
    """``scan_snippet`` that never holds the event loop: a long snippet is scanned in a child
    process, killed after ``timeout`` seconds (``TimeoutError``). A short one is scanned at once,
    with no timer (a small snippet's scan takes microseconds)."""
    if len(code) <= SCAN_ON_LOOP_CHARS:
        return scan_snippet(code, functions)
    async with asyncio.timeout(timeout):
        return await _scan_in_child(code, functions)


async def _scan_in_child(code: str, functions: Collection[str]) -> SnippetScan:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _SCAN_PROGRAM,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        out, _ = await process.communicate(json.dumps({"code": code, "functions": list(functions)}).encode())
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    try:
        bound, unawaited, uses, value_at, assigned, defined, listings = json.loads(out)
    except ValueError:  # the child failed (out of memory on a pathological snippet): as if unparsable
        return SnippetScan((), ())
    return SnippetScan(
        tuple(bound),
        tuple(unawaited),
        bool(uses),
        tuple(value_at) if value_at else None,
        assigned,
        tuple(defined),
        tuple(listings),
    )


LAST_VALUE = "_"
"""The name a snippet's value is bound to, as in IPython: a result over the size limit stays
in the sandbox, and the next snippet filters it without calling the tool again."""


def bind_last_value(code: str, value_at: tuple[int, int] | None, assigned: str | None = None) -> str:
    """``code`` with its trailing expression's value bound to ``_`` and still its value: the line
    numbers, and so the tracebacks, stay those of the snippet as written. A snippet that ends with
    an assignment (``assigned``) gets what it assigned as its value, and ``_`` stays as it was:
    the value has a name of its own."""
    if value_at is None:
        if assigned is None:
            return code
        return f"{code}{'' if code.endswith(chr(10)) else chr(10)}{assigned}"
    lines = code.splitlines(keepends=True)
    line, column = value_at
    if not 0 < line <= len(lines):
        return code
    text = lines[line - 1]
    lines[line - 1] = f"{text[:column]}{LAST_VALUE} = {text[column:]}"
    joined = "".join(lines)
    return f"{joined}{'' if joined.endswith(chr(10)) else chr(10)}{LAST_VALUE}"


def as_written(traceback_text: str, value_at: tuple[int, int] | None) -> str:
    """``traceback_text`` of a snippet fed through ``bind_last_value``, quoting the model's own line:
    the snippet's frame at the last value's line loses the ``_ = `` and its markers move back."""
    if value_at is None:
        return traceback_text
    frame = re.compile(rf'  File "<python-input-\d+>", line {value_at[0]}, in <module>')
    lines = traceback_text.split("\n")
    for number, line in enumerate(lines[:-1]):
        binding = lines[number + 1].find(f"{LAST_VALUE} = ", 4)
        if not frame.fullmatch(line) or binding < 0:
            continue
        for quoted in range(number + 1, min(number + 3, len(lines))):
            text = lines[quoted]
            if quoted == number + 1 or (text.strip() and set(text.strip()) <= set("~^")):
                lines[quoted] = text[:binding] + text[binding + len(LAST_VALUE) + 3 :]
    return "\n".join(lines)


_NAME_ERROR_FRAME = re.compile(
    r'  File "(?P<file>[^"\n]*)", line \d+, in (?P<scope>[^\n]+)\n'
    r"(?P<quoted>(?:    [^\n]*\n){0,2})"
    r"(?P<error>(?:NameError: name|UnboundLocalError: cannot access local variable) "
    r"'(?P<name>[A-Za-z_]\w*)'[^\n]*)\n?$"
)
_FEED_FILE = re.compile(r'File "(<python-input-\d+>)"')


def placed_name_error(traceback_text: str, code: str) -> str:
    """``traceback_text`` with a NameError that ``x += ...`` raised (``x`` not bound) placed where
    it was raised. Monty puts it at the instruction before (another line), or in a file named
    "\\x00" at line 1 when there was none; such a last frame, whose quoted line does not name
    ``x``, moves to ``code``'s one augmented assignment to ``x`` (with several, it stays)."""
    match = _NAME_ERROR_FRAME.search(traceback_text)
    if match is None:
        return traceback_text
    name, file = match["name"], match["file"]
    quoted = match["quoted"].split("\n", 1)[0]
    if file != "\x00" and re.search(rf"\b{name}\b", quoted):
        return traceback_text
    tree = parse_snippet(code)
    nodes = ast.walk(tree) if tree is not None else iter(())
    lines = {
        node.lineno
        for node in nodes
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == name
    }
    if len(lines) != 1:
        return traceback_text
    (line,) = lines
    if not file.startswith("<python-input"):  # the caller's frame names the feed, if there is one
        callers = _FEED_FILE.findall(traceback_text, 0, match.start())
        file = callers[-1] if callers else "<python-input>"
    frame = (
        f'  File "{file}", line {line}, in {match["scope"]}\n'
        f"    {code.splitlines()[line - 1].strip()}\n    {'~' * len(name)}\n"
    )
    ending = "\n" if traceback_text.endswith("\n") else ""
    return f"{traceback_text[: match.start()]}{frame}{match['error']}{ending}"


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
            node = ast.parse(line[match.start() : end + 1], SNIPPET_FILE, mode="eval").body
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
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        return None
    entry = catalog.get(node.func.id)
    if entry is None or not allowed(entry) or any(k.arg is None for k in node.keywords):
        return None
    if len(node.args) > entry.tool.positional or any(isinstance(arg, ast.Starred) for arg in node.args):
        return None
    try:
        keywords = dict(zip(entry.parameters, map(ast.literal_eval, node.args), strict=False))
        keywords |= {str(k.arg): ast.literal_eval(k.value) for k in node.keywords}
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
