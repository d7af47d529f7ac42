"""What an approval that pauses a snippet and resumes it costs (``serve-mcp --mutations ask`` under
the stateless 2026-07-28 protocol), against the size of the REPL.

    .venv/bin/python benchmarks/bench_pauses.py [--runs N] [--no-save]

``asyncai serve-mcp --http 127.0.0.1:0 --no-auth --mcp-stdio tests/fakes/mcp_test_server.py``
(whose ``write_note`` is a mutating tool) with ``--mutations ask`` and, as the baseline, with
``--mutations allow``. The client is the ``mcp`` SDK's default ``Client`` (2026-07-28: no session,
the REPL is the handle ``run_code`` gave) with an elicitation callback that accepts
(``{"allow": True}``). Under ``ask`` the snippet's ``write_note`` call pauses it: ``run_code`` answers
``input_required`` (an elicitation and a sealed request state), the client asks the callback and
retries with the answer, and the retry resumes the snippet from Monty's snapshot in a fresh worker.
Under ``allow`` the same snippet runs through.

Each REPL first binds ``rows``: N records (``{'id': i, 'name': f'n{i}'}``, N = 0, 10,000 and
100,000) and ``x = 0``. Then, alternating ``ask`` and ``allow`` within each repetition, two calls
are timed around ``call_tool``:

- ``write``: ``r = await write_note(text=TAG)`` (one pause and one resume under ``ask``);
- ``increment``: ``x = x + 1``, no mutating call: what ``ask`` costs a run that does not pause.

Two stores: in memory (one instance of each), and Redis (``--state-store redis://`` on a real
``redis-server``, ``tests/fakes/redis.py``) with two instances of each behind the round-robin proxy
(``tests/fakes/round_robin.py``), so the retry that resumes reaches the other instance than the
request that paused (checked on the proxy's log).

Every call is checked: ``write`` returns ``{"stored": TAG}``, the callback was asked exactly once
under ``ask`` and never under ``allow``, ``increment`` returns the next ``x``; at the end ``x`` and
``len(rows)`` are checked. The stored pause's size is read from Redis (``asyncai:pause:*``, by the
callback of one more, untimed, call) and computed in-process with the engine
(``ReplScope.run_pausing``'s ``PausedSnippet``, packed as ``serve.pauses`` stores it), where the pause
and the resume are also timed on their own. With Redis, the bytes Redis received and sent during one
more ``write`` of each side (``INFO stats``) show what a pause moves.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import ExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import mcp.types as mt
import redis.asyncio as aioredis
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent

from asyncai.approvals.gate import Approval
from asyncai.code_mode import CodeMode
from asyncai.code_mode.engine.pausing import PausedSnippet, pack_paused
from asyncai.log import LOGGER_NAME
from asyncai.serve.handles import SCOPE_PREFIX
from asyncai.serve.shared import state_key
from asyncai.state.stores import RedisStore
from asyncai.tools.functions import FunctionTools, tool
from asyncai.tools.types import ToolCallOutput
from report import Row, Stats, arguments, save_section, seconds

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes.redis import redis_server
from tests.fakes.round_robin import RoundRobin, round_robin
from tests.serve.helpers import serve_http

ROOT = Path(__file__).resolve().parent.parent
SERVER = f"test={sys.executable} {ROOT / 'tests' / 'fakes' / 'mcp_test_server.py'}"
SIZES = (0, 10_000, 100_000)
STATELESS = "2026-07-28"
PAUSE_KEYS = "asyncai:pause:*"
WRITE = "r = await write_note(text={tag!r})\nr"
INCREMENT = "x = x + 1\nx"
AUDIT = '"event": "mcp.tool_'
"""The audit line of each mutating call on serve-mcp's stderr (always on): not printed at the end."""


def bind(records: int) -> str:
    return f"rows = [{{'id': i, 'name': f'n{{i}}'}} for i in range({records})]\nx = 0\nlen(rows)"


