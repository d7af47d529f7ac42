"""What sharing ``serve-mcp`` sessions through Redis costs per ``run_code`` (``--state-store
redis://``), and what REPL handles cost next to sessions.

    .venv/bin/python benchmarks/bench_shared.py [--runs N] [--no-save]

A real ``redis-server`` on loopback (``tests/fakes/redis.py``); ``asyncai serve-mcp --http
127.0.0.1:0 --no-auth --mcp-stdio <bench server>`` without a state store (the baseline) and two
instances with ``--state-store redis://…``. The client is the ``mcp`` SDK over Streamable HTTP
(``Client(..., mode="legacy")``). Each measured run is a new client session: ``x = 0`` (and, for
the big state, 10,000 records in ``rows``), then sequential ``run_code`` calls of ``x = x + 1``,
timed around ``call_tool``; rows are the time per call. With a state store every run takes the
session's lease, checks the saved stamp, runs, dumps the REPL, saves it to Redis and releases the
lease.

1. One instance, the client talking to it directly: shared against the baseline.
2. The same with 10,000 records bound first, since every shared run saves the whole REPL.
3. Two shared instances behind a round-robin proxy (``round_robin`` of ``tests/fakes/round_robin.py``):
   each request goes to the other instance, so every run first takes up the REPL the other one
   saved. The baseline is the unshared instance behind the same kind of proxy, so the proxy hop
   counts on both sides.

4-6. REPL handles: the same three set-ups (no state store; one Redis instance; two behind the
   proxy) with the SDK's default client, which speaks the stateless 2026-07-28 protocol: no session,
   so each run passes ``repl=<handle>`` that the first result gave (``serve.handles``). The
   baseline is the legacy session on the same set-up, measured in the same repetitions. A handle run
   also looks the handle up and records its new expiry (in Redis with a state store).

Every run is checked at its end: ``x`` equals the number of increments and ``rows`` is whole, and a
handle stayed the same throughout; in 3 and 6, consecutive requests went to different instances.
The variants alternate within each repetition. The size of the REPL saved in Redis is read after
binding and after the increments.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import ExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2
import redis.asyncio as aioredis
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent

from asyncai.state.stores import RedisStore
from report import Row, Stats, arguments, save_section, seconds

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes.redis import redis_server
from tests.fakes.round_robin import RoundRobin, round_robin
from tests.serve.helpers import serve_http

SERVER = f"bench={sys.executable} {Path(__file__).resolve().with_name('bench_server.py')}"
CALLS = 100
CROSS_CALLS = 80
RECORDS = 10_000
INCREMENT = "x = x + 1"
BIG = f"rows = [{{'id': i, 'name': f'n{{i}}'}} for i in range({RECORDS})]\nlen(rows)"
STATES = {"small": "", "big": f"{RECORDS:,} records"}


def base(url: str) -> str:
    return url.removesuffix("/mcp")


STATELESS = "2026-07-28"


@dataclass
class Repl:
    """One client's REPL on serve-mcp: its session (legacy), or the handle the first result gave."""

    client: Client
    stateless: bool
    handle: str | None = None

    async def run(self, code: str) -> str:
        """The snippet's value: the first content block (the variables note, when sent, and the
        handle's note follow)."""
        arguments = {"code": code} | ({"repl": self.handle} if self.handle is not None else {})
        result = await self.client.call_tool("run_code", arguments)
        text = result.content[0]
        assert isinstance(text, TextContent) and not result.is_error, text
        if self.stateless:  # the same handle every time: a new one would be a new, empty REPL
            handle = (result.structured_content or {}).get("repl")
            assert isinstance(handle, str) and self.handle in (None, handle), (self.handle, handle)
            self.handle = handle
        return text.text


@asynccontextmanager
async def session(url: str, stateless: bool = False) -> AsyncIterator[Repl]:
    """The SDK client over Streamable HTTP (as ``tests/serve/test_http.client``, without a token):
    a legacy session, or the default client (the stateless protocol; REPLs by handle)."""
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)) as http:
        transport = streamable_http_client(url, http_client=http, max_sse_event_size=None)
        async with Client(transport, mode="auto" if stateless else "legacy") as client:
            assert (client.protocol_version == STATELESS) == stateless, client.protocol_version
            yield Repl(client, stateless)


