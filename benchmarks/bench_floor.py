"""A small snippet's time by stage, beside the sandbox's floor and Pydantic AI (issue 36, item 3).

    .venv/bin/python benchmarks/bench_floor.py [--runs N] [--no-save]

Three harnesses in one process, interleaved run by run, on the same stdio server
(``benchmarks/bench_server.py``) and the same snippets as ``bench_peers.py``:

- asyncai: ``CodeMode.call_tool("run_code", ...)`` over a ``McpServers`` session.
- the floor: the same snippet fed straight to a ``pydantic-monty`` session (``feed_run``), each
  tool an external function that calls the ``mcp`` SDK client on asyncai's own session and hands
  back the parsed result. No asyncai code runs: this is what the worker and the client cost.
- Pydantic AI's code mode (``bench_peers.PydanticAiInProcess``), timed around its ``run_code``.

asyncai's time is split by the stage it was spent in (``code_mode/engine``): *read* (the scan),
*plan* (refusals, the type-check decision, the feed plan), *feed* (the worker running the snippet,
nested calls included), *run* (the supervision around the feed: wall clock, worker watch, the
shielded task), *finish* (the value's text, the variables note, the output and audit) and *scope*
(the rest: the lock, the worker checkout, the span). Each stage's entry points are wrapped with a
timer for the split's runs only; the ratios come from runs without the wrappers.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pydantic_monty as pm
from mcp import Client

import asyncai.code_mode.engine.run as run_stage
import asyncai.code_mode.engine.snippet as snippet_stage
from bench_peers import (
    EXIT_GRACE,
    SNIPPETS,
    AsyncaiInProcess,
    Outcome,
    asyncai_in_process,
    check,
    pydantic_ai_in_process,
)
from report import Row, Stats, arguments, save_section, seconds

SCENARIOS = ("gather3", "followup")
LABELS = {
    "gather3": "gather of 3 sales() calls, total of all orders",
    "followup": "follow-up snippet using `data`",
}
STAGES = ("read", "plan", "feed", "run", "finish", "scope")
TARGET_PEER = "≤ 0.8x"
TARGET_FLOOR = "≤ 1.4x"
SNIPPET = SNIPPETS["functions"]


class Floor:
    """pydantic-monty and the ``mcp`` SDK client with nothing between them."""

    name = "bare pydantic-monty"

    def __init__(self, session: pm.AsyncMontySession, client: Client) -> None:
        self.session = session
        self.client = client
        self.tools = {name: self._tool(name) for name in ("sales", "records")}

    def _tool(self, name: str) -> Callable[..., Awaitable[Any]]:
        async def call(**arguments: Any) -> Any:
            result = await self.client.call_tool(name, arguments)
            if result.structured_content is not None:
                return result.structured_content
            return json.loads(getattr(result.content[0], "text", "null"))

        return call

    async def feed(self, code: str) -> Any:
        return await self.session.feed_run(code, external_lookup=self.tools, skip_type_check=True)

    async def run(self, scenario: str) -> Outcome:
        if scenario == "followup":
            await self.feed(SNIPPET["first"])
        start = time.perf_counter()
        value = await self.feed(SNIPPET[scenario])
        return Outcome(time.perf_counter() - start, json.dumps(value))


@contextlib.asynccontextmanager
async def floor(client: Client) -> AsyncIterator[Floor]:
    async with pm.AsyncMonty(min_processes=1, max_processes=1) as pool:
        session = pool.checkout(limits={"max_memory": 4 * 1024**3, "max_suspensions": 10**9})
        await session.__aenter__()
        try:
            yield Floor(session, client)
        finally:
            await session.__aexit__(None, None, None)


# --- the split ------------------------------------------------------------------------------------


class StageClock:
    """Seconds per stage of the snippet being measured, from wrappers around each stage's entry
    points (installed only while the split is taken)."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = collections.defaultdict(float)

    def _timed(self, stage: str, function: Callable[..., Any]) -> Callable[..., Any]:
        spent = self.spent
        if asyncio.iscoroutinefunction(function):

            @functools.wraps(function)
            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                start = time.perf_counter()
                try:
                    return await function(*args, **kwargs)
                finally:
                    spent[stage] += time.perf_counter() - start

            return timed_async

        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[stage] += time.perf_counter() - start

        return timed

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        wrapped = [
            (snippet_stage, "scan_snippet_off_loop", "read"),
            (snippet_stage, "refusal", "plan"),
            (snippet_stage, "type_check_wanted", "plan"),
            (run_stage, "plan_feed", "plan"),
            (run_stage.Runner, "_feed", "feed"),
            (run_stage.Runner, "supervise", "supervised"),
            (run_stage, "outcome_text", "finish_in_run"),
            (run_stage.Runner, "_refresh_note", "finish_in_run"),
            (snippet_stage.SnippetRun, "_output", "finish"),
        ]
        originals = [(owner, name, getattr(owner, name)) for owner, name, _ in wrapped]
        for owner, name, stage in wrapped:
            setattr(owner, name, self._timed(stage, getattr(owner, name)))
        try:
            yield
        finally:
            for owner, name, original in originals:
                setattr(owner, name, original)

    def split(self, total: float) -> dict[str, float]:
        """The stages of one snippet that took ``total`` seconds; *run* is the supervision without
        the feed (and the note and value text it finishes with), *scope* what no stage took."""
        spent = collections.defaultdict(float, self.spent)
        inside = spent["finish_in_run"]  # the value's text and the note are made inside supervise
        stages = {stage: spent[stage] for stage in ("read", "plan", "feed")}
        stages["run"] = max(spent["supervised"] - spent["feed"] - inside, 0.0)
        stages["finish"] = spent["finish"] + inside
        stages["scope"] = max(total - sum(stages.values()), 0.0)
        return {stage: stages[stage] for stage in STAGES}


