"""What traces cost (issue 26): a nested call with OpenTelemetry spans exported against without.

    .venv/bin/python benchmarks/bench_tracing.py [--runs N] [--no-save]

One ``CodeMode`` over the bench MCP server (stdio) runs a snippet of 1,000 sequential ``ping()``
calls, one of 100 gathered ones and one of 100 gathered 50 ms ``nap`` calls, alternating run by
run between traces off (the API's no-op spans: what every run pays when nothing is configured) and
traces on: the SDK's ``TracerProvider`` with its ``BatchSpanProcessor`` and OTLP/HTTP exporter, as
``--otlp`` sets up, sending to a receiver on loopback in a process of its own
(``tests/fakes/otlp_receiver.py``, decoding every batch). Each nested call is then two spans,
asyncai's and the mcp SDK's client span; the SDK takes the global provider, so the global one here
is a switch between the two, flipped between runs.
Target: under 5 % per nested call.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from asyncai.code_mode import CodeMode, CodeModeLimits
from asyncai.tools.mcp.client import McpServers
from asyncai.tools.mcp.specs import stdio_spec
from report import Row, Stats, arguments, save_section, seconds, timed_async

ROOT = Path(__file__).resolve().parent.parent
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
    "gathered 50 ms": (
        f"import asyncio\nlen(await asyncio.gather(*[nap(ms=50) for _ in range({GATHERED})]))",
        GATHERED,
    ),
}
TARGET = "< 1.05x"


class Switch(TracerProvider):
    """The global provider of this script: the exporting one while ``on``, else no-op spans."""

    def __init__(self, exporting: TracerProvider) -> None:
        super().__init__()
        self.exporting = exporting
        self.on = False

    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        return _SwitchTracer(self, self.exporting.get_tracer(*args, **kwargs))


class _SwitchTracer(trace.Tracer):
    def __init__(self, switch: Switch, exporting: trace.Tracer) -> None:
        self.switch = switch
        self.exporting = exporting
        self.off = trace.NoOpTracer()

    def _now(self) -> trace.Tracer:
        return self.exporting if self.switch.on else self.off

    def start_span(self, *args: Any, **kwargs: Any) -> trace.Span:
        return self._now().start_span(*args, **kwargs)

    @contextlib.contextmanager
    def start_as_current_span(  # type: ignore[override]  # the API's own decorator is private
        self, *args: Any, **kwargs: Any
    ) -> Iterator[trace.Span]:
        with self._now().start_as_current_span(*args, **kwargs) as span:
            yield span


@contextlib.contextmanager
def receiver_process() -> Iterator[tuple[str, list[int]]]:
    """The receiver in a process of its own, as a collector would be: its decoding must not hold
    this one's GIL. Yields its URL and, once it ended, how many spans it got."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.otlp_receiver"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    received: list[int] = []
    try:
        yield process.stdout.readline().strip(), received
    finally:
        process.stdin.close()  # the receiver then says how many spans it got, and ends
        received.append(int(process.stdout.readline() or 0))
        process.wait(10)


async def measure(url: str, runs: int) -> list[Row]:
    limits = CodeModeLimits(max_calls=2 * SEQUENTIAL)
    rows: list[Row] = []
    exporting = TracerProvider()
    exporting.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces")))
    switch = Switch(exporting)
    trace.set_tracer_provider(switch)  # the mcp SDK's spans follow the switch too
    async with (
        McpServers([stdio_spec(SERVER)]) as servers,
        CodeMode(servers, limits, tracer_provider=switch) as code_mode,
    ):
        for name, (code, calls) in SNIPPETS.items():
            times: dict[bool, list[float]] = {True: [], False: []}
            for _ in range(runs + 1):  # the first of each is a warm-up
                for on in (True, False):
                    switch.on = on
                    run = functools.partial(code_mode.call_tool, "run_code", {"code": code})
                    times[on].append(await timed_async(run))
            traced, plain = Stats.of(times[True][1:]), Stats.of(times[False][1:])
            added = (traced.median - plain.median) / calls
            print(f"  {name}: traced {seconds(traced.median)}, plain {seconds(plain.median)}", flush=True)
            rows.append(
                Row(
                    scenario=f"traces: {calls:,} {name} nested calls in one run_code",
                    case="spans exported over OTLP/HTTP to a loopback receiver",
                    stats=traced,
                    baseline_label="traces off (no-op spans)",
                    baseline=plain,
                    target=TARGET,
                    note=f"{added * 1e6:+.0f} µs per nested call",
                    values={"per_call_s": added},
                )
            )
    exporting.shutdown()
    return rows


def main() -> None:
    args = arguments(5).parse_args()
    with receiver_process() as (url, received):
        rows = asyncio.run(measure(url, args.runs))
    spans = received[0]
    notes = (
        "Where a traced call's time goes, measured on this machine: the SDK makes a span in 20 to 45 µs "
        "and its OTLP encoder (pure Python) takes about 100 µs a span on the export thread, which holds "
        "the GIL while it encodes; a nested call is two spans. That is felt on the fastest tool there is "
        "(`ping` over stdio) and lost in the noise on a 50 ms one.\n\n"
        "One code mode over a stdio session to the bench server, alternating run by run between traces "
        "off (the API's no-op spans, what every run pays when nothing is configured) and on: the SDK's "
        "`TracerProvider`, `BatchSpanProcessor` and OTLP/HTTP exporter sending to a receiver on "
        "loopback, in another process, that decodes every batch. Each nested call is two spans "
        "(asyncai's `execute_tool` and "
        f"the mcp SDK's `MCP send tools/call`); the receiver got {spans:,} spans in all. The snippets:\n\n"
        + "\n\n".join(f"```python\n{code}\n```" for code, _ in SNIPPETS.values())
    )
    save_section("tracing", "What traces cost (issue 26)", rows, notes, save=not args.no_save)


if __name__ == "__main__":
    main()
