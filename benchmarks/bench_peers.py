"""Side by side with the peers (issue 12, scenario 5): the same snippets over the same tools of the
same stdio server (``benchmarks/bench_server.py``), in asyncai and in two other code modes.

    .venv/bin/python benchmarks/bench_peers.py [--runs N] [--no-save]

In-process, against Pydantic AI's code mode (``pydantic-ai-harness[code-mode]``, on the same
``pydantic-monty``):

- asyncai: ``CodeMode.call_tool("run_code", ...)`` over a ``McpServers`` session
  to the bench server; one REPL scope (the executor's default), reused by every snippet.
- Pydantic AI: an ``Agent`` with an ``MCPToolset`` (stdio, connected once with ``async with
  agent``) and the ``CodeMode`` capability, driven by a scripted ``FunctionModel``. Pydantic AI
  keeps a REPL (and its Monty worker pool) for one agent run only, so each measured run is one
  agent run whose model calls ``run_code`` twice: a priming snippet (``import asyncio``; for the
  follow-up, the snippet that binds ``data``), then the measured snippet. A capability's
  ``wrap_tool_execute`` times the measured ``run_code`` alone: the same span as asyncai's
  ``call_tool`` (a warm REPL, no model round), without the agent run's model rounds and the
  per-run worker start, which are reported apart (``peer_agent_run_s``).

Over MCP stdio, both driven by the ``mcp`` SDK client (``Client(..., mode="legacy")``), one
connection each, timed around ``call_tool``:

- ``asyncai serve-mcp --mcp-stdio <bench server>``: the ``run_code`` tool; one REPL per connection.
- FastMCP: ``benchmarks/peer_fastmcp_server.py``, a FastMCP proxy of the bench server with the
  ``CodeMode`` transform: the ``execute`` tool, where tools are reached as
  ``await call_tool("name", {...})`` and a tool without an output schema returns its text (so the
  10 MB document needs a ``json.loads`` in the snippet). Every ``execute`` runs in a fresh sandbox:
  nothing persists between calls, so the follow-up scenario is reported as not supported.

Scenarios: a gather of three calls with aggregation; 1,000 sequential calls; 100 gathered 50 ms
calls; a 10 MB result filtered to a count; a follow-up snippet using state from a first one. Each
harness's answer is checked on every run; the characters returned to the model are those of the
first (warm-up) run of the snippet. Runs alternate between asyncai and the peer.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import subprocess
import sys
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import psutil  # type: ignore[import-untyped]
from fastmcp.client.transports import StdioTransport
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from pydantic_ai import Agent, RunContext, ToolDefinition
from pydantic_ai.capabilities import AbstractCapability, ValidatedToolArgs, WrapToolExecuteHandler
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai_harness import CodeMode as PydanticAiCodeMode
from pydantic_ai_harness.code_mode import CodeModeReturnSchemaWarning

from asyncai.code_mode import CodeMode, CodeModeLimits
from asyncai.tools.mcp.client import McpServers
from asyncai.tools.mcp.specs import stdio_spec
from bench_server import RECORDS_PER_10_MB, REGIONS
from report import Row, Stats, save_section, seconds

HERE = Path(__file__).resolve().parent
BENCH_SERVER = HERE / "bench_server.py"
FASTMCP_SERVER = HERE / "peer_fastmcp_server.py"
ASYNCAI = Path(sys.executable).parent / "asyncai"
SERVER_COMMAND = f"bench={sys.executable} {BENCH_SERVER}"

SEQUENTIAL = 1_000
FAN_OUT = 100
NAP_MS = 50
FOLLOW_UP_RECORDS = 1_000
MAX_CALLS = 2_000  # per snippet, every harness (their defaults are 100, 100 and 50)
SANDBOX_MEMORY = 4 * 1024**3  # asyncai's default heap cap, given to the peers too
SANDBOX_SECONDS = 30.0
PRIME = "import asyncio"
MEASURED = "measured"
TARGET = "≤ 0.8x"
EXIT_GRACE = 0.05  # pydantic-monty can abort at exit if the loop closes right after a pool

SCENARIOS = ("gather3", "seq1000", "gather100", "filter10mb", "followup")
LABELS = {
    "gather3": "gather of 3 sales() calls, total of all orders",
    "seq1000": f"{SEQUENTIAL:,} sequential ping()",
    "gather100": f"{FAN_OUT} gathered nap(ms={NAP_MS})",
    "filter10mb": "10 MB records() filtered to a count",
    "followup": "follow-up snippet using `data` bound by the first",
}
RUNS = {"gather3": 25, "seq1000": 3, "gather100": 9, "filter10mb": 3, "followup": 25}

# The snippets. "functions": asyncai and Pydantic AI (each tool is an async function, a JSON text
# result arrives parsed); "call_tool": FastMCP's CodeMode. "first" binds the follow-up's state.
SNIPPETS: dict[str, dict[str, str]] = {
    "functions": {
        "gather3": (
            "import asyncio\n"
            "regions = await asyncio.gather(sales(region='eu'), sales(region='us'), sales(region='apac'))\n"
            "sum(order['total'] for region in regions for order in region['orders'])"
        ),
        "seq1000": f"n = 0\nfor _ in range({SEQUENTIAL}):\n    await ping()\n    n += 1\nn",
        "gather100": (
            "import asyncio\n"
            f"naps = await asyncio.gather(*[nap(ms={NAP_MS}) for _ in range({FAN_OUT})])\n"
            "sum(r['slept_ms'] for r in naps)"
        ),
        "filter10mb": (
            f"doc = await records(count={RECORDS_PER_10_MB})\n"
            "sum(1 for item in doc['items'] if item['warning'])"
        ),
        "first": f"data = await records(count={FOLLOW_UP_RECORDS})",
        "followup": "sum(1 for item in data['items'] if item['warning'])",
    },
    "call_tool": {
        "gather3": (
            "import asyncio\n"
            "regions = await asyncio.gather(call_tool('sales', {'region': 'eu'}), "
            "call_tool('sales', {'region': 'us'}), call_tool('sales', {'region': 'apac'}))\n"
            "sum(order['total'] for region in regions for order in region['orders'])"
        ),
        "seq1000": f"n = 0\nfor _ in range({SEQUENTIAL}):\n    await call_tool('ping', {{}})\n    n += 1\nn",
        "gather100": (
            "import asyncio\n"
            f"naps = await asyncio.gather(*[call_tool('nap', {{'ms': {NAP_MS}}})"
            f" for _ in range({FAN_OUT})])\n"
            "sum(r['slept_ms'] for r in naps)"
        ),
        "filter10mb": (
            "import json\n"
            f"doc = json.loads(await call_tool('records', {{'count': {RECORDS_PER_10_MB}}}))\n"
            "sum(1 for item in doc['items'] if item['warning'])"
        ),
        "first": (
            f"import json\ndata = json.loads(await call_tool('records', {{'count': {FOLLOW_UP_RECORDS}}}))"
        ),
        "followup": "sum(1 for item in data['items'] if item['warning'])",
    },
}


def expected() -> dict[str, float]:
    """The answers, from the bench server's definitions of sales() and record()."""
    totals = sum(round(10.5 * (i + 1) + seed, 2) for seed in range(len(REGIONS)) for i in range(20))
    return {
        "gather3": totals,
        "seq1000": SEQUENTIAL,
        "gather100": FAN_OUT * NAP_MS,
        "filter10mb": sum(1 for i in range(RECORDS_PER_10_MB) if i % 7 == 0),
        "followup": sum(1 for i in range(FOLLOW_UP_RECORDS) if i % 7 == 0),
    }