@dataclass(frozen=True)
class Variant:
    """Where a client goes, how many increments a repetition runs there, and what is measured."""

    url: str
    calls: int
    robin: RoundRobin | None = None
    shared: bool = False
    stateless: bool = False
    """The SDK's default client: REPL handles instead of a session."""


@dataclass
class Sample:
    per_call: float
    saved_before: int = 0
    """Bytes of the session's REPL in Redis after binding the state, and after the increments."""
    saved_after: int = 0


async def saved_keys(store: aioredis.Redis) -> set[bytes]:
    return {key async for key in store.scan_iter(f"{RedisStore.PREFIX}*")}


async def repetition(variant: Variant, records: int, store: aioredis.Redis, calls: int) -> Sample:
    """A new client (a new session, or a new handle): bind the state, ``calls`` increments timed,
    then the checks."""
    before = await saved_keys(store) if variant.shared else set()
    async with session(variant.url, variant.stateless) as repl:
        assert await repl.run("x = 0\nx") == "0"
        if records:
            assert await repl.run(BIG) == str(records)
        sample = Sample(0.0)
        if variant.shared:
            [key] = await saved_keys(store) - before
            sample.saved_before = await store.hstrlen(key, "data")
        served = len(variant.robin.served) if variant.robin else 0
        start = time.perf_counter()
        for _ in range(calls):
            await repl.run(INCREMENT)
        sample.per_call = (time.perf_counter() - start) / calls
        if variant.shared:
            sample.saved_after = await store.hstrlen(key, "data")
        if records:
            got = json.loads(await repl.run("[x, len(rows), rows[-1]['name']]"))
            assert got == [calls, records, f"n{records - 1}"], got
        else:
            assert await repl.run("x") == str(calls)
        if variant.robin is not None and len(variant.robin.upstreams) > 1:
            posts = [index for method, _, index in variant.robin.served[served:] if method == "POST"]
            assert len(posts) > calls and all(a != b for a, b in itertools.pairwise(posts)), posts
    return sample


def kib(size: int) -> str:
    return f"{size / 1024:,.0f} KiB"


async def measure(variants: dict[str, Variant], store_url: str, runs: int) -> list[Row]:
    store = aioredis.Redis.from_url(store_url)
    rows: list[Row] = []
    try:
        for state, label in STATES.items():
            records = RECORDS if state == "big" else 0
            for variant in variants.values():  # warm-up: workers started, code paths taken
                await repetition(variant, records, store, 5)
            samples: dict[str, list[Sample]] = {name: [] for name in variants}
            for _ in range(runs):
                for name, variant in variants.items():
                    samples[name].append(await repetition(variant, records, store, variant.calls))
            stats = {name: Stats.of([s.per_call for s in got]) for name, got in samples.items()}
            print(f"{state}: " + ", ".join(f"{n} {seconds(s.median)}" for n, s in stats.items()), flush=True)
            bound = f"{label} bound" if label else "small REPL"
            one, two = stats["shared"], stats["shared2"]
            for name, scenario, base_name, base_label in (
                (
                    "shared",
                    "1 one instance" if state == "small" else "2 one instance",
                    "plain",
                    "no state store",
                ),
                ("shared2", "3 two instances, round robin", "plain2", "no state store, same proxy"),
                ("handle", "4 handles: one instance, no state store", "plain", "session, same instance"),
                ("handle_shared", "5 handles: one instance, Redis", "shared", "session, same instance"),
                ("handle_shared2", "6 handles: two instances, round robin", "shared2", "session, same proxy"),
            ):
                ours, baseline = stats[name], stats[base_name]
                calls = variants[name].calls
                values: dict[str, object] = {"calls_per_run": calls}
                if variants[name].stateless:
                    note = f"{(ours.median - baseline.median) * 1e3:+.1f} ms per call against the session"
                else:
                    note = f"{(ours.median - baseline.median) * 1e3:.1f} ms added per call"
                if variants[name].shared:
                    before = statistics.median(s.saved_before for s in samples[name])
                    after = statistics.median(s.saved_after for s in samples[name])
                    note += f"; REPL in Redis {kib(int(before))} → {kib(int(after))} after {calls} runs"
                    values["saved_bytes_after_bind"] = before
                    values[f"saved_bytes_after_{calls}_runs"] = after
                if name == "shared2":
                    note += f"; {two.median / one.median:.2f}x one instance"
                    values["vs_one_instance"] = two.median / one.median
                rows.append(
                    Row(
                        scenario,
                        f"{calls} × `{INCREMENT}`, {bound}",
                        ours,
                        base_label,
                        baseline,
                        note=note,
                        values=values,
                    )
                )
    finally:
        await store.aclose()
    return sorted(rows, key=lambda row: row.scenario)  # stable: small before big within a scenario


