"""Catalogs that scale (issue 11): description size against tool count, the cost of building the
catalog and the search index for 3,000 tools, and ``search_tools`` latency.

    .venv/bin/python benchmarks/bench_catalog.py

Tools come from ``tests/fakes/big_server.py`` (a generated cloud-provider API); everything here is
in-process: no server, no sandbox.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.code_mode.catalog.queries import QUERIES
from tests.fakes.big_server import generate

from asyncai.code_mode.catalog.description import run_code_definition
from asyncai.code_mode.catalog.entries import build_catalog
from asyncai.code_mode.catalog.search import ToolFinder
from asyncai.code_mode.catalog.stubs import render_catalog
from asyncai.tools.mcp.results import tool_definition
from report import Row, Stats, save_section

RUNS = 5


def samples(action: Callable[[], object], runs: int = RUNS) -> Stats:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return Stats.of(times)


def main() -> None:
    rows: list[Row] = []
    for count in (10, 100, 1_000, 3_000):
        tools = [tool_definition(t, "big-cloud") for t in generate(count)]
        full = len(render_catalog(tools))
        description = len(run_code_definition(tools).description)
        rows.append(
            Row(
                "catalog size",
                f"{count:,} tools",
                target="≤ 16,000 chars (the budget)",
                note=f"full stubs {full:,} chars; run_code description {description:,} chars",
                values={"tools": count, "full_stub_chars": full, "description_chars": description},
            )
        )

    tools = [tool_definition(t, "big-cloud") for t in generate(3_000)]
    rows.append(
        Row("3,000 tools", "build the catalog (names, parameters)", samples(lambda: build_catalog(tools)))
    )
    rows.append(
        Row(
            "3,000 tools",
            "render the description (full stubs measured, index kept)",
            samples(lambda: run_code_definition(tools)),
        )
    )
    catalog = build_catalog(tools)
    start = time.perf_counter()
    finder = ToolFinder(catalog)
    finder.search("warm up", 1)  # the index is built (and bm25s imported) on the first search
    rows.append(
        Row(
            "3,000 tools",
            "first search: import bm25s, build the index (once)",
            Stats.of([time.perf_counter() - start]),
        )
    )
    latencies = []
    for query in QUERIES:
        start = time.perf_counter()
        finder.search(query, 10)
        latencies.append(time.perf_counter() - start)
    rows.append(Row("3,000 tools", f"search_tools, {len(QUERIES)} queries, limit 10", Stats.of(latencies)))
    notes = "Tools from `tests/fakes/big_server.py` (a generated cloud-provider API); all in-process."
    save_section("catalog", "Catalogs that scale: description size and tool search", rows, notes)


if __name__ == "__main__":
    main()