EXPECTED = expected()
warnings.filterwarnings("ignore", category=CodeModeReturnSchemaWarning)  # records() has no output schema


@dataclass
class Outcome:
    """One snippet run: the measured seconds and what went back to the model."""

    seconds: float
    text: str
    structured_chars: int | None = None
    note_chars: int | None = None
    """asyncai's variables note: in-process the runtime puts it into the next user message, over MCP
    serve-mcp sends it as a second content block."""

    def value(self) -> Any:
        return json.loads(self.text)


def check(harness: str, scenario: str, outcome: Outcome) -> None:
    try:
        got = outcome.value()
    except ValueError:
        got = None
    want = EXPECTED[scenario]
    if not isinstance(got, int | float) or not math.isclose(got, want):
        raise AssertionError(f"{harness} answered {scenario} wrongly: {outcome.text[:400]!r} (want {want})")


# --- asyncai in-process ---------------------------------------------------------------------------


class AsyncaiInProcess:
    name = "asyncai"

    def __init__(self, code_mode: CodeMode) -> None:
        self.code_mode = code_mode

    async def run_code(self, code: str) -> Outcome:
        start = time.perf_counter()
        out = await self.code_mode.call_tool("run_code", {"code": code})
        elapsed = time.perf_counter() - start
        if out.is_error:
            raise AssertionError(f"asyncai run_code failed: {out.content[:400]}")
        return Outcome(elapsed, out.content, note_chars=len(self.code_mode.context_note() or ""))

    async def run(self, scenario: str) -> Outcome:
        snippets = SNIPPETS["functions"]
        if scenario == "followup":
            await self.run_code(snippets["first"])
        return await self.run_code(snippets[scenario])


