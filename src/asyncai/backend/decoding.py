"""Decoding what a model wrote as a call's arguments: JSON, JSON in a fence or with prose around
it, a JSON string holding an object, Python literals, and ``code`` in backticks or triple quotes.
Pure functions."""

from __future__ import annotations

import ast
import json
import re
import textwrap
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from asyncai.log import dumps_compact, preview

ARGUMENT_PREVIEW_CHARS = 200
PARSED_AS = "<reply>"
"""The file name every parse of a reply's code gives: its parse-time warnings are told apart by it."""

# The SyntaxWarnings of parsing a model's code (``1if x``) are noise on the user's terminal.
warnings.filterwarnings("ignore", category=SyntaxWarning, module=re.escape(PARSED_AS) + r"\Z")
_FENCE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\n?(.*?)\n?[ \t]*```", re.DOTALL)
WHOLE_FENCE = re.compile(r"^\s*```[A-Za-z0-9_+-]*[ \t]*\n(.*?)\n[ \t]*```\s*$", re.DOTALL)
_CODE_LITERAL = re.compile(
    r"(?P<key>[\"']code[\"']\s*:\s*)"
    r"(?:```[A-Za-z0-9_+-]*[ \t]*\n?(?P<fenced>.*?)```"
    r"|\"\"\"(?P<double>.*?)\"\"\""
    r"|'''(?P<single>.*?)'''"
    r"|`(?P<tick>[^`]*)`)",
    re.DOTALL,
)
"""A ``code`` value in backticks or triple quotes, for which JSON has no syntax."""


@dataclass(frozen=True)
class ArgumentsError:
    """Why tool-call arguments could not be used; ``preview`` is a bounded rendering of them."""

    reason: str
    preview: str


def preview_raw(raw: Any) -> str:
    text = raw if isinstance(raw, str) else dumps_compact(raw) if jsonable(raw) else repr(raw)
    return preview(text.replace("\n", "\\n"), ARGUMENT_PREVIEW_CHARS)


def jsonable(value: Any) -> bool:
    """Whether ``value`` is strict JSON: NaN and infinities are not (a transcript could not keep
    them, and many servers reject them)."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


NOT_DECODED = object()


_LITERAL_NAMES: dict[str, Any] = {
    "true": True, "false": False, "null": None, "True": True, "False": False, "None": None,
}  # fmt: skip


def _literal(node: ast.expr) -> Any:
    """A JSON value written as a Python literal (JSON's ``true``/``null`` allowed); ``ValueError`` else."""
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, str | int | float)):
        return node.value
    if isinstance(node, ast.Name) and node.id in _LITERAL_NAMES:
        return _LITERAL_NAMES[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _literal(node.operand)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.List | ast.Tuple):
        return [_literal(item) for item in node.elts]
    if isinstance(node, ast.Dict):
        result: dict[str, Any] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            name = _literal(key) if key is not None else None
            if not isinstance(name, str):
                raise ValueError("a key that is not a string")
            result[name] = _literal(value)
        return result
    raise ValueError(f"not a literal: {type(node).__name__}")


def python_literal(text: str) -> Any:
    """Python literals from small models: single quotes, True/None, trailing commas, triple quotes."""
    try:
        value = _literal(ast.parse(text.strip(), PARSED_AS, mode="eval").body)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return NOT_DECODED
    return value if jsonable(value) else NOT_DECODED


