"""Context economy on the fixture kcp cluster (issue 12, scenario 1): direct tool calling against one
``run_code``, in bytes to the model, bytes into the sandbox and rounds.

    .venv/bin/python benchmarks/bench_context.py [--runs N] [--no-save]

The fixture kcp (``tests/kcp/fake_kcp.py``) serves on loopback; the bundled
``socialweb-computer-kcp-readonly`` server reads it through the real ``kubectl``. Three tasks: the
ADR's two questions (the socialweb.computer kinds in root:app; the names of all configmaps in every
namespace) and a gather of pods and warning events. Each is answered twice with the ``mcp`` SDK
client over stdio:

- directly, as a model calling the kcp tools itself would: the fewest calls that answer it, calls
  that do not depend on each other issued together in one round, every full result entering the
  context (the client connected to the kcp server itself);
- through code mode: ``asyncai serve-mcp --expose-direct`` wrapping the same kcp server, one
  ``run_code`` with a fixed good snippet (the demo's for the two questions).

The code-mode answer is checked against the same answer computed in CPython from the direct
results. The row's time is the ``run_code`` call as the client sees it (``restart: true``, so every
run starts from a fresh REPL); bytes and rounds are in ``values``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp.types as mt
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from report import Row, Stats, save_section

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes.anthropic_server import ScriptedAnthropic, say, use
from tests.kcp.demo import QUESTIONS, server_command
from tests.kcp.fake_kcp import serve, write_kubeconfig
from tests.serve.helpers import ASYNCAI, stdio_params
from tests.third_party.claude_code import RUN_CODE_TOOL, run_claude, run_code_results, tool_result_text

from asyncai.serve.server import AUDIT_META_KEY

APP = "root:app"
TARGET = ">= 25x bytes to the model"

Call = tuple[str, dict[str, Any]]


def kinds(results: list[Any]) -> Any:
    (resources,) = results
    return sorted(
        {r["kind"] for r in resources["resources"] if r["api_version"].startswith("socialweb.computer/")}
    )


def configmaps(results: list[Any]) -> Any:
    (cms,) = results
    by_namespace: dict[str, list[str]] = {}
    for cm in cms["items"]:
        by_namespace.setdefault(cm["metadata"]["namespace"], []).append(cm["metadata"]["name"])
    return by_namespace


def pods_and_warnings(results: list[Any]) -> Any:
    pods, events = results

    def unhealthy(pod: dict[str, Any]) -> bool:
        statuses = pod["status"].get("containerStatuses", [])
        return pod["status"]["phase"] in ("Pending", "Failed") or any(
            "waiting" in s["state"] for s in statuses
        )

    warnings = [e for e in events["items"] if e["type"] == "Warning"]
    return {
        "pods": len(pods["items"]),
        "by_phase": dict(Counter(p["status"]["phase"] for p in pods["items"])),
        "unhealthy": sorted(p["metadata"]["name"] for p in pods["items"] if unhealthy(p)),
        "warnings": dict(Counter(e["reason"] for e in warnings)),
    }


PODS_AND_WARNINGS = """\
pods, events = await asyncio.gather(
    list_objects(workspace="root:app", resource="pods"),
    get_events(workspace="root:app"),
)
unhealthy = [
    p["metadata"]["name"]
    for p in pods["items"]
    if p["status"]["phase"] in ("Pending", "Failed")
    or any("waiting" in s["state"] for s in p["status"].get("containerStatuses", []))
]
warnings = [e for e in events["items"] if e["type"] == "Warning"]
{
    "pods": len(pods["items"]),
    "by_phase": count_by(pods["items"], "status.phase"),
    "unhealthy": sorted(unhealthy),
    "warnings": count_by(warnings, "reason"),
}"""


@dataclass(frozen=True)
class Task:
    name: str
    question: str
    rounds: tuple[tuple[Call, ...], ...]
    """The direct plan: each round is the calls one assistant turn issues together."""
    snippet: str
    answer: Callable[[list[Any]], Any]
    """The answer in CPython from the direct results (in plan order), to check code mode's."""