class Person:
    """The client's elicitation callback: accepts every question, counts them; ``probe`` (when set)
    runs while the snippet is paused."""

    def __init__(self) -> None:
        self.questions = 0
        self.probe: Callable[[], Awaitable[None]] | None = None

    async def __call__(self, context: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        assert "write_note" in params.message, params.message
        self.questions += 1
        if self.probe is not None:
            await self.probe()
        return mt.ElicitResult(action="accept", content={"allow": True})


@dataclass
class Repl:
    """One REPL of one serve-mcp set-up, named by its handle."""

    client: Client
    person: Person
    asks: bool
    robin: RoundRobin | None
    handle: str | None = None
    x: int = 0
    writes: int = 0

    async def run(self, code: str) -> Any:
        arguments = {"code": code} | ({"repl": self.handle} if self.handle is not None else {})
        result = await self.client.call_tool("run_code", arguments)
        text = result.content[0]
        assert isinstance(text, TextContent) and not result.is_error, text
        handle = (result.structured_content or {}).get("repl")
        assert isinstance(handle, str) and self.handle in (None, handle), (self.handle, handle)
        self.handle = handle
        return json.loads(text.text)

    async def write(self) -> float:
        """One timed ``write_note`` call, checked."""
        self.writes += 1
        tag = f"note-{self.writes}"
        asked, served = self.person.questions, len(self.robin.served) if self.robin else 0
        start = time.perf_counter()
        got = await self.run(WRITE.format(tag=tag))
        took = time.perf_counter() - start
        assert got == {"stored": tag}, got
        assert self.person.questions == asked + self.asks, (self.person.questions, asked)
        if self.robin is not None:  # the request that paused, and the retry on the other instance
            posts = [index for method, _, index in self.robin.served[served:] if method == "POST"]
            assert len(posts) == 1 + self.asks and all(a != b for a, b in itertools.pairwise(posts)), posts
        return took

    async def increment(self) -> float:
        start = time.perf_counter()
        got = await self.run(INCREMENT)
        took = time.perf_counter() - start
        self.x += 1
        assert got == self.x, (got, self.x)
        return took


@asynccontextmanager
async def repl(url: str, asks: bool, robin: RoundRobin | None) -> AsyncIterator[Repl]:
    """The SDK's default client with the accepting callback."""
    person = Person()
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)) as http:
        transport = streamable_http_client(url, http_client=http, max_sse_event_size=None)
        async with Client(transport, elicitation_callback=person) as client:
            assert client.protocol_version == STATELESS, client.protocol_version
            yield Repl(client, person, asks, robin)


@dataclass(frozen=True)
class Store:
    """One store's two set-ups: ``--mutations ask`` and ``--mutations allow``."""

    label: str
    ask: str
    allow: str
    ask_robin: RoundRobin | None = None
    allow_robin: RoundRobin | None = None


