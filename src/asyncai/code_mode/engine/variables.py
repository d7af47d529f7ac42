"""The variables note: which of the REPL's names to probe after a snippet, the probe itself, and
the note the model reads (reading the snippet is ``read``'s)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from asyncai.code_mode.engine.preamble import INTERNAL_PREFIX

MAX_NOTE_NAMES = 30
MAX_NOTE_CHARS = 600
_SIZED_TYPES = ("list", "dict", "str", "tuple", "set", "frozenset", "bytes")


def note_candidates(names: list[str]) -> list[str]:
    return [name for name in names if not name.startswith(INTERNAL_PREFIX)]


_MAY_MUTATE = re.compile(
    r"\.\s*[A-Za-z_]\w*\s*\("  # a method call: x.append(...), random.shuffle(x)
    r"|\.\s*[A-Za-z_]\w*\s*=(?!=)|\]\s*=(?!=)"  # x.a = ..., x[k] = ...
    r"|(?:\+|-|\*\*?|//?|%|&|\||\^|@|<<|>>)=(?!=)"  # x += ..., x[k] -= ...
    r"|\b(?:del|global|nonlocal)\b"
)


def names_to_probe(code: str, held: list[str], bound: list[str]) -> list[str]:
    """Which of the REPL's ``held`` names (oldest first) the variables probe must look at again
    after ``code``, which binds ``bound``: those it binds, or every one when it may change a value
    in place (a method call, an item or attribute stored, ``del``, ``global``) or calls a function
    the REPL defined. A name it only reads still holds what the last probe saw (its type changes
    only when it is bound, its size only in place); the probe's cost grows with the names it looks
    at (3 ms for 30, measured)."""
    called = (name for name in held if name in code)  # a substring first: the regex only for those
    if _MAY_MUTATE.search(code) or any(re.search(rf"\b{re.escape(name)}\s*\(", code) for name in called):
        order = dict.fromkeys(held)
    else:
        order = {}
    for name in note_candidates(bound):
        order.pop(name, None)
        order[name] = None
    return list(order)


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


class KnownVariables:
    """What the host knows of a REPL's variables: the names its snippets bound (oldest first), what
    the last probe saw of them, and the note made from that."""

    def __init__(self) -> None:
        self.bound: dict[str, None] = {}
        self.variables: list[BoundVariable] = []
        self.note: str | None = None
        self.functions: dict[str, str] = {}
        """The source of each function the REPL's snippets (and loaded skills) defined, by name."""

    def listed(self) -> list[BoundVariable]:
        """As of the last snippet (names only for a restored REPL not yet run)."""
        if self.variables or not self.bound:
            return list(self.variables)
        return [BoundVariable(name, "?") for name in reversed(self.bound)]

    def remember(self, bound: tuple[str, ...], functions: tuple[tuple[str, str], ...] = ()) -> None:
        """A snippet bound ``bound``, defining ``functions`` (a name bound otherwise is no
        longer the function it was)."""
        for name in note_candidates(list(bound)):
            self.bound.pop(name, None)
            self.bound[name] = None
        for name in bound:
            self.functions.pop(name, None)
        self.functions.update(functions)

    def bring_forward(self, names: tuple[str, ...]) -> None:
        """Note ``names``, which the last probe found, as bound most recently, in their order; the
        rows stay as that probe saw them, so none runs again."""
        found = tuple(name for name in names if name in self.bound)
        if found:
            self.remember(found)
            self.update([], ())  # nothing probed: every row stays, in the new order

    def forget(self) -> None:
        self.bound.clear()
        self.variables = []
        self.note = None
        self.functions = {}

    def take_up(
        self,
        bound: tuple[str, ...],
        rows: tuple[tuple[str, str, int], ...],
        note: str | None,
        functions: tuple[tuple[str, str], ...] = (),
    ) -> None:
        """What a saved REPL knew (``state.stores.SavedScope``)."""
        self.bound = dict.fromkeys(bound)
        self.variables = [BoundVariable(*row) for row in rows]
        self.note = note
        self.functions = dict(functions)

    def rows(self) -> tuple[tuple[str, str, int], ...]:
        return tuple((v.name, v.type_name, v.size) for v in self.variables)

    def update(self, rows: list[Any], probed: tuple[str, ...] | None) -> None:
        """Take in a probe's ``rows`` (name, type, size) of the ``probed`` names; ``None``: every
        name was probed, and those it did not find are gone. The others hold what the last probe
        saw."""
        names = list(reversed(self.bound))
        seen = {str(n): BoundVariable(str(n), str(t), int(s)) for n, t, s in rows}
        if probed is None:
            variables = list(seen.values())
        else:
            before = {variable.name: variable for variable in self.variables}
            kept = (seen.get(name) or before.get(name, BoundVariable(name, "?")) for name in names)
            variables = [v for v in kept if v.name in seen or v.name not in probed]
        self.bound = {v.name: None for v in reversed(variables)}
        self.variables = variables
        self.note = format_note(variables)
