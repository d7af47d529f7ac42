"""What traces cost (issue 26): a nested call with OpenTelemetry spans exported against without.

    .venv/bin/python benchmarks/bench_tracing.py [--runs N] [--no-save]

One ``CodeMode`` over the bench MCP server (stdio) runs a snippet of 1,000 sequential ``ping()``
calls, and one of 100 gathered ones, alternating between two code modes on the same server: one
whose spans go nowhere (no tracer provider: the API's no-op spans) and one whose ``TracerProvider``
has the SDK's ``BatchSpanProcessor`` and OTLP/HTTP exporter sending to a receiver on loopback
(``tests/fakes/otlp_receiver.py``, decoding every batch), as ``--otlp`` sets up. Each nested call
is then two spans (asyncai's and the mcp SDK's client span, made with the global provider, which
this script sets to the same one). Target: under 5 % per nested call.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from report import Row, Stats, arguments, save_section, seconds, timed_async

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes.otlp_receiver import OtlpReceiver

from asyncai.code_mode import CodeMode, CodeModeLimits
from asyncai.tools.mcp.client import McpServers
from asyncai.tools.mcp.specs import stdio_spec

HERE = Path(__file__).resolve().parent
SERVER = f"bench={sys.executable} {HERE / 'bench_server.py'}"
SEQUENTIAL = 1_000
GATHERED = 100
SNIPPETS = {
    "sequential": (f"n = 0\nfor _ in range({SEQUENTIAL}):\n    await ping()\n    n += 1\nn", SEQUENTIAL),
    "gathered": (
        f"import asyncio\nlen(await asyncio.gather(*[ping() for _ in range({GATHERED})]))",
        GATHERED,
    ),
}
TARGET = "< 1.05x"


async def measure(runs: int) -> tuple[list[Row], int]:
    limits = CodeModeLimits(max_calls=2 * SEQUENTIAL)
    rows: list[Row] = []
    with OtlpReceiver() as receiver:
        provider = TracerProvider()
        provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{receiver.url}/v1/traces"))
        )
        trace.set_tracer_provider(provider)  # the mcp SDK's spans too, as --otlp does
        async with (
            McpServers([stdio_spec(SERVER)]) as servers,
            CodeMode(servers, limits, tracer_provider=provider) as traced,
            CodeMode(servers, limits, tracer_provider=trace.NoOpTracerProvider()) as plain,
        ):
            for name, (code, calls) in SNIPPETS.items():
                times: dict[str, list[float]] = {"traced": [], "plain": []}
                for _ in range(runs + 1):  # the first of each is a warm-up
                    for label, code_mode in (("traced", traced), ("plain", plain)):
                        elapsed = await timed_async(
                            lambda cm=code_mode: cm.call_tool("run_code", {"code": code})
                        )
                        times[label].append(elapsed)
                on, off = Stats.of(times["traced"][1:]), Stats.of(times["plain"][1:])
                added = (on.median - off.median) / calls
                print(f"  {name}: traced {seconds(on.median)}, plain {seconds(off.median)}", flush=True)
                rows.append(
                    Row(
                        scenario=f"traces: {calls:,} {name} nested calls in one run_code",
                        case="spans exported over OTLP/HTTP to a loopback receiver",
                        stats=on,
                        baseline_label="no tracer provider (no-op spans)",
                        baseline=off,
                        target=TARGET,
                        note=f"{added * 1e6:+.0f} µs per nested call",
                        values={"per_call_s": added},
                    )
                )
        provider.shutdown()
        spans = len(receiver.spans)
    return rows, spans


def main() -> None:
    args = arguments(5).parse_args()
    rows, spans = asyncio.run(measure(args.runs))
    notes = (
        "Two code modes over one stdio session to the bench server, alternating run by run: one with no "
        "tracer provider (the API's no-op spans, what every run pays when traces are off), one with the "
        "SDK's `TracerProvider`, `BatchSpanProcessor` and OTLP/HTTP exporter sending to a receiver on "
        "loopback that decodes every batch. Each nested call is two spans (asyncai's `execute_tool` and "
        f"the mcp SDK's `MCP send tools/call`); the receiver got {spans:,} spans in all. The snippets:\n\n"
        + "\n\n".join(f"```python\n{code}\n```" for code, _ in SNIPPETS.values())
    )
    save_section("tracing", "What traces cost (issue 26)", rows, notes, save=not args.no_save)


if __name__ == "__main__":
    main()