def handle_summary(rows: list[Row]) -> str:
    """What the handle rows show, in this run's numbers."""
    parts = []
    for row in rows:
        if not row.scenario.startswith(("4", "5", "6")) or row.stats is None or row.baseline is None:
            continue
        where = row.scenario.split(": ", 1)[1]
        state = row.case.split(", ", 1)[1]
        parts.append(
            f"{where}, {state}: {seconds(row.stats.median)} by handle, {seconds(row.baseline.median)} "
            "by session"
        )
    return "In this run, per call: " + "; ".join(parts) + "."


def main() -> None:
    args = arguments(5).parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as directory, ExitStack() as stack:
        store = stack.enter_context(redis_server(Path(directory)))
        shared = ("--no-auth", "--state-store", store.url, "--mcp-stdio", SERVER)
        plain = stack.enter_context(serve_http("--no-auth", "--mcp-stdio", SERVER))
        a = stack.enter_context(serve_http(*shared))
        b = stack.enter_context(serve_http(*shared))
        plain2 = stack.enter_context(round_robin([base(plain.url)]))
        shared2 = stack.enter_context(round_robin([base(a.url), base(b.url)]))
        variants = {
            "plain": Variant(plain.url, CALLS),
            "shared": Variant(a.url, CALLS, shared=True),
            "plain2": Variant(f"{plain2.url}/mcp", CROSS_CALLS, plain2),
            "shared2": Variant(f"{shared2.url}/mcp", CROSS_CALLS, shared2, shared=True),
            "handle": Variant(plain.url, CALLS, stateless=True),
            "handle_shared": Variant(a.url, CALLS, shared=True, stateless=True),
            "handle_shared2": Variant(
                f"{shared2.url}/mcp", CROSS_CALLS, shared2, shared=True, stateless=True
            ),
        }
        rows = asyncio.run(measure(variants, store.url, args.runs))
        stderr = [
            line.strip() for s in (plain, a, b) for line in s.stderr_lines if "listening on" not in line
        ]
    print(f"{time.perf_counter() - started:.0f} s in all", flush=True)
    for line in stderr:
        print(f"serve-mcp stderr: {line}", flush=True)
    notes = (
        "`asyncai serve-mcp --http` with `--state-store redis://` (a local `redis-server`) against the "
        "same without a state store, through the `mcp` SDK client. Each run is a new client session: "
        f"`x = 0` (and for the big state `{BIG.splitlines()[0]}`), then sequential `run_code` calls of "
        f"`{INCREMENT}`, timed; the times are per call and every run checks `x` (and `rows`) at the end. "
        "A shared run takes the session's lease, checks the saved stamp, runs, dumps the REPL, saves it "
        "to Redis and releases the lease.\n\n"
        "Two instances: a round-robin proxy sends each request to the other instance (checked), so every "
        "run first takes up the REPL the other one saved; the baseline is the unshared instance behind "
        "the same proxy. The notes give the size of the REPL saved in Redis after binding and after the "
        "increments.\n\n"
        "Rows 4-6 are REPL handles (issue 24): the `mcp` SDK's default `Client`, which speaks the "
        "stateless 2026-07-28 protocol, so there is no session and every call passes `repl=<handle>` "
        "from the first result (checked to stay the same). They run on the same serve-mcp processes, "
        "in the same repetitions, as the legacy-session rows they are compared with: the session on "
        "the instance without a store (4), on the Redis instance (5, row 1 or 2), behind the proxy "
        "(6, row 3); the ratio is handle ÷ session. A handle run looks its handle up and records its "
        "expiry (with Redis, a GET and a SET beside the lease and the save) but has no session to "
        "keep. " + handle_summary(rows)
    )
    title = "Sessions and REPL handles shared through Redis (serve-mcp --state-store)"
    save_section("shared", title, rows, notes, save=not args.no_save)


if __name__ == "__main__":
    main()