TASKS = (
    Task(
        "kinds",
        QUESTIONS[0].text,
        ((("get_api_resources", {"workspace": APP}),),),
        QUESTIONS[0].program,
        kinds,
    ),
    Task(
        "configmaps",
        QUESTIONS[1].text,
        ((("list_objects", {"workspace": APP, "resource": "configmaps"}),),),
        QUESTIONS[1].program,
        configmaps,
    ),
    Task(
        "pods and warning events",
        "Which pods in root:app are unhealthy, and which warning events are there?",
        (
            (
                ("list_objects", {"workspace": APP, "resource": "pods"}),
                ("get_events", {"workspace": APP}),
            ),
        ),
        PODS_AND_WARNINGS,
        pods_and_warnings,
    ),
)


def text_bytes(result: mt.CallToolResult) -> int:
    """Bytes a client puts into its model's context: every text block (not structuredContent)."""
    return sum(len(block.text.encode()) for block in result.content if isinstance(block, mt.TextContent))


def text_of(result: mt.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, mt.TextContent))


def tool_bytes(tool: mt.Tool) -> int:
    """A tool definition as a model gets it: name, description and input schema, compact JSON."""
    body = {"name": tool.name, "description": tool.description or "", "parameters": tool.input_schema}
    return len(json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode())


@dataclass
class Direct:
    bytes_to_model: int
    args_bytes: int
    calls: int
    seconds: float
    results: list[Any]
    texts: list[str]


async def direct(client: Client, task: Task) -> Direct:
    """The direct plan: each round's calls gathered, every result's full text counted."""
    start = time.perf_counter()
    outputs: list[mt.CallToolResult] = []
    for calls in task.rounds:
        outputs += await asyncio.gather(*(client.call_tool(name, args) for name, args in calls))
    seconds = time.perf_counter() - start
    for output in outputs:
        assert not output.is_error, text_of(output)[:300]
    texts = [text_of(output) for output in outputs]
    arguments = [args for calls in task.rounds for _, args in calls]
    return Direct(
        bytes_to_model=sum(text_bytes(output) for output in outputs),
        args_bytes=sum(len(json.dumps(args).encode()) for args in arguments),
        calls=len(outputs),
        seconds=seconds,
        results=[json.loads(text) for text in texts],
        texts=texts,
    )


@dataclass
class Coded:
    bytes_to_model: int
    bytes_into_sandbox: int
    nested_calls: int
    seconds: float
    text: str
    answer: Any
    note_bytes: int
    """Of ``bytes_to_model``: serve-mcp's variables note after the answer, when it changed."""


async def coded(client: Client, task: Task) -> Coded:
    start = time.perf_counter()
    output = await client.call_tool("run_code", {"code": task.snippet, "restart": True})
    seconds = time.perf_counter() - start
    text = text_of(output)
    assert not output.is_error, text[:500]
    structured = output.structured_content or {}
    nested = (output.meta or {})[AUDIT_META_KEY]["nested_calls"]
    return Coded(
        bytes_to_model=text_bytes(output),
        bytes_into_sandbox=sum(int(call["bytes"]) for call in nested),
        nested_calls=len(nested),
        seconds=seconds,
        text=text,
        answer=structured["value"],
        note_bytes=len(structured.get("variables", "").encode()),
    )


@dataclass(frozen=True)
class Received:
    """What Claude Code handed its model for one ``run_code``, beside the answer's own size."""

    chars: int
    value_chars: int
    note_chars: int

    @property
    def within_bound(self) -> bool:
        """At most the value, the note and 100 characters (issue 46)."""
        return self.chars <= self.value_chars + self.note_chars + 100


def through_claude_code(kubeconfig: Path) -> dict[str, Received]:
    """Each task's snippet run by a scripted model through the real Claude Code CLI, with
    ``serve-mcp`` over the kcp server configured as its MCP server: the characters of each
    ``tool_result`` it sends its model next."""
    script = [use(RUN_CODE_TOOL, {"code": task.snippet, "restart": True}) for task in TASKS] + [say("done")]
    with tempfile.TemporaryDirectory() as home, ScriptedAnthropic(script) as model:
        command = [ASYNCAI, "serve-mcp", "--mcp-stdio", server_command(kubeconfig)]
        done = run_claude(model, command, Path(home))
    assert done.returncode == 0, done.stderr[-2000:]
    received = {}
    for task, block in zip(TASKS, run_code_results(model.requests[-1]), strict=True):
        text = tool_result_text(block)
        content = json.loads(text)
        value = json.dumps(content["value"], separators=(",", ":"), ensure_ascii=False)
        received[task.name] = Received(len(text), len(value), len(content.get("variables", "")))
    return received