@dataclass
class Measured:
    write: dict[str, list[float]] = field(default_factory=lambda: {"ask": [], "allow": []})
    increment: dict[str, list[float]] = field(default_factory=lambda: {"ask": [], "allow": []})
    pause_bytes: int = 0
    repl_bytes: int = 0
    traffic: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Bytes into and out of Redis during one more ``write`` of each side."""


async def traffic(redis: aioredis.Redis, call: Callable[[], Awaitable[Any]]) -> tuple[int, int]:
    """The bytes Redis received and sent while ``call`` ran (the benchmark's own few included)."""
    before = await redis.info("stats")
    await call()
    after = await redis.info("stats")
    received = after["total_net_input_bytes"] - before["total_net_input_bytes"]
    sent = after["total_net_output_bytes"] - before["total_net_output_bytes"]
    return int(received), int(sent)


async def measure_store(store: Store, records: int, runs: int, redis: aioredis.Redis | None) -> Measured:
    out = Measured()
    async with (
        repl(store.ask, True, store.ask_robin) as ask,
        repl(store.allow, False, store.allow_robin) as allow,
    ):
        sides = {"ask": ask, "allow": allow}
        for side in sides.values():
            assert await side.run(bind(records)) == records
            await side.write()  # warm-up: workers started, code paths taken
            await side.increment()
        for _ in range(runs):
            for name, side in sides.items():
                out.write[name].append(await side.write())
            for name, side in sides.items():
                out.increment[name].append(await side.increment())
        if redis is not None:  # one more pause, whose stored size the callback reads from Redis

            async def probe() -> None:
                [key] = [key async for key in redis.scan_iter(PAUSE_KEYS)]
                out.pause_bytes = await redis.strlen(key)

            ask.person.probe = probe
            out.traffic["ask"] = await traffic(redis, ask.write)
            ask.person.probe = None
            out.traffic["allow"] = await traffic(redis, allow.write)
            assert [key async for key in redis.scan_iter(PAUSE_KEYS)] == []  # taken by the resume
            assert ask.handle is not None
            state = RedisStore.PREFIX + state_key(SCOPE_PREFIX + ask.handle)  # the handle's REPL
            out.repl_bytes = await redis.hstrlen(state, "data")
            assert out.repl_bytes > 0, state
        for side in sides.values():
            assert await side.run("[x, len(rows)]") == [side.x, records]
            assert await side.run("rows = []\nlen(rows)") == 0  # the big REPLs go before the next size
    return out


@tool(destructive=False)
def write_note(text: str) -> dict[str, Any]:
    """Pretend to store a note (a mutating tool)."""
    return {"stored": text}


@dataclass
class InProcess:
    pause_bytes: int
    snapshot_bytes: int
    pause: Stats
    resume: Stats


async def in_process(records: int, runs: int) -> InProcess:
    """The same pause with the engine alone: the packed ``PausedSnippet``'s size, and the pause and
    the resume timed apart (no HTTP, no MCP)."""
    pauses: list[float] = []
    resumes: list[float] = []
    size = snapshot = 0
    async with CodeMode(FunctionTools([write_note]), mutations="ask") as code_mode:
        scope = code_mode.new_scope()
        try:
            bound = await scope.run_pausing({"code": bind(records)})
            assert isinstance(bound, ToolCallOutput) and bound.content == str(records), bound
            for index in range(runs + 1):  # the first is a warm-up
                tag = f"note-{index}"
                start = time.perf_counter()
                paused = await scope.run_pausing({"code": WRITE.format(tag=tag)})
                paused_in = time.perf_counter() - start
                assert isinstance(paused, PausedSnippet), paused
                # The pause record, and the snapshot parked as the REPL's state (the last one's kept).
                size, snapshot = len(pack_paused(paused)), len(scope.dump or b"")
                [held] = paused.held
                start = time.perf_counter()
                done = await scope.resume(paused, {held.call_id: Approval(True)})
                resumed_in = time.perf_counter() - start
                assert isinstance(done, ToolCallOutput) and json.loads(done.content) == {"stored": tag}, done
                if index:
                    pauses.append(paused_in)
                    resumes.append(resumed_in)
            check = await scope.run_pausing({"code": "len(rows)"})
            assert isinstance(check, ToolCallOutput) and check.content == str(records), check
        finally:
            await scope.aclose()
    return InProcess(size, snapshot, Stats.of(pauses), Stats.of(resumes))


def size_text(size: float) -> str:
    if size < 1024:
        return f"{size:,.0f} B"
    return f"{size / 2**20:,.1f} MiB" if size >= 2**20 else f"{size / 1024:,.0f} KiB"


IN_MEMORY, THROUGH_REDIS = "in memory", "Redis, two instances"
MEMORY_WRITE, REDIS_WRITE = f"pause + resume: {IN_MEMORY}", f"pause + resume: {THROUGH_REDIS}"
MEMORY_PLAIN = f"no pause: {IN_MEMORY}"


def rows_for(store: Store, records: int, got: Measured, engine: InProcess) -> list[Row]:
    state = f"{records:,} records" if records else "empty REPL"
    write = {name: Stats.of(samples) for name, samples in got.write.items()}
    increment = {name: Stats.of(samples) for name, samples in got.increment.items()}
    extra = write["ask"].median - write["allow"].median
    pause_bytes = got.pause_bytes or engine.pause_bytes
    where = "in Redis" if got.pause_bytes else "in-process"
    note = (
        f"pause + resume adds {extra * 1e3:,.1f} ms; pause record {size_text(pause_bytes)} ({where}), "
        f"snapshot parked as the REPL {size_text(engine.snapshot_bytes)}"
    )
    values: dict[str, Any] = {
        "records": records,
        "pause_resume_extra_seconds": extra,
        "pause_bytes": pause_bytes,
        "pause_bytes_measured": where,
        "engine_pause_bytes": engine.pause_bytes,
        "engine_snapshot_bytes": engine.snapshot_bytes,
        "engine_pause_seconds": engine.pause.median,
        "engine_resume_seconds": engine.resume.median,
    }
    if got.repl_bytes:
        (ask_in, ask_out), (allow_in, allow_out) = got.traffic["ask"], got.traffic["allow"]
        note += (
            f", REPL {size_text(got.repl_bytes)}; Redis traffic per call {size_text(ask_in + ask_out)} "
            f"(allow: {size_text(allow_in + allow_out)})"
        )
        values["repl_bytes"] = got.repl_bytes
        values["redis_bytes_in_out"] = {"ask": [ask_in, ask_out], "allow": [allow_in, allow_out]}
    if not got.pause_bytes:
        note += (
            f"; engine alone: pause {seconds(engine.pause.median)}, resume {seconds(engine.resume.median)}"
        )
    plain = increment["ask"].median - increment["allow"].median
    return [
        Row(
            f"pause + resume: {store.label}",
            f"`write_note` accepted, {state}",
            write["ask"],
            "`--mutations allow`",
            write["allow"],
            note=note,
            values=values,
        ),
        Row(
            f"no pause: {store.label}",
            f"`{INCREMENT.splitlines()[0]}`, {state}",
            increment["ask"],
            "`--mutations allow`",
            increment["allow"],
            note=f"{plain * 1e3:+,.1f} ms under `ask`",
            values={"records": records, "ask_extra_seconds": plain},
        ),
    ]


async def measure(stores: list[Store], store_url: str, runs: int, sizes: list[int]) -> list[Row]:
    redis = aioredis.Redis.from_url(store_url)
    rows: list[Row] = []
    try:
        for records in sizes:
            engine = await in_process(records, runs)
            print(
                f"{records:,} in-process: pause {seconds(engine.pause.median)}, resume "
                f"{seconds(engine.resume.median)}, {size_text(engine.pause_bytes)}",
                flush=True,
            )
            for store in stores:
                shared = redis if store.ask_robin is not None else None
                got = await measure_store(store, records, runs, shared)
                medians = {name: statistics.median(samples) for name, samples in got.write.items()}
                print(
                    f"{records:,} {store.label}: "
                    + ", ".join(f"{name} {seconds(value)}" for name, value in medians.items()),
                    flush=True,
                )
                rows += rows_for(store, records, got, engine)
    finally:
        await redis.aclose()
    return sorted(rows, key=lambda row: row.scenario)  # stable: sizes in order within a scenario


def pause_summary(rows: list[Row]) -> str:
    """What the rows show, in this run's numbers."""

    def listed(scenario: str, text: Callable[[Row], str]) -> str:
        return " / ".join(text(row) for row in rows if row.scenario == scenario)

    def extra(row: Row) -> str:
        return f"{row.values['pause_resume_extra_seconds'] * 1e3:,.0f} ms"

    def snapshot(row: Row) -> str:
        return size_text(row.values["engine_snapshot_bytes"])

    def plain(row: Row) -> str:
        return f"{row.values['ask_extra_seconds'] * 1e3:+,.0f} ms"

    def moved(side: str) -> Callable[[Row], str]:
        def text(row: Row) -> str:
            return f"{sum(row.values['redis_bytes_in_out'][side]) / row.values['repl_bytes']:.1f}x"

        return text

    sizes = " / ".join(f"{row.values['records']:,}" for row in rows if row.scenario == MEMORY_WRITE)
    return (
        f"In this run, for REPLs of {sizes} records, a pause and its resume added "
        f"{listed(MEMORY_WRITE, extra)} in memory and {listed(REDIS_WRITE, extra)} through Redis. The "
        f"paused snippet's snapshot ({listed(MEMORY_WRITE, snapshot)}) is about the size of the REPL's "
        "own dump, since Monty's snapshot holds the whole heap; it is parked as the REPL's state, saved "
        "like any REPL, and the pause record beside it only says what the snippet waits on. The time "
        "grows with the REPL: the pause dumps the snapshot, the resume loads it into a fresh worker. "
        "A run under `ask` that calls no mutating tool pays nothing for being able to pause (the *no "
        f"pause* rows: {listed(MEMORY_PLAIN, plain)} per call in memory against `allow`). Through "
        f"Redis one paused call moved {listed(REDIS_WRITE, moved('ask'))} the REPL's size in and out "
        f"of Redis, against {listed(REDIS_WRITE, moved('allow'))} for the same call under `allow` (one "
        "read and one save per request): the pause saves the snapshot as the REPL, and the resume, "
        "a request of its own, reads it and saves the REPL after."
    )


def main() -> None:
    parser = arguments(5)
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES, help=f"records bound ({SIZES})")
    args = parser.parse_args()
    logging.getLogger(LOGGER_NAME).addHandler(logging.NullHandler())  # the in-process audit lines
    started = time.perf_counter()
    base = ("--no-auth", "--mcp-stdio", SERVER, "--mutations")
    with tempfile.TemporaryDirectory() as directory, ExitStack() as stack:
        store = stack.enter_context(redis_server(Path(directory)))
        shared = ("--state-store", store.url)
        ask = stack.enter_context(serve_http(*base, "ask"))
        allow = stack.enter_context(serve_http(*base, "allow"))
        ask_a, ask_b, allow_a, allow_b = (
            stack.enter_context(serve_http(*shared, *base, policy))
            for policy in ("ask", "ask", "allow", "allow")
        )
        ask2 = stack.enter_context(round_robin([u.url.removesuffix("/mcp") for u in (ask_a, ask_b)]))
        allow2 = stack.enter_context(round_robin([u.url.removesuffix("/mcp") for u in (allow_a, allow_b)]))
        stores = [
            Store(IN_MEMORY, ask.url, allow.url),
            Store(THROUGH_REDIS, f"{ask2.url}/mcp", f"{allow2.url}/mcp", ask2, allow2),
        ]
        rows = asyncio.run(measure(stores, store.url, args.runs, args.sizes))
        stderr = [
            line.strip()
            for s in (ask, allow, ask_a, ask_b, allow_a, allow_b)
            for line in s.stderr_lines
            if "listening on" not in line and AUDIT not in line
        ]
    print(f"{time.perf_counter() - started:.0f} s in all", flush=True)
    for line in stderr:
        print(f"serve-mcp stderr: {line}", flush=True)
    notes = (
        "`asyncai serve-mcp --http --mutations ask` against `--mutations allow`, wrapping "
        "`tests/fakes/mcp_test_server.py` (`write_note` is its mutating tool), through the `mcp` SDK's "
        "default `Client` (2026-07-28: no session, the REPL by handle) with an elicitation callback that "
        "accepts. Each REPL binds `rows` (N records `{'id': i, 'name': f'n{i}'}`) and `x` first; then, "
        "ask and allow alternating in each repetition, two calls are timed around `call_tool`. "
        f"*pause + resume*: `{WRITE.format(tag='note-k').splitlines()[0]}`, which under `ask` answers "
        "`input_required` (the elicitation and a sealed request state) and is resumed by the client's "
        "retry from Monty's snapshot in a fresh worker; under `allow` it runs through. *no pause*: "
        f"`{INCREMENT.splitlines()[0]}`, no tool call at all. Every call is checked (the value, one "
        "question under `ask` and none under `allow`, `x` and `len(rows)` at the end). *in memory*: "
        "one instance of each; *Redis, two instances*: `--state-store redis://` with two instances of "
        "each behind the round-robin proxy, so the retry that resumes reaches the other instance than "
        "the request that paused (checked on the proxy).\n\n"
        "The pause record is read from Redis (`asyncai:pause:*`, while the snippet waits) or, in "
        "memory, packed in-process from `ReplScope.run_pausing`'s `PausedSnippet`, where the snapshot "
        "parked as the REPL is measured and the pause and the resume are timed apart (engine alone, no "
        "HTTP). The Redis traffic is the bytes into "
        "and out of Redis during one more call of each. Sizes are after the repetitions: a REPL also "
        "grows a little with every snippet run.\n\n" + pause_summary(rows)
    )
    title = "Approvals that pause and resume (serve-mcp --mutations ask, stateless protocol)"
    save_section("pauses", title, rows, notes, save=not args.no_save)


if __name__ == "__main__":
    main()