@contextlib.asynccontextmanager
async def asyncai_in_process() -> AsyncIterator[AsyncaiInProcess]:
    limits = CodeModeLimits(max_calls=MAX_CALLS, max_memory=SANDBOX_MEMORY, code_timeout=SANDBOX_SECONDS)
    async with McpServers([stdio_spec(SERVER_COMMAND)]) as mcp, CodeMode(mcp, limits) as cm:
        yield AsyncaiInProcess(cm)


# --- Pydantic AI in-process -------------------------------------------------------------------------


@dataclass
class SnippetTimer(AbstractCapability[Any]):
    """Times each ``run_code`` execution by its tool call id; nested tool calls pass straight through."""

    timings: dict[str, float] = field(default_factory=dict)

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: ValidatedToolArgs,
        handler: WrapToolExecuteHandler,
    ) -> Any:
        if call.tool_name != "run_code":
            return await handler(args)
        start = time.perf_counter()
        try:
            return await handler(args)
        finally:
            self.timings[call.tool_call_id] = time.perf_counter() - start


class PydanticAiInProcess:
    """An agent whose scripted model calls ``run_code`` with each snippet of ``script`` in turn,
    then answers; the last snippet is the measured one."""

    name = "Pydantic AI"

    def __init__(self) -> None:
        self.script: list[str] = []
        self.timer = SnippetTimer()
        self.agent_runs: dict[str, list[float]] = {}
        code_mode = PydanticAiCodeMode[Any](
            max_tool_calls=MAX_CALLS,
            resource_limits={
                "max_duration_secs": SANDBOX_SECONDS,
                "max_memory": SANDBOX_MEMORY,
                "max_suspensions": 1_000_000,  # the default, 1,000 per REPL, cannot take 1,000 calls
            },
        )
        # keep_alive=False: the server process ends when the toolset is exited (FastMCP keeps it by default).
        transport = StdioTransport(command=sys.executable, args=[str(BENCH_SERVER)], keep_alive=False)
        toolset = MCPToolset[Any](transport)
        self.agent = Agent(
            FunctionModel(self.respond), toolsets=[toolset], capabilities=[self.timer, code_mode]
        )

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = sum(1 for message in messages if isinstance(message, ModelResponse))
        if step >= len(self.script):
            return ModelResponse(parts=[TextPart("done")])
        call_id = MEASURED if step == len(self.script) - 1 else f"prime-{step}"
        return ModelResponse(parts=[ToolCallPart("run_code", {"code": self.script[step]}, call_id)])

    async def run(self, scenario: str) -> Outcome:
        snippets = SNIPPETS["functions"]
        self.script = [snippets["first"] if scenario == "followup" else PRIME, snippets[scenario]]
        self.timer.timings.clear()
        start = time.perf_counter()
        result = await self.agent.run("run the snippets")
        self.agent_runs.setdefault(scenario, []).append(time.perf_counter() - start)
        returned = [
            part
            for message in result.all_messages()
            for part in message.parts
            if isinstance(part, ToolReturnPart) and part.tool_call_id == MEASURED
        ]
        if not returned or MEASURED not in self.timer.timings:
            raise AssertionError(f"Pydantic AI did not run the measured snippet: {result.all_messages()}")
        return Outcome(self.timer.timings[MEASURED], returned[0].model_response_str())