async def measure_task(
    raw: Client, wrapped: Client, task: Task, runs: int, claude: Received
) -> tuple[Row, bool]:
    first_direct = await direct(raw, task)
    expected = task.answer(first_direct.results)
    via_serve = await direct(wrapped, task)  # the same calls through serve-mcp --expose-direct
    same_direct = via_serve.texts == first_direct.texts
    direct_times = [first_direct.seconds]
    runs_coded: list[Coded] = []
    for i in range(runs):
        if i:
            direct_times.append((await direct(raw, task)).seconds)
        runs_coded.append(await coded(wrapped, task))
    for run in runs_coded:
        assert run.answer == expected, f"{task.name}: code mode answered {run.text[:300]!r}"
    # The first run is the one counted: later runs bind the same variables, so serve-mcp leaves
    # the variables note off (it is sent when it changed) and their results are shorter.
    code = runs_coded[0]
    ratio = first_direct.bytes_to_model / code.bytes_to_model
    direct_rounds = len(task.rounds)
    values = {
        "question": task.question,
        "direct_bytes_to_model": first_direct.bytes_to_model,
        "direct_calls": first_direct.calls,
        "direct_rounds": direct_rounds,
        "direct_arguments_bytes": first_direct.args_bytes,
        "direct_seconds_median": round(statistics.median(direct_times), 4),
        "code_bytes_to_model": code.bytes_to_model,
        "code_variables_note_bytes": code.note_bytes,
        "code_bytes_to_model_later_runs": runs_coded[-1].bytes_to_model,
        "code_bytes_into_sandbox": code.bytes_into_sandbox,
        "code_nested_calls": code.nested_calls,
        "code_rounds": 1,
        "snippet_bytes": len(task.snippet.encode()),
        "bytes_ratio": round(ratio, 1),
        "bytes_ratio_with_snippet": round(
            (first_direct.bytes_to_model + first_direct.args_bytes)
            / (code.bytes_to_model + len(task.snippet.encode())),
            1,
        ),
        "rounds_ratio": direct_rounds / 1,
        "expose_direct_same_text": same_direct,
        "claude_code_chars_to_model": claude.chars,
        "claude_code_value_chars": claude.value_chars,
        "claude_code_note_chars": claude.note_chars,
        "claude_code_within_bound": claude.within_bound,
    }
    note = (
        f"bytes to the model: direct {first_direct.bytes_to_model:,} ({first_direct.calls} call(s), "
        f"{direct_rounds} round(s)) / code mode {code.bytes_to_model:,} (1 round; {code.note_bytes} of them "
        f"the variables note) = {ratio:,.0f}x; "
        f"{code.bytes_into_sandbox:,} bytes into the sandbox; snippet {len(task.snippet.encode()):,} bytes; "
        f"through Claude Code {claude.chars:,} chars (value {claude.value_chars:,}, note {claude.note_chars})"
    )
    row = Row(
        scenario="1 context economy",
        case=f"{task.name}: one run_code",
        stats=Stats.of([run.seconds for run in runs_coded]),
        target=TARGET,
        note=note,
        values=values,
    )
    return row, same_direct


async def definitions_row(raw: Client, wrapped: Client) -> Row:
    """What each way costs once per conversation: the tool definitions the model is given."""
    direct_tools = (await raw.list_tools()).tools
    run_code = next(tool for tool in (await wrapped.list_tools()).tools if tool.name == "run_code")
    direct_bytes = sum(tool_bytes(tool) for tool in direct_tools)
    code_bytes = tool_bytes(run_code)
    return Row(
        scenario="1 context economy",
        case="tool definitions (once per conversation)",
        note=(
            f"direct: {len(direct_tools)} kcp tools, {direct_bytes:,} bytes; code mode: run_code, "
            f"{code_bytes:,} bytes"
        ),
        values={"direct_tools": len(direct_tools), "direct_bytes": direct_bytes, "code_bytes": code_bytes},
    )


