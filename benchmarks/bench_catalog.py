"""Catalogs that scale (issue 11): description size against tool count, the cost of building the
catalog and the search index for 3,000 tools, and ``search_tools`` latency.

    .venv/bin/python benchmarks/bench_catalog.py

Tools come from ``tests/fakes/big_server.py`` (a generated cloud-provider API); everything here is
in-process: no server, no sandbox.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.code_mode.test_catalog_scale import QUERIES
from tests.fakes.big_server import generate

from asyncai.code_mode.catalog import render_catalog
from asyncai.code_mode.executor import build_catalog, run_code_definition
from asyncai.code_mode.search import ToolFinder
from asyncai.tools.results import tool_definition

RUNS = 5


def median_seconds(action: object, runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    print("| tools | full stubs (chars) | run_code description (chars) |")
    print("|---|---|---|")
    for count in (10, 100, 1_000, 3_000):
        tools = [tool_definition(t, "big-cloud") for t in generate(count)]
        full = len(render_catalog(tools))
        description = len(run_code_definition(tools).description)
        print(f"| {count:,} | {full:,} | {description:,} |")

    tools = [tool_definition(t, "big-cloud") for t in generate(3_000)]
    catalog_time = median_seconds(lambda: build_catalog(tools))
    description_time = median_seconds(lambda: run_code_definition(tools))
    catalog = build_catalog(tools)
    start = time.perf_counter()
    finder = ToolFinder(catalog)
    finder.search("warm up", 1)  # the index is built (and bm25s imported) on the first search
    index_time = time.perf_counter() - start
    latencies = []
    for query in QUERIES:
        start = time.perf_counter()
        finder.search(query, 10)
        latencies.append(time.perf_counter() - start)
    print()
    print("| at 3,000 tools | median |")
    print("|---|---|")
    rows = [
        ("build the catalog (names, parameters)", f"{catalog_time * 1000:.0f} ms"),
        ("render the description (full stubs measured, index kept)", f"{description_time * 1000:.0f} ms"),
        ("first search: import bm25s, build the index (once)", f"{index_time * 1000:.0f} ms"),
        (f"search_tools, {len(QUERIES)} queries, limit 10", f"{statistics.median(latencies) * 1000:.1f} ms"),
    ]
    for label, value in rows:
        print(f"| {label} | {value} |")


if __name__ == "__main__":
    main()
