"""Numbers and durations as people read them in messages: ``30,000`` and ``3.0 s``."""

from __future__ import annotations


def count(number: int) -> str:
    """``30000`` -> ``"30,000"``."""
    return f"{number:,}"


def one_line(text: str, limit: int) -> str:
    """``text`` on one line (runs of whitespace become one space), cut to ``limit`` with ``...``."""
    text = " ".join(text.split())
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def seconds(duration: float) -> str:
    """``3`` -> ``"3.0 s"``, ``0.25`` -> ``"0.25 s"``, ``120`` -> ``"120.0 s"``."""
    text = f"{duration:.2f}".rstrip("0")
    return f"{text}0 s" if text.endswith(".") else f"{text} s"


def data_size(size: int) -> str:
    """``512`` -> ``"512 B"``, ``12_345`` -> ``"12.1 KB"``, ``3_500_000`` -> ``"3.3 MB"`` (1 KB = 1,024 B)."""
    if size < 1024:
        return f"{size} B"
    value = size / 1024
    for unit in ("KB", "MB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"
