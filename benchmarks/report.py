"""One place where every benchmark records its rows: ``benchmarks/results.json`` and the Markdown
rendering of it, ``benchmarks/RESULTS.md``.

Each script measures one section and calls :func:`save_section`, which replaces that section in
``results.json`` (other sections stay as they were) and re-renders ``RESULTS.md`` from the whole
file. Times are kept in seconds; a row compared against a baseline measured in the same run carries
the ratio. Targets are what the issue aims for; a benchmark reports and never fails.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS_JSON = HERE / "results.json"
RESULTS_MD = HERE / "RESULTS.md"
PACKAGES = ("asyncai", "pydantic-monty", "mcp", "pydantic-ai-harness", "pydantic-ai-slim", "fastmcp")

# Sections render in this order; unknown keys follow, sorted.
ORDER = (
    "context", "calls", "peers", "floor", "scale", "startup", "catalog", "crossing", "shared", "pauses",
    "eager",
)  # fmt: skip


@dataclass(frozen=True)
class Stats:
    """Seconds over several runs."""

    median: float
    min: float
    max: float
    runs: int

    @classmethod
    def of(cls, samples: Sequence[float]) -> Stats:
        return cls(statistics.median(samples), min(samples), max(samples), len(samples))


@dataclass(frozen=True)
class Row:
    """One scenario's measurement; ``baseline`` and ``ratio`` when it was compared side by side."""

    scenario: str
    case: str
    stats: Stats | None = None
    baseline_label: str = ""
    baseline: Stats | None = None
    target: str = ""
    note: str = ""
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        if self.stats is None or self.baseline is None or self.baseline.median <= 0:
            return None
        return self.stats.median / self.baseline.median


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


async def timed_async(fn: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


async def interleaved(
    harnesses: Sequence[Callable[[], Awaitable[Any]]], runs: int, warmup: int = 1
) -> list[Stats]:
    """Each harness once a round, so drift on a shared machine hits all alike."""
    for _ in range(warmup):
        for harness in harnesses:
            await harness()
    samples: list[list[float]] = [[] for _ in harnesses]
    for _ in range(runs):
        for harness, times in zip(harnesses, samples, strict=True):
            times.append(await timed_async(harness))
    return [Stats.of(times) for times in samples]


async def side_by_side(
    ours: Callable[[], Awaitable[Any]], theirs: Callable[[], Awaitable[Any]], runs: int, warmup: int = 1
) -> tuple[Stats, Stats]:
    mine, base = await interleaved([ours, theirs], runs, warmup)
    return mine, base


def arguments(runs: int, description: str | None = None) -> argparse.ArgumentParser:
    """The options every benchmark takes: ``--runs N`` and ``--no-save``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--runs", type=int, default=runs, help=f"measured runs per row ({runs})")
    parser.add_argument("--no-save", action="store_true", help="print only; leave results.json alone")
    return parser


def seconds(value: float) -> str:
    if value >= 1:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.1f} ms"
    return f"{value * 1e6:.0f} µs"


def machine() -> dict[str, Any]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return {
        "cores": os.cpu_count(),
        "cpu": _cpu_model(),
        "python": platform.python_version(),
        "system": f"{platform.system()} {platform.release()}",
        "versions": versions,
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def save_section(key: str, title: str, rows: Sequence[Row], notes: str = "", *, save: bool = True) -> None:
    """Print the section; with ``save``, also replace section ``key`` in results.json and re-render
    RESULTS.md."""
    section = {
        "title": title,
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "notes": notes,
        "rows": [_row_json(row) for row in rows],
    }
    print(render_section(section))
    if not save:
        return
    data: dict[str, Any] = {"sections": {}}
    if RESULTS_JSON.exists():
        data = json.loads(RESULTS_JSON.read_text())
    data["sections"][key] = section
    RESULTS_JSON.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    RESULTS_MD.write_text(render(data))


def _row_json(row: Row) -> dict[str, Any]:
    out = asdict(row)
    out["ratio"] = row.ratio
    return out


def _ordered(sections: dict[str, Any]) -> list[str]:
    known = [key for key in ORDER if key in sections]
    return known + sorted(key for key in sections if key not in ORDER)


def render(data: dict[str, Any]) -> str:
    parts = [
        "# Benchmarks\n",
        "Written by `make bench` (each script replaces its own section of `results.json`, and this "
        "file is rendered from it). Times are medians with min and max; ratios compare two things "
        "measured side by side in the same run. Targets are goals, not pass/fail.\n",
    ]
    parts += [render_section(data["sections"][key]) for key in _ordered(data["sections"])]
    return "\n".join(parts)


def render_section(section: dict[str, Any]) -> str:
    m = section["machine"]
    versions = ", ".join(f"{name} {version}" for name, version in m["versions"].items())
    lines = [
        f"## {section['title']}\n",
        f"{section['date']}, {m['cores']} cores ({m['cpu']}), Python {m['python']}; {versions}.\n",
        "| scenario | case | median | min … max | baseline | ratio | target | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in section["rows"]:
        stats, base = row["stats"], row["baseline"]
        median = seconds(stats["median"]) if stats else ""
        spread = f"{seconds(stats['min'])} … {seconds(stats['max'])} (n={stats['runs']})" if stats else ""
        baseline = f"{row['baseline_label']}: {seconds(base['median'])}" if base else row["baseline_label"]
        ratio = f"{row['ratio']:.2f}x" if row["ratio"] is not None else ""
        cells = [row["scenario"], row["case"], median, spread, baseline, ratio, row["target"], row["note"]]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    if section["notes"]:
        lines += ["", section["notes"].strip()]
    return "\n".join(lines) + "\n"