def json_or_embedded(text: str) -> Any:
    """``text`` as JSON, or the first JSON object in it (JSON with prose around it)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    start = text.find("{")
    if start >= 0:
        try:
            value, _ = json.JSONDecoder().raw_decode(text, start)
            return value
        except (ValueError, RecursionError):
            pass
    return NOT_DECODED


def code_text(code: str) -> str:
    """Code as a model wrote it between quotes: indented with the JSON around it, blank-line padded."""
    return textwrap.dedent(code).strip("\n").rstrip()


def repair_code_literals(text: str) -> str:
    """``text`` with each ``"code"`` value written in backticks or triple quotes turned into a JSON
    string, its contents taken verbatim (no escapes: it is source code)."""

    def replace(match: re.Match[str]) -> str:
        groups = ("fenced", "double", "single", "tick")
        code = next(match.group(name) for name in groups if match.group(name) is not None)
        return match.group("key") + json.dumps(code_text(code), ensure_ascii=False)

    return _CODE_LITERAL.sub(replace, text)


def _decode_text(text: str) -> tuple[Any, bool]:
    """Best-effort decoding of argument text: the value (``NOT_DECODED`` when nothing worked), and
    whether code in backticks or triple quotes had to be rewritten for it."""
    candidates = [text]
    fence = _FENCE.match(text)
    if fence:
        candidates.insert(0, fence.group(1).strip())
    for candidate in candidates:
        value = json_or_embedded(candidate)
        if value is not NOT_DECODED:
            return value, False
    for candidate in candidates:
        # Before Python literals: a triple-quoted string there would turn the code's escapes into characters.
        repaired = repair_code_literals(candidate)
        if repaired == candidate:
            continue
        for value in (json_or_embedded(repaired), python_literal(repaired)):
            if isinstance(value, dict):
                return value, True
    for candidate in candidates:
        value = python_literal(candidate)
        if isinstance(value, dict):
            return value, False
    return NOT_DECODED, False


def parse_arguments(raw: Any) -> dict[str, Any] | ArgumentsError:
    """Tool-call arguments as a dict, or why not.

    Accepts a JSON string, an object already decoded by the server, JSON fenced in markdown, JSON
    followed (or preceded) by prose, a JSON string that itself encodes an object, Python dict
    literals, and a ``code`` value in backticks or triple quotes. Empty arguments are an
    :class:`ArgumentsError` with reason ``"empty"``.
    """
    return decode_arguments(raw)[0]


def decode_arguments(raw: Any) -> tuple[dict[str, Any] | ArgumentsError, bool]:
    """``parse_arguments``, and whether quoted code had to be rewritten (``repair_code_literals``)."""
    if isinstance(raw, Mapping):
        if all(isinstance(k, str) for k in raw) and jsonable(dict(raw)):
            return dict(raw), False
        return ArgumentsError("not a JSON object", preview_raw(raw)), False
    if raw is None:
        return ArgumentsError("empty", ""), False
    if not isinstance(raw, str):
        return ArgumentsError(f"a JSON {type(raw).__name__}, not an object", preview_raw(raw)), False
    text = raw.strip()
    if not text:
        return ArgumentsError("empty", ""), False
    value, repaired = _decode_text(text)
    if isinstance(value, str) and value.strip():
        inner, inner_repaired = _decode_text(value.strip())
        if isinstance(inner, dict):
            value, repaired = inner, inner_repaired
    if isinstance(value, dict):
        if jsonable(value):
            return value, repaired
        return ArgumentsError("not strict JSON (NaN or Infinity)", preview_raw(raw)), False
    if value is NOT_DECODED:
        return ArgumentsError("not a JSON object", preview_raw(raw)), False
    kinds = {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    kind = kinds.get(type(value), "null")
    return ArgumentsError(f"a JSON {kind}, not an object", preview_raw(raw)), False


def schema_example(schema: Mapping[str, Any]) -> str:
    """A one-line JSON example of the required arguments of a tool (``{"code": "..."}``)."""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = schema.get("required")
    names = [n for n in required if isinstance(n, str)] if isinstance(required, list) else []
    placeholders = {"string": "...", "integer": 0, "number": 0, "boolean": True, "array": [], "object": {}}
    example: dict[str, Any] = {}
    for name in names:
        prop = properties.get(name)
        kind = prop.get("type") if isinstance(prop, Mapping) else None
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), None)
        example[name] = placeholders.get(kind, "...") if isinstance(kind, str) else "..."
    return json.dumps(example, ensure_ascii=False)
