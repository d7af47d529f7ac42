"""Parking and restoring REPL state (issue 14): time against the state's size, and the saved
envelope's size.

    .venv/bin/python benchmarks/bench_state.py [--runs N] [--no-save]

A REPL holds a list of N records (about 100 bytes each); ``park`` dumps the session and returns the
worker, the next snippet restores it on a worker. The baseline of the restore row is the same
snippet in a REPL that was not parked. Runs per second with 200 threads on 8 workers are in the
scale section (``bench_scale.py --threads 200``).
"""

from __future__ import annotations

import asyncio

from asyncai.code_mode import CodeMode
from asyncai.code_mode.engine.scope import ReplScope
from asyncai.tools.functions import FunctionTools
from report import Row, Stats, arguments, save_section, timed_async

SIZES = (0, 10_000, 100_000, 1_000_000)


async def measure(runs: int) -> list[Row]:
    rows: list[Row] = []
    async with CodeMode(FunctionTools()) as code_mode:
        for size in SIZES:
            scope = code_mode.scopes.get(f"s{size}")
            build = (
                f"data = [{{'n': i, 'name': 'item-' + str(i), 'pad': 'x' * 60}} for i in range({size})]\n"
                "len(data)"
            )
            assert (await scope.call_tool("run_code", {"code": build})).content == str(size)
            parks: list[float] = []
            restores: list[float] = []
            warm: list[float] = []

            async def length(scope: ReplScope = scope, size: int = size) -> None:
                assert (await scope.call_tool("run_code", {"code": "len(data)"})).content == str(size)

            for _ in range(runs):
                warm.append(await timed_async(length))
                parks.append(await timed_async(scope.park))
                restores.append(await timed_async(length))
            await scope.park()
            dumped = len(scope.dump or b"")
            label = f"{size:,} records"
            rows.append(Row("park", label, Stats.of(parks), note=f"dump {dumped / 2**20:.1f} MiB"))
            rows.append(
                Row("restore", f"{label}: next snippet", Stats.of(restores), "not parked", Stats.of(warm))
            )
            await code_mode.scopes.release(f"s{size}")
    return rows


def main() -> None:
    args = arguments(5).parse_args()
    rows = asyncio.run(measure(args.runs))
    notes = "In-process, one REPL per size; the snippet after a park restores the session on a worker."
    save_section("state", "Parking and restoring REPL state (issue 14)", rows, notes, save=not args.no_save)


if __name__ == "__main__":
    main()