@contextlib.asynccontextmanager
async def pydantic_ai_in_process() -> AsyncIterator[PydanticAiInProcess]:
    harness = PydanticAiInProcess()
    async with harness.agent:
        yield harness


# --- over MCP: asyncai serve-mcp and FastMCP ----------------------------------------------------------


class OverMcp:
    def __init__(self, name: str, client: Client, tool: str, convention: str) -> None:
        self.name = name
        self.client = client
        self.tool = tool
        self.snippets = SNIPPETS[convention]

    async def call(self, code: str) -> tuple[Outcome, bool]:
        start = time.perf_counter()
        result = await self.client.call_tool(self.tool, {"code": code})
        elapsed = time.perf_counter() - start
        # The value is the first block; serve-mcp sends the variables note as a second one.
        text, *rest = [getattr(block, "text", "") for block in result.content] or [""]
        structured = None if result.structured_content is None else len(json.dumps(result.structured_content))
        note_chars = sum(len(more) for more in rest) or None
        return Outcome(elapsed, text, structured, note_chars), bool(result.is_error)

    async def run_code(self, code: str) -> Outcome:
        outcome, is_error = await self.call(code)
        if is_error:
            raise AssertionError(f"{self.name} failed: {outcome.text[:400]}")
        return outcome

    async def run(self, scenario: str) -> Outcome:
        if scenario == "followup":
            await self.run_code(self.snippets["first"])
        return await self.run_code(self.snippets[scenario])


@contextlib.asynccontextmanager
async def over_mcp(
    name: str, params: StdioServerParameters, tool: str, convention: str
) -> AsyncIterator[OverMcp]:
    # The servers' log lines stay out of the report (errlog becomes the child's stderr).
    errlog: Any = subprocess.DEVNULL
    async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
        yield OverMcp(name, client, tool, convention)


def serve_mcp_params() -> StdioServerParameters:
    args = ["serve-mcp", "--mcp-stdio", SERVER_COMMAND, "--code-max-calls", str(MAX_CALLS)]
    return StdioServerParameters(command=str(ASYNCAI), args=args)


def fastmcp_params() -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[str(FASTMCP_SERVER)])


# --- measuring ------------------------------------------------------------------------------------


class Harness(Protocol):
    name: str

    async def run(self, scenario: str) -> Outcome: ...


@dataclass
class Pair:
    ours: Stats
    theirs: Stats
    ours_first: Outcome
    theirs_first: Outcome


async def alternate(
    ours: Callable[[], Awaitable[Outcome]], theirs: Callable[[], Awaitable[Outcome]], runs: int
) -> tuple[Stats, Stats, Outcome, Outcome]:
    """One warm-up each (its outcome is what the model would see), then ``runs`` alternated runs;
    each side reports its own measured seconds."""
    ours_first, theirs_first = await ours(), await theirs()
    mine: list[float] = []
    base: list[float] = []
    for _ in range(runs):
        mine.append((await ours()).seconds)
        base.append((await theirs()).seconds)
    return Stats.of(mine), Stats.of(base), ours_first, theirs_first


async def compare(ours: Harness, theirs: Harness, scenario: str, runs: int) -> Pair:
    async def run_ours() -> Outcome:
        outcome = await ours.run(scenario)
        check(ours.name, scenario, outcome)
        return outcome

    async def run_theirs() -> Outcome:
        outcome = await theirs.run(scenario)
        check(theirs.name, scenario, outcome)
        return outcome

    started = time.perf_counter()
    mine, base, ours_first, theirs_first = await alternate(run_ours, run_theirs, runs)
    print(
        f"  {scenario}: {ours.name} {seconds(mine.median)}, {theirs.name} {seconds(base.median)} "
        f"({mine.median / base.median:.2f}x, {time.perf_counter() - started:.1f} s)",
        flush=True,
    )
    return Pair(mine, base, ours_first, theirs_first)


