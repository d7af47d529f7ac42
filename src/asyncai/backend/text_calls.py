"""Tool calls a model wrote in its reply's text instead of ``tool_calls``: a fenced JSON block,
``<tool_call>`` tags or bare JSON, one call or several. Pure functions."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from asyncai.backend.decoding import NOT_DECODED, WHOLE_FENCE, python_literal, repair_code_literals
from asyncai.backend.wire import RawToolCall


@dataclass(frozen=True)
class TextCalls:
    """Tool calls a model wrote in its reply text instead of ``tool_calls`` (see :func:`calls_in_text`)."""

    calls: tuple[RawToolCall, ...]
    prose: str | None
    """The text before the calls, kept as the reply's content (``None`` when there is none)."""
    kind: str
    """How they were written: ``fenced_json``, ``tool_call_tags`` or ``bare_json``."""
    repairs: tuple[tuple[str, ...], ...] = ()
    """Each call's repairs: how it was written, and ``code_quoted`` when its code was in backticks
    or triple quotes."""


_NAME_KEYS = ("name", "function", "tool", "tool_name")
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")
_NOT_ARGUMENTS = frozenset({*_NAME_KEYS, "type", "id"})
_TAG_OPEN = re.compile(r"<(tool_call|tool_calls|tools|function_call)>")
"""Qwen's ``<tool_call>`` and the tags other templates use (``<tools>``, ``<function_call>``)."""
_FENCE_OPEN = re.compile(r"[ \t]*```[ \t]*[A-Za-z0-9_+-]*[ \t]*(?:\n|\Z)")
_CALL_START = re.compile(r"^[ \t]*(?:[{\[]|```)|<(?:tool_call|tool_calls|tools|function_call)>", re.MULTILINE)
_MAX_STARTS = 200
"""Where the calls may begin, tried from the first: a reply with more such lines is prose."""


def _call_of(value: Any, names: Collection[str]) -> RawToolCall | None:
    """One call object: ``{"name", "arguments"}``, ``function`` or ``tool`` for ``name``,
    ``parameters`` for ``arguments``, OpenAI's ``{"function": {...}}``, or the arguments beside the
    name; ``None`` when it names no tool in ``names``."""
    if not isinstance(value, Mapping):
        return None
    nested = value.get("function")
    if isinstance(nested, Mapping):
        return _call_of(nested, names)
    name = next((value[key] for key in _NAME_KEYS if isinstance(value.get(key), str)), None)
    if name is None or name.strip() not in names:
        return None
    key = next((key for key in _ARGUMENT_KEYS if key in value), None)
    arguments = value[key] if key is not None else {k: v for k, v in value.items() if k not in _NOT_ARGUMENTS}
    return RawToolCall(id=None, name=name.strip(), arguments=arguments)


