"""Programs a model wrote in its reply (a ```python block), and the repairs of a snippet before it
runs: pasted catalog stubs and unused imports of missing modules dropped. Pure functions."""

from __future__ import annotations

import ast
import re
from collections.abc import Collection

from asyncai.backend.decoding import PARSED_AS
from asyncai.backend.text_calls import TextCalls
from asyncai.backend.wire import RawToolCall
from asyncai.tools.types import ToolDefinition


def _calls_a_function(code: str, functions: Collection[str]) -> bool:
    """Whether ``code`` calls one of ``functions`` (a definition of one is not a call)."""
    try:
        tree = ast.parse(code, PARSED_AS)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        pattern = rf"(?<!def )\b(?:{'|'.join(map(re.escape, functions))})\s*\("
        return bool(functions) and re.search(pattern, code) is not None
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions
        for node in ast.walk(tree)
    )


def program_in_text(content: str | None, functions: Collection[str], code_tool: str) -> TextCalls | None:
    """A reply's ```python program as a call of ``code_tool``, when the program calls one of the
    catalog's ``functions`` (a model that wrote the snippet instead of calling the tool with it);
    ``None`` when it has no such program (example code stays prose)."""
    code = python_code(content)
    if code is None or not _calls_a_function(code, functions):
        return None
    first = _PYTHON_BLOCK.search(content or "")
    prose = (content or "")[: first.start() if first else 0].strip()
    return TextCalls(
        calls=(RawToolCall(id=None, name=code_tool, arguments={"code": code}),),
        prose=prose or None,
        kind="python_block",
        repairs=(("python_block",),),
    )


def drop_pasted_stubs(code: str, functions: Collection[str]) -> tuple[str, tuple[str, ...]]:
    """``code`` without the top-level definitions of catalog ``functions`` that a model pasted from
    the stubs (they are defined already), and the names dropped. Unchanged when nothing else but
    imports would be left: the engine's refusal then says to call them."""
    try:
        tree = ast.parse(code, PARSED_AS)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return _drop_unparsable_stubs(code, functions)
    pasted = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in functions
    ]
    imports = ast.Import | ast.ImportFrom
    rest = [node for node in tree.body if node not in pasted and not isinstance(node, imports)]
    if not pasted or not rest:
        return code, ()
    lines = code.splitlines(keepends=True)
    dropped_lines: set[int] = set()
    for node in pasted:
        first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
        dropped_lines.update(range(first - 1, node.end_lineno or node.lineno))
    kept = "".join(line for number, line in enumerate(lines) if number not in dropped_lines)
    return kept.strip("\n"), tuple(dict.fromkeys(node.name for node in pasted))


def repaired_snippet(
    code: str, functions: Collection[str], importable: Collection[str] = ()
) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """``code`` as the backend hands it to the engine: without pasted catalog stubs and unused
    imports of modules not ``importable``; and the functions and modules dropped."""
    code, dropped = drop_pasted_stubs(code, functions)
    code, dropped_imports = drop_missing_imports(code, importable)
    return code, dropped, dropped_imports


def drop_missing_imports(code: str, importable: Collection[str]) -> tuple[str, tuple[str, ...]]:
    """``code`` without its top-level imports of modules not ``importable`` (the code tool's
    ``ToolDefinition.importable``) whose names it never uses (a small model's habitual ``import
    requests`` above a call of the catalog's ``http_get``), and those modules. Unchanged when it
    does not parse, nothing but imports would be left, or nothing is known to be importable."""
    if not importable:
        return code, ()
    try:
        tree = ast.parse(code, PARSED_AS)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return code, ()
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    missing: list[ast.Import | ast.ImportFrom] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
            names = [alias.asname or alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
            names = [alias.asname or alias.name for alias in node.names]
        else:
            continue
        lacking = all(module.split(".")[0] not in importable for module in modules)
        if lacking and not used.intersection(names):
            missing.append(node)
    if not missing or len(missing) == len(tree.body):
        return code, ()
    lines = code.splitlines(keepends=True)
    gone = {number for node in missing for number in range(node.lineno - 1, node.end_lineno or node.lineno)}
    kept = "".join(line for number, line in enumerate(lines) if number not in gone)
    dropped = [
        alias.name if isinstance(node, ast.Import) else node.module or ""
        for node in missing
        for alias in node.names
    ]
    return kept.strip("\n"), tuple(dict.fromkeys(dropped))


_DEF_LINE = re.compile(r"(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*\(")


def _drop_unparsable_stubs(code: str, functions: Collection[str]) -> tuple[str, tuple[str, ...]]:
    """:func:`drop_pasted_stubs` for code that does not parse, as when a small model pastes a stub's
    ``def`` line with a comment for its body: each top-level ``def`` of a catalog function goes
    with the indented lines after it, and the rest is kept when it then parses."""
    kept: list[str] = []
    dropped: list[str] = []
    inside = False
    for line in code.splitlines(keepends=True):
        match = _DEF_LINE.match(line)
        if match is not None and match.group(1) in functions:
            inside = True
            dropped.append(match.group(1))
        elif inside and (not line.strip() or line[0] in " \t)"):
            continue  # the pasted definition's signature and body
        else:
            inside = False
            kept.append(line)
    rest = "".join(kept).strip("\n")
    if not dropped or not rest.strip():
        return code, ()
    try:
        tree = ast.parse(rest, PARSED_AS)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return code, ()
    if all(isinstance(node, ast.Import | ast.ImportFrom) for node in tree.body):
        return code, ()
    return rest, tuple(dict.fromkeys(dropped))


def program_key(code: str) -> str:
    """What two programs that differ only in layout, quotes, comments or imports have in common."""
    try:
        tree = ast.parse(code, PARSED_AS)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return code.strip()
    tree.body = [node for node in tree.body if not isinstance(node, ast.Import | ast.ImportFrom)]
    return ast.dump(tree)


_PYTHON_BLOCK = re.compile(r"```(?:python3?|py)[ \t]*\n(.*?)```", re.S)


def _is_statement(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def python_code(content: str | None) -> str | None:
    """The code of a reply's ```python blocks, in order, joined; ``None`` when it has none with a
    statement in it (a block of comments only, such as a result copied back, is no program)."""
    blocks = [block.strip("\n") for block in _PYTHON_BLOCK.findall(content or "")]
    blocks = [block for block in blocks if any(_is_statement(line) for line in block.splitlines())]
    return "\n".join(blocks) if blocks else None


def text_protocol_prompt(system_prompt: str, code_tool: ToolDefinition) -> str:
    """The system prompt of the text protocol: no tools are offered, so the code tool's own
    description (its rules and functions) says what a program may call."""
    return (
        f"{system_prompt}\n\n"
        "To use the functions below, reply with one Python program in a ```python block and "
        "nothing after it; it runs, and its result comes back to you in the next message. "
        "Call the functions with await and keyword arguments. When you have the answer, reply "
        "in plain text without a code block.\n\n"
        f"{code_tool.description}"
    )


def code_result_text(result: str, is_error: bool) -> str:
    """How a text-protocol program's result comes back to the model (as a user message)."""
    return f"{'Error from' if is_error else 'Result of'} your program:\n{result}"
