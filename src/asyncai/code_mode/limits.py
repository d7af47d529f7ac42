"""``CodeModeLimits``: every bound code mode applies, so no snippet can take the host down."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from asyncai.arguments import check_number
from asyncai.humanize import count

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB
MIN_MEMORY = MIB
"""The smallest heap cap the CLI accepts: below it not even the helpers of a new scope fit."""

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": KIB, "m": MIB, "g": GIB, "t": 1024 * GIB}


@dataclass(frozen=True)
class CodeModeLimits:
    """Limits of one ``run_code`` call."""

    code_timeout: float = 30.0
    """Execution time per snippet, excluding time awaiting tools (Monty ``max_feed_duration``)."""
    wall_timeout: float = 300.0
    """Wall clock per ``run_code``; in-flight calls are cancelled and the REPL is reset."""
    tool_timeout: float = 120.0
    """Per nested tool call."""
    max_calls: int = 100
    """Nested tool calls per snippet."""
    max_suspensions: int = 10_000
    """Host round trips per snippet (tool calls and OS calls the host sees)."""
    max_result_chars: int = 20_000
    """What one ``run_code`` may return to the model."""
    max_print_bytes: int = MIB
    """Collected ``print()`` output; the rest is counted and dropped."""
    max_memory: int = 4 * GIB
    """Heap cap of each sandbox worker."""
    max_state: int = 256 * MIB
    """A REPL whose dump is larger is not saved for a resumed session (``--code-max-state``)."""
    max_recursion: int = 1000
    catalog_budget: int = 16_000
    """Characters of ``run_code`` description; over it the stubs give way to an index."""

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            # Every limit is positive; the int ones (counts and sizes) are whole numbers.
            check_number(getattr(self, field.name), "CodeModeLimits", field.name, integer=field.type == "int")
        if self.max_memory < MIN_MEMORY:
            raise ValueError(
                f"CodeModeLimits: max_memory must be at least 1 MiB ({count(MIN_MEMORY)} bytes), "
                f"not {count(self.max_memory)}: a worker needs that much for a scope's helpers"
            )

    @property
    def hard_timeout(self) -> float:
        """The pool's per-turn watchdog, a backstop if the worker itself stops answering: the
        snippet limit plus 10 s."""
        return self.code_timeout + 10.0


def parse_size(text: str) -> int:
    """``"256MiB"``, ``"4GiB"``, ``"512m"``, ``"1048576"`` -> bytes; ``ValueError`` with a clear message."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"bad size {text!r}: use a number with an optional unit, e.g. 256MiB or 4GiB")
    number, unit, _ = match.groups()
    size = int(float(number) * _UNITS[unit.lower()])
    if size <= 0:
        raise ValueError(f"bad size {text!r}: must be positive")
    return size


def parse_memory(text: str) -> int:
    """``parse_size`` for a worker heap cap, refusing sizes below ``MIN_MEMORY``.

    A number without a unit is bytes, which is almost never meant: ``256`` says so and suggests
    ``256MiB``.
    """
    size = parse_size(text)
    if size >= MIN_MEMORY:
        return size
    match = _SIZE.match(text)
    assert match is not None  # parse_size accepted it
    number, unit, suffix = match.groups()
    if unit or suffix:
        raise ValueError(f"{text.strip()} is {count(size)} bytes, below the 1 MiB minimum")
    suggestion = f": did you mean {number}MiB?" if float(number) * MIB <= 64 * GIB else ""
    raise ValueError(
        f"{count(size)} bytes is below the 1 MiB minimum (a number without a unit is bytes{suggestion})"
    )