def chars_note(ours: str, theirs: str, pair: Pair) -> str:
    first, peer = pair.ours_first, pair.theirs_first
    note = f"chars to the model: {ours} {len(first.text):,}, {theirs} {len(peer.text):,}"
    if first.note_chars:
        note += f"; asyncai's variables note adds {first.note_chars:,} chars"
    structured = [
        f"{label} {outcome.structured_chars:,}"
        for label, outcome in ((ours, first), (theirs, peer))
        if outcome.structured_chars is not None
    ]
    if structured:
        note += f"; structuredContent: {', '.join(structured)}"
    return note


def row(scenario: str, peer: str, pair: Pair, values: dict[str, Any] | None = None) -> Row:
    chars = {"asyncai_chars": len(pair.ours_first.text), "peer_chars": len(pair.theirs_first.text)}
    for key, outcome in (("asyncai", pair.ours_first), ("peer", pair.theirs_first)):
        if outcome.structured_chars is not None:
            chars[f"{key}_structured_chars"] = outcome.structured_chars
        if outcome.note_chars is not None:
            chars[f"{key}_note_chars"] = outcome.note_chars
    return Row(
        scenario=f"5 peers: {LABELS[scenario]}",
        case=f"asyncai vs {peer}",
        stats=pair.ours,
        baseline_label=peer,
        baseline=pair.theirs,
        target=TARGET,
        note=chars_note("asyncai", peer, pair),
        values={**chars, **(values or {})},
    )


async def measure_in_process(runs: dict[str, int]) -> list[Row]:
    peer = "Pydantic AI code mode"
    rows: list[Row] = []
    async with asyncai_in_process() as ours, pydantic_ai_in_process() as theirs:
        for scenario in SCENARIOS:
            pair = await compare(ours, theirs, scenario, runs[scenario])
            agent_runs = theirs.agent_runs.get(scenario, [])
            extra = {"peer_agent_run_s": Stats.of(agent_runs).median} if agent_runs else {}
            rows.append(row(scenario, peer, pair, extra))
    return rows


async def measure_over_mcp(runs: dict[str, int]) -> list[Row]:
    peer = "FastMCP CodeMode"
    rows: list[Row] = []
    async with (
        over_mcp("asyncai serve-mcp", serve_mcp_params(), "run_code", "functions") as ours,
        over_mcp("FastMCP CodeMode", fastmcp_params(), "execute", "call_tool") as theirs,
    ):
        for scenario in SCENARIOS:
            if scenario == "followup":
                rows.append(await follow_up_without_state(ours, theirs, peer, runs[scenario]))
                continue
            pair = await compare(ours, theirs, scenario, runs[scenario])
            rows.append(row(scenario, peer, pair))
    for item in rows:
        item.values["over"] = "mcp stdio"
    return rows


async def follow_up_without_state(ours: OverMcp, theirs: OverMcp, peer: str, runs: int) -> Row:
    """asyncai's follow-up is measured alone; FastMCP's is run once to show it fails."""
    await theirs.run_code(theirs.snippets["first"])
    refused, is_error = await theirs.call(theirs.snippets["followup"])
    if not is_error:
        raise AssertionError(f"FastMCP kept state between execute calls after all: {refused.text[:200]!r}")
    samples: list[float] = []
    first: Outcome | None = None
    for _ in range(runs + 1):
        outcome = await ours.run("followup")
        check(ours.name, "followup", outcome)
        if first is None:
            first = outcome
        else:
            samples.append(outcome.seconds)
    assert first is not None
    stats = Stats.of(samples)
    print(f"  followup: {ours.name} {seconds(stats.median)}, {peer}: not supported", flush=True)
    reason = refused.text.strip().splitlines()[-1][:120] if refused.text.strip() else "an error"
    return Row(
        scenario=f"5 peers: {LABELS['followup']}",
        case=f"asyncai vs {peer}",
        stats=stats,
        baseline_label=f"{peer}: not supported",
        target=TARGET,
        note=(
            f"{peer} runs every execute in a fresh sandbox, so `data` is gone ({reason}); "
            f"chars to the model: asyncai {len(first.text):,}"
        ),
        values={
            "asyncai_chars": len(first.text),
            "peer_chars": None,
            "peer_supported": False,
            "over": "mcp stdio",
        },
    )


