"""Nested calls against the bare ``mcp`` SDK client on the same MCP session (issue 12, scenarios 2-4).

    .venv/bin/python benchmarks/bench_calls.py [--runs N] [--no-save]

One stdio server (``benchmarks/bench_server.py``), one ``McpServers`` session to it. asyncai
runs each program through ``run_code`` (a real sandbox worker); the baseline is the same work done
by the ``mcp`` SDK's ``ClientSession.call_tool`` on that same session, in CPython:

2. 1,000 sequential awaited ``ping()`` calls; beside them the sandbox's floor: the same program fed
   straight to a ``pydantic-monty`` session, ``ping`` an external function that calls the SDK
   client on the same session (no asyncai code runs), all three interleaved run by run.
3. 100 gathered ``nap(ms=50)`` calls.
4. A 10 MB JSON result filtered to a count: in the sandbox, against ``json.loads`` and the same
   filter in CPython.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pydantic_monty as pm

from asyncai.code_mode import CodeMode, CodeModeLimits
from asyncai.tools.mcp.client import McpServers
from asyncai.tools.mcp.specs import stdio_spec
from bench_server import RECORDS_PER_10_MB
from report import Row, arguments, interleaved, save_section, side_by_side

SERVER = f"bench={sys.executable} {Path(__file__).resolve().with_name('bench_server.py')}"
SEQUENTIAL = 1_000
FAN_OUT = 100
NAP_MS = 50

PROGRAMS = {
    "sequential": f"n = 0\nfor _ in range({SEQUENTIAL}):\n    await ping()\n    n += 1\nn",
    "fan_out": f"len(await asyncio.gather(*[nap(ms={NAP_MS}) for _ in range({FAN_OUT})]))",
    "large": (
        f"doc = await records(count={RECORDS_PER_10_MB})\nsum(1 for item in doc['items'] if item['warning'])"
    ),
}


def expected_warnings() -> int:
    return sum(1 for i in range(RECORDS_PER_10_MB) if i % 7 == 0)


async def measure(runs: int) -> list[Row]:
    async with McpServers([stdio_spec(SERVER)]) as mcp:
        code_mode = CodeMode(mcp, CodeModeLimits(max_calls=SEQUENTIAL))
        session = mcp.connections[0]._client
        assert session is not None

        async def run(name: str, want: int) -> None:
            out = await code_mode.call_tool("run_code", {"code": PROGRAMS[name]})
            assert not out.is_error and json.loads(out.content) == want, out.content[:300]

        async def sdk_sequential() -> None:
            for _ in range(SEQUENTIAL):
                await session.call_tool("ping", {})

        async def sdk_fan_out() -> None:
            await asyncio.gather(*[session.call_tool("nap", {"ms": NAP_MS}) for _ in range(FAN_OUT)])

        async def sdk_large() -> None:
            result = await session.call_tool("records", {"count": RECORDS_PER_10_MB})
            text = result.content[0].text  # type: ignore[union-attr]
            count = sum(1 for item in json.loads(text)["items"] if item["warning"])
            assert count == expected_warnings()

        rows: list[Row] = []
        try:
            async with pm.AsyncMonty(min_processes=1, max_processes=1) as pool:
                worker = pool.checkout(limits={"max_memory": 4 * 1024**3, "max_suspensions": 10**9})
                async with worker:

                    async def ping(**arguments: Any) -> Any:
                        return (await session.call_tool("ping", arguments)).structured_content

                    async def floor_sequential() -> None:
                        code = PROGRAMS["sequential"]
                        n = await worker.feed_run(code, external_lookup={"ping": ping}, skip_type_check=True)
                        assert n == SEQUENTIAL

                    ours, floor, sdk = await interleaved(
                        [lambda: run("sequential", SEQUENTIAL), floor_sequential, sdk_sequential], runs
                    )
            added = (ours.median - sdk.median) / SEQUENTIAL
            floor_added = (floor.median - sdk.median) / SEQUENTIAL
            rows.append(
                Row(
                    "2 nested-call overhead",
                    f"{SEQUENTIAL:,} sequential awaited ping() in one run_code",
                    ours,
                    "mcp SDK call_tool, same session",
                    sdk,
                    "≤ 1.15x, < 0.3 ms added per call",
                    f"{added * 1e6:.0f} µs added per call; the floor row below is the sandbox alone",
                    {"added_per_call_s": added},
                )
            )
            rows.append(
                Row(
                    "2 the floor",
                    "the same program, bare pydantic-monty feed_run",
                    floor,
                    "mcp SDK call_tool, same session",
                    sdk,
                    "",
                    f"{floor_added * 1e6:.0f} µs added per call by the worker's crossing alone; "
                    f"asyncai takes {ours.median / floor.median:.2f}x the floor",
                    {"added_per_call_s": floor_added, "asyncai_over_floor": ours.median / floor.median},
                )
            )
            ours, sdk = await side_by_side(lambda: run("fan_out", FAN_OUT), sdk_fan_out, runs)
            rows.append(
                Row(
                    "3 fan-out",
                    f"{FAN_OUT} gathered nap(ms={NAP_MS})",
                    ours,
                    "mcp SDK asyncio.gather",
                    sdk,
                    "≤ 1.1x",
                )
            )
            ours, sdk = await side_by_side(
                lambda: run("large", expected_warnings()), sdk_large, max(3, runs // 2)
            )
            rows.append(
                Row(
                    "4 large result",
                    "10 MB JSON filtered to a count in the sandbox",
                    ours,
                    "mcp SDK + CPython json.loads",
                    sdk,
                    "≤ 1.0x",
                )
            )
        finally:
            await code_mode.aclose()
    return rows


def main() -> None:
    args = arguments(7).parse_args()
    rows = asyncio.run(measure(args.runs))
    notes = "Programs run through `run_code`:\n\n" + "\n\n".join(
        f"```python\n{code}\n```" for code in PROGRAMS.values()
    )
    title = "Nested calls against the mcp SDK client (scenarios 2-4)"
    save_section("calls", title, rows, notes, save=not args.no_save)


if __name__ == "__main__":
    main()