def _json_values(text: str) -> list[Any] | None:
    """Every JSON value in ``text``, one after another (separated by whitespace or commas)."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    position = 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if values and position < len(text) and text[position] in ",;":
            position += 1  # between two values only
            while position < len(text) and text[position].isspace():
                position += 1
            if position == len(text):
                return None
        if position == len(text):
            return values or None
        try:
            value, position = decoder.raw_decode(text, position)
        except (ValueError, RecursionError):
            return None
        values.append(value)


def _decoded_values(text: str) -> tuple[list[Any], bool] | None:
    """The values written in a call's text: JSON (one or several), after quoted code is repaired,
    or a Python literal; and whether quoted code had to be repaired."""
    values = _json_values(text)
    if values is not None:
        return values, False
    repaired = repair_code_literals(text)
    if repaired != text and (values := _json_values(repaired)) is not None:
        return values, True
    value = python_literal(repaired)
    return None if value is NOT_DECODED else ([value], repaired != text)


def _calls_in_values(values: list[Any], names: Collection[str]) -> list[RawToolCall] | None:
    """The calls the values hold (objects, lists of them, ``{"tool_calls": [...]}``), or ``None``
    when any of them is not a call to a tool in ``names``."""
    items: list[Any] = []
    for value in values:
        if isinstance(value, Mapping) and isinstance(value.get("tool_calls"), list):
            items.extend(value["tool_calls"])
        elif isinstance(value, list):
            items.extend(value)
        else:
            items.append(value)
    calls = [_call_of(item, names) for item in items]
    if not calls or any(call is None for call in calls):
        return None
    return [call for call in calls if call is not None]


_Unit = tuple[list[RawToolCall], bool, int]
"""The calls of one block, whether its quoted code was repaired, and where the block ends."""


def _doubled_braces(text: str) -> tuple[list[Any], bool] | None:
    """The value of ``{{...}}``: a call object written with its braces doubled, as in a template."""
    if not text.startswith("{{"):
        return None
    try:
        value, end = json.JSONDecoder().raw_decode(text, 1)
    except (ValueError, RecursionError):
        return None
    return ([value], False) if set(text[end:].strip()) <= {"}"} else None


def _body_calls(body: str, names: Collection[str], end: int) -> _Unit | None:
    text = body.strip()
    fence = WHOLE_FENCE.match(text)
    if fence:  # ```json inside <tool_call> tags
        text = fence.group(1)
    decoded = (_decoded_values(text) or _doubled_braces(text)) if text else None
    if decoded is None:
        return None
    calls = _calls_in_values(decoded[0], names)
    return None if calls is None else (calls, decoded[1], end)


def _fenced_unit(text: str, start: int, names: Collection[str]) -> _Unit | None:
    """The calls of the fenced block at ``start``. The block may close at any later line that is
    only a fence: code inside it can hold fences of its own."""
    opening = _FENCE_OPEN.match(text, start)
    if opening is None:
        return None
    body_start = opening.end()
    closings = re.finditer(r"^[ \t]*```[ \t]*$", text[body_start:], re.MULTILINE)
    ends = [(body_start + m.start(), body_start + m.end()) for m in closings]
    ends.append((len(text), len(text)))  # unclosed: the model stopped before the fence
    for body_end, end in ends:
        unit = _body_calls(text[body_start:body_end], names, end)
        if unit is not None:
            return unit
    return None


def _tag_unit(text: str, start: int, names: Collection[str]) -> _Unit | None:
    """The calls of the ``<tool_call>`` block at ``start`` (its closing tag may be missing at the end)."""
    opening = _TAG_OPEN.match(text, start)
    if opening is None:
        return None
    body_start, closing = opening.end(), f"</{opening.group(1)}>"
    closings = [m.start() for m in re.finditer(re.escape(closing), text[body_start:])]
    ends = [(body_start + at, body_start + at + len(closing)) for at in closings]
    ends.append((len(text), len(text)))  # the closing tag may be missing at the end
    for body_end, end in ends:  # a string inside the call may hold the closing tag
        unit = _body_calls(text[body_start:body_end], names, end)
        if unit is not None:
            return unit
    return None


def _calls_to_end(
    text: str, start: int, names: Collection[str]
) -> list[tuple[RawToolCall, tuple[str, ...]]] | None:
    """The calls from ``start`` to the end of ``text``, each with the repairs it needed, when
    nothing but calls and whitespace follows ``start``."""
    found: list[tuple[RawToolCall, tuple[str, ...]]] = []
    position = start
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position == len(text):
            return found or None
        if _TAG_OPEN.match(text, position):
            unit, kind = _tag_unit(text, position, names), "tool_call_tags"
        elif text.startswith("```", position):
            unit, kind = _fenced_unit(text, position, names), "fenced_json"
        else:  # bare JSON runs to the end of the reply
            unit, kind = _body_calls(text[position:], names, len(text)), "bare_json"
        if unit is None:
            return None
        calls, quoted, position = unit
        repairs = (kind, "code_quoted") if quoted else (kind,)
        found.extend((call, repairs) for call in calls)


def _blocks_anywhere(
    text: str, starts: Sequence[int], names: Collection[str]
) -> tuple[int, list[tuple[RawToolCall, tuple[str, ...]]]] | None:
    """The calls of every fenced or tagged call block in ``text``, wherever it stands, and where
    the first begins: small models announce a call, write it, then say what it will return."""
    found: list[tuple[RawToolCall, tuple[str, ...]]] = []
    first, position = -1, 0
    for start in starts:
        if start < position:
            continue  # inside a block already read
        at = start + len(text[start:]) - len(text[start:].lstrip(" \t"))
        if _TAG_OPEN.match(text, at):
            unit, kind = _tag_unit(text, at, names), "tool_call_tags"
        elif text.startswith("```", at):
            unit, kind = _fenced_unit(text, at, names), "fenced_json"
        else:
            continue
        if unit is None:
            continue
        calls, quoted, position = unit
        first = start if first < 0 else first
        found.extend((call, (kind, "code_quoted") if quoted else (kind,)) for call in calls)
    return (first, found) if found else None


def calls_in_text(content: str | None, names: Collection[str]) -> TextCalls | None:
    """The tool calls a reply without ``tool_calls`` wrote as text, or ``None`` when it is prose.

    Recognised: a fenced JSON block, ``<tool_call>...</tool_call>`` tags (or ``<tools>``,
    ``<function_call>``; the closing tag may be missing at the end) and a bare JSON object, one
    call or several; each call ``{"name", "arguments"}``, with ``function`` or ``tool`` for
    ``name``, ``parameters`` for ``arguments``, arguments as an object or a JSON string, or beside
    the name, braces doubled or not; ``code`` may be in backticks or triple quotes. Every call
    must name a tool in ``names``. Text may come before the calls (it stays the reply's content);
    fenced and tagged calls may also have text after them (small models say what the call will
    do), while bare JSON followed by more text is prose.
    """
    if not content or not names:
        return None
    starts = [match.start() for match in _CALL_START.finditer(content)][:_MAX_STARTS]
    found: list[tuple[RawToolCall, tuple[str, ...]]] | None = None
    for start in starts:
        found = _calls_to_end(content, start, names)
        if found is not None:
            break
    else:
        anywhere = _blocks_anywhere(content, starts, names)
        if anywhere is None:
            return None
        start, found = anywhere
    prose = content[:start].strip()
    return TextCalls(
        calls=tuple(call for call, _ in found),
        prose=prose or None,
        kind=found[0][1][0],
        repairs=tuple(repairs for _, repairs in found),
    )