def notes(rows: list[Row], runs: dict[str, int], wall: float) -> str:
    over = [
        f"{row.scenario.removeprefix('5 peers: ')} vs {row.baseline_label}"
        for row in rows
        if (row.ratio or 0) > 0.8
    ]
    lines = [
        "**How each side is driven.** In-process: asyncai's `CodeMode.call_tool('run_code')` "
        "over a `McpServers` stdio session, against Pydantic AI's `CodeMode` capability on an "
        "`Agent` with an `MCPToolset` (FastMCP client, stdio) and a scripted `FunctionModel`. Both are "
        "timed around the `run_code` execution alone, in a warm REPL; Pydantic AI's through a "
        "capability's `wrap_tool_execute` (its nested calls pass through it untimed). Pydantic AI "
        "starts a REPL and a Monty worker per agent run, so each of its runs first primes the REPL "
        "with a snippet; its whole agent run (two model rounds, worker start, both snippets) is "
        "`peer_agent_run_s`. Over MCP: `asyncai serve-mcp` against a FastMCP proxy of the same server "
        "with its `CodeMode` transform (`benchmarks/peer_fastmcp_server.py`), both through the `mcp` "
        "client and timed around `call_tool`; FastMCP starts a fresh sandbox for every `execute` and "
        "keeps no state.",
        f"**Limits.** Every harness gets {MAX_CALLS:,} nested calls per snippet, a "
        f"{SANDBOX_MEMORY // 1024**3} GiB heap and {SANDBOX_SECONDS:.0f} s of execution; Pydantic AI also "
        "gets `max_suspensions` 1,000,000 (its default 1,000 per REPL cannot take 1,000 calls).",
        "**Snippets.** asyncai and Pydantic AI run the same text (tools are async functions and a "
        "JSON text result arrives parsed); FastMCP's differ only in the calling convention "
        "(`await call_tool('ping', {})`) and a `json.loads` of the 10 MB text, which its `call_tool` "
        "returns unparsed. All are in `SNIPPETS` at the top of `benchmarks/bench_peers.py`. Every "
        "answer is checked on every run.",
        "**Characters** are what the measured snippet's first run returned to the model: asyncai's "
        "`run_code` content, Pydantic AI's tool return as the model gets it, the MCP text content. "
        "asyncai also tells the model which variables its REPL holds: in-process the runtime puts "
        "that note into the next user message; `serve-mcp` appends it to the result when it "
        "changed, which is most of its characters here. Over MCP, `structuredContent` is sent "
        "as well: asyncai's repeats the result and carries the nested-call audit (one entry per "
        "call), FastMCP sends none for these results.",
        f"**Over the 0.8x target:** {'; '.join(over) if over else 'none'}.",
        f"Runs per scenario: {', '.join(f'{k} {v}' for k, v in runs.items())} after one warm-up; "
        f"the whole script took {wall:.0f} s.",
    ]
    return "\n\n".join(lines)


def leftover_children() -> list[str]:
    return [
        f"{child.pid} {' '.join(child.cmdline())[:80]}" for child in psutil.Process().children(recursive=True)
    ]


async def main(runs_override: int | None, save: bool) -> None:
    started = time.perf_counter()
    runs = {name: runs_override or count for name, count in RUNS.items()}
    print("in-process: asyncai vs Pydantic AI code mode", flush=True)
    rows = await measure_in_process(runs)
    print("over MCP stdio: asyncai serve-mcp vs FastMCP CodeMode", flush=True)
    rows += await measure_over_mcp(runs)
    await asyncio.sleep(EXIT_GRACE)
    wall = time.perf_counter() - started
    title = "Side by side with the peers (scenario 5)"
    save_section("peers", title, rows, notes(rows, runs, wall), save=save)
    left = leftover_children()
    print(f"left-over child processes: {left or 'none'}; wall time {wall:.1f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, help="measured runs per scenario (default: per scenario)")
    parser.add_argument("--no-save", action="store_true", help="print the table, leave the result files")
    options = parser.parse_args()
    asyncio.run(main(options.runs, not options.no_save))
