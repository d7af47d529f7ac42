"""Checks of what a library user passes to asyncai's public constructors.

A wrong argument fails at the call, as a ``TypeError`` (the wrong kind of thing) or a ``ValueError``
(the right kind, a wrong value), with one line naming the parameter and what it accepts: never as an
``AttributeError`` from deep inside, later. Each constructor checks its own parameters with these.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from types import UnionType
from typing import Any


def shown(value: object) -> str:
    """A wrong argument as a message names it: plain values by type and value, others by type."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int | float | str | bytes):
        text = repr(value)
        return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"
    return f"a {type(value).__name__}"


def refusal(owner: str, parameter: str, accepts: str, value: object, hint: str | None = None) -> str:
    """``CodeMode: limits must be a CodeModeLimits or None, not a FunctionTools (hint)``."""
    return f"{owner}: {parameter} must be {accepts}, not {shown(value)}" + (f" ({hint})" if hint else "")


def check_instance(
    value: object,
    kinds: type | UnionType | tuple[type, ...],
    owner: str,
    parameter: str,
    accepts: str,
    hint: str | None = None,
) -> None:
    if not isinstance(value, kinds):
        raise TypeError(refusal(owner, parameter, accepts, value, hint))


def check_flag(value: object, owner: str, parameter: str) -> None:
    """A bool: a string such as ``"no"`` would be true."""
    check_instance(value, bool, owner, parameter, "True or False")


def check_choice(value: object, choices: Collection[str], owner: str, parameter: str) -> None:
    if not isinstance(value, str) or value not in choices:
        accepts = "one of " + ", ".join(repr(choice) for choice in choices)
        raise ValueError(refusal(owner, parameter, accepts, value))


def check_number(value: object, owner: str, parameter: str, *, integer: bool = False) -> None:
    """A positive finite number (an ``int`` when ``integer``); ``bool`` is not a number here."""
    accepts = "a positive integer" if integer else "a positive number"
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (integer and isinstance(value, float))
    ):
        raise TypeError(refusal(owner, parameter, accepts, value))
    if not math.isfinite(value) or value <= 0:
        raise ValueError(refusal(owner, parameter, accepts, value))


def check_method(
    value: object, method: str, owner: str, parameter: str, accepts: str, hint: str | None = None
) -> None:
    """An object of a structural protocol: it has ``method`` (approvers, stores, tracer providers)."""
    if not callable(getattr(value, method, None)):
        raise TypeError(refusal(owner, parameter, accepts, value, hint))


def strings(value: object, owner: str, parameter: str) -> tuple[str, ...]:
    """Several strings: a list, tuple or set of them (one ``str`` would be taken letter by letter)."""
    accepts = "a list of strings"
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise TypeError(refusal(owner, parameter, accepts, value))
    items: list[Any] = list(value)
    for item in items:
        if not isinstance(item, str):
            raise TypeError(refusal(owner, f"every item of {parameter}", "a string", item))
    return tuple(items)


def string_map(value: object, owner: str, parameter: str) -> dict[str, str]:
    """A mapping of strings to strings (an environment, HTTP headers)."""
    if not isinstance(value, Mapping):
        raise TypeError(refusal(owner, parameter, "a dict of strings to strings", value))
    for key, item in value.items():
        if not isinstance(key, str):
            raise TypeError(refusal(owner, f"every key of {parameter}", "a string", key))
        if not isinstance(item, str):
            raise TypeError(refusal(owner, f"{parameter}[{key!r}]", "a string", item))
    return dict(value)
