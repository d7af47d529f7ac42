"""Sandbox values back to JSON, so a snippet's result can be recorded and sent anywhere.

A value that came back from the Monty sandbox is a host Python value: JSON-like data, plus tuples,
sets, dicts with non-``str`` keys, bytes, datetimes, ``MontyClassProxy`` and repr strings. This module
turns it into something ``json.dumps`` accepts, without recursion, so a pathologically deep value
(a 1000-deep nested list) cannot crash the host.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any, Final

from asyncai.log import dumps_compact

__all__ = ["compact_json", "to_json_value"]

# int -> str conversion is capped at 4300 digits by default (CPython >= 3.11); stay well below it.
_MAX_INT_BITS: Final = 14_000

_Children = Iterator[tuple[str | None, Any]]
_Frame = tuple[list[Any] | dict[str, Any], _Children, int]


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception:  # a repr may recurse too deep or raise; the model still gets a marker
        return f"<{type(value).__name__} object>"


def _scalar(value: Any) -> Any:
    """A non-container value as JSON: None/bool/int/str as is, non-finite floats as strings."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        if value.bit_length() > _MAX_INT_BITS:
            return f"<int of {value.bit_length()} bits>"
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    return _safe_repr(value)


def _set_order(values: set[Any] | frozenset[Any]) -> list[Any]:
    """Set members in a deterministic order: sorted, else by (type, repr), else iteration order."""
    try:
        return sorted(values)
    except TypeError:
        pass
    try:
        return sorted(values, key=lambda v: (type(v).__name__, repr(v)))
    except Exception:
        return list(values)


def _key(key: Any) -> str:
    return key if isinstance(key, str) else _safe_repr(key)


def _open(value: Any) -> tuple[list[Any] | dict[str, Any], _Children] | None:
    """An empty output container and the children to fill it with, or None for a scalar."""
    if isinstance(value, dict):
        return {}, ((_key(k), v) for k, v in value.items())
    if isinstance(value, (set, frozenset)):
        return [], ((None, v) for v in _set_order(value))
    if isinstance(value, (list, tuple)):
        return [], ((None, v) for v in value)
    return None


def to_json_value(value: Any) -> Any:
    """Convert a host value from the sandbox into plain JSON data (iteratively, any depth).

    tuples, sets and frozensets become lists (sets sorted when possible); dict keys that are not
    ``str`` become their ``repr``; NaN/inf become ``"NaN"``/``"Infinity"``/``"-Infinity"``; any
    other object becomes its ``repr`` string. A container that contains itself is cut with a marker.
    """
    if not isinstance(value, dict | list | tuple | set | frozenset):  # most snippets return a scalar
        return _scalar(value)
    root: list[Any] = []
    stack: list[_Frame] = [(root, iter([(None, value)]), 0)]
    active: set[int] = set()  # ids of the containers on the current path (cycle guard)
    while stack:
        out, children, ident = stack[-1]
        step = next(children, None)
        if step is None:
            stack.pop()
            active.discard(ident)
            continue
        key, child = step
        opened = _open(child)
        if opened is None:
            converted: Any = _scalar(child)
        elif id(child) in active:
            converted = "<cycle>"
        else:
            converted, grandchildren = opened
            stack.append((converted, grandchildren, id(child)))
            active.add(id(child))
        if isinstance(out, dict):
            out[key or ""] = converted
        else:
            out.append(converted)
    return root[0]


def _dump_iteratively(data: Any) -> str:
    """Compact JSON for converted data, without recursion (same text as ``json.dumps``)."""
    parts: list[str] = []
    stack: list[tuple[Iterator[tuple[int, str | None, Any]], str]] = []

    def emit(item: Any) -> None:
        if isinstance(item, dict):
            parts.append("{")
            stack.append((((i, k, v) for i, (k, v) in enumerate(item.items())), "}"))
        elif isinstance(item, list):
            parts.append("[")
            stack.append((((i, None, v) for i, v in enumerate(item)), "]"))
        else:
            parts.append(json.dumps(item, ensure_ascii=False))

    emit(data)
    while stack:
        children, closer = stack[-1]
        step = next(children, None)
        if step is None:
            parts.append(closer)
            stack.pop()
            continue
        index, key, child = step
        if index:
            parts.append(",")
        if key is not None:
            parts.append(json.dumps(key, ensure_ascii=False))
            parts.append(":")
        emit(child)
    return "".join(parts)


def compact_json(value: Any) -> str:
    """``json.dumps(to_json_value(value), ensure_ascii=False, separators=(",", ":"))``, any depth."""
    return dump_json(to_json_value(value))


def dump_json(data: Any) -> str:
    """Compact JSON for data already converted by ``to_json_value``, any depth."""
    try:
        return dumps_compact(data)
    except RecursionError:
        return _dump_iteratively(data)