async def measure(kubeconfig: Path, runs: int, claude: dict[str, Received]) -> tuple[list[Row], bool]:
    command = server_command(kubeconfig)
    words = command.split()
    raw_params = StdioServerParameters(command=words[0], args=words[1:])
    wrapped_params = stdio_params("--mcp-stdio", command, "--expose-direct")
    async with (
        Client(stdio_client(raw_params), mode="legacy") as raw,
        Client(stdio_client(wrapped_params), mode="legacy") as wrapped,
    ):
        # Start the sandbox pool and check out the session's worker before anything is timed.
        await wrapped.call_tool("run_code", {"code": "None"})
        rows: list[Row] = []
        all_same = True
        for task in TASKS:
            row, same = await measure_task(raw, wrapped, task, runs, claude[task.name])
            rows.append(row)
            all_same = all_same and same
        rows.append(await definitions_row(raw, wrapped))
    return rows, all_same


def plan(task: Task) -> str:
    """The direct calls, ``+`` within a round and ``then`` between rounds."""
    rounds = [" + ".join(f"`{name}({json.dumps(args)})`" for name, args in calls) for calls in task.rounds]
    return " then ".join(rounds)


def notes(all_same: bool) -> str:
    snippets = "\n\n".join(f"{task.name}:\n\n```python\n{task.snippet}\n```" for task in TASKS)
    plans = "; ".join(f"{task.name}: {plan(task)}" for task in TASKS)
    same = (
        "The direct results through `serve-mcp --expose-direct` were byte-for-byte the kcp server's own."
        if all_same
        else "The direct results through `serve-mcp --expose-direct` DIFFERED from the kcp server's own."
    )
    return f"""\
Fixture kcp on loopback, `socialweb-computer-kcp-readonly` on the real `kubectl`, the `mcp` SDK
client over stdio. Direct: the client connected to the kcp server itself, making the fewest calls
that answer the task ({plans}); calls that do not depend on each other go in one round (one
assistant turn), and every result's text blocks count as bytes to the model (structuredContent is
not counted again). Code mode: `asyncai serve-mcp --expose-direct` over the same kcp server, one
`run_code` (`restart: true`); bytes to the model are the text of its result (variables note
included), bytes into the sandbox the sum of the audit's `nested_calls[i].bytes`. The snippet the
model writes is not in "bytes to the model" (it is model output): it is `snippet_bytes`, and
`bytes_ratio_with_snippet` counts it against the direct calls' arguments. Rounds are model turns
that call tools (the final answer turn, the same for both, is not counted). Times are the
`run_code` call as the client sees it; the direct calls' median is `direct_seconds_median`. Every
code-mode answer was checked against the same answer computed in CPython from the direct results.
{same}

Through Claude Code: the real CLI (`@anthropic-ai/claude-code` as pinned in
`tests/third_party/package.json`, print mode) with `asyncai serve-mcp` over the same kcp server as
its MCP server, and a scripted model on loopback that runs each snippet once. Claude Code hands
its model a result's structured content (`{{"value": ..., "variables": ...}}`); the audit is in
`_meta`, which it does not pass on. `claude_code_chars_to_model` is the `tool_result` it sent next,
beside the value's compact JSON and the note: within the value, the note and 100 characters
(`claude_code_within_bound`) for every task.

{snippets}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-save", action="store_true", help="print only; leave results.json alone")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, serve() as (base_url, _):
        kubeconfig = write_kubeconfig(Path(tmp) / "fake-kcp.kubeconfig", base_url)
        claude = through_claude_code(kubeconfig)
        rows, all_same = asyncio.run(measure(kubeconfig, args.runs, claude))
    outside = [name for name, received in claude.items() if not received.within_bound]
    assert not outside, f"through Claude Code, over the value, the note and 100 chars: {outside}"
    title = "Context economy on the fixture kcp cluster (scenario 1)"
    save_section("context", title, rows, notes(all_same), save=not args.no_save)


if __name__ == "__main__":
    main()