async def split_of(ours: AsyncaiInProcess, scenario: str, runs: int) -> dict[str, float]:
    """The median seconds of each stage over ``runs`` snippets."""
    clock = StageClock()
    samples: dict[str, list[float]] = collections.defaultdict(list)
    with clock.installed():
        for _ in range(runs):
            if scenario == "followup":
                await ours.run_code(SNIPPET["first"])
            clock.spent.clear()
            outcome = await ours.run_code(SNIPPET[scenario])
            for stage, spent in clock.split(outcome.seconds).items():
                samples[stage].append(spent)
    return {stage: Stats.of(samples[stage]).median for stage in STAGES}


# --- measuring ------------------------------------------------------------------------------------


async def interleaved_checked(
    harnesses: list[Any], scenario: str, runs: int
) -> tuple[list[Stats], list[Outcome]]:
    """One warm-up each, then ``runs`` rounds of one run per harness; every answer checked."""
    firsts = []
    for harness in harnesses:
        outcome = await harness.run(scenario)
        check(harness.name, scenario, outcome)
        firsts.append(outcome)
    samples: list[list[float]] = [[] for _ in harnesses]
    for _ in range(runs):
        for index, harness in enumerate(harnesses):
            outcome = await harness.run(scenario)
            check(harness.name, scenario, outcome)
            samples[index].append(outcome.seconds)
    return [Stats.of(taken) for taken in samples], firsts


def split_text(split: dict[str, float]) -> str:
    return ", ".join(f"{stage} {seconds(split[stage])}" for stage in STAGES)


async def measure(runs: int) -> tuple[list[Row], dict[str, dict[str, float]]]:
    rows: list[Row] = []
    splits: dict[str, dict[str, float]] = {}
    async with asyncai_in_process() as ours, pydantic_ai_in_process() as peer:
        client = ours.code_mode.inner.connections[0]._client  # type: ignore[attr-defined]
        assert client is not None
        async with floor(client) as bare:
            harnesses: list[Any] = [ours, bare, peer]
            for scenario in SCENARIOS:
                (mine, base, theirs), _ = await interleaved_checked(harnesses, scenario, runs)
                split = await split_of(ours, scenario, runs)
                splits[scenario] = split
                print(
                    f"  {scenario}: asyncai {seconds(mine.median)}, floor {seconds(base.median)} "
                    f"({mine.median / base.median:.2f}x), Pydantic AI {seconds(theirs.median)} "
                    f"({mine.median / theirs.median:.2f}x); split: {split_text(split)}",
                    flush=True,
                )
                values = {f"stage_{stage}_s": spent for stage, spent in split.items()}
                rows.append(
                    Row(
                        scenario=f"36 floor: {LABELS[scenario]}",
                        case="asyncai vs bare pydantic-monty",
                        stats=mine,
                        baseline_label="pydantic-monty feed_run + mcp SDK client, no asyncai",
                        baseline=base,
                        target=TARGET_FLOOR,
                        note=f"asyncai by stage (medians): {split_text(split)}",
                        values=values,
                    )
                )
                rows.append(
                    Row(
                        scenario=f"36 floor: {LABELS[scenario]}",
                        case="asyncai vs Pydantic AI code mode",
                        stats=mine,
                        baseline_label="Pydantic AI code mode",
                        baseline=theirs,
                        target=TARGET_PEER,
                        note=f"the floor takes {base.median / theirs.median:.2f}x of Pydantic AI's time",
                    )
                )
    await asyncio.sleep(EXIT_GRACE)
    return rows, splits


NOTES = (
    "**How.** asyncai (`CodeMode.call_tool`), the floor (`pydantic-monty`'s `feed_run` of the same "
    "snippet, each tool an external function calling the `mcp` SDK client on the same session, "
    "the parsed result handed back) and Pydantic AI's code mode run in one process, one run of each "
    "in turn, on warm REPLs; the follow-up is measured after each harness bound `data` with its own "
    "first snippet. The split comes from separate runs with a timer around each stage's entry "
    "points (`benchmarks/bench_floor.py`); *feed* is the worker's time including the nested calls, "
    "*run* the supervision around it, *scope* the lock, the worker checkout and the span."
)


async def main(runs: int, save: bool) -> None:
    rows, _ = await measure(runs)
    save_section("floor", "A small snippet at the sandbox's floor (issue 36)", rows, NOTES, save=save)


if __name__ == "__main__":
    options = arguments(60, __doc__.split("\n\n")[0]).parse_args()
    asyncio.run(main(options.runs, not options.no_save))
