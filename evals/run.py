"""``make eval``: the task suite against a real model, in each mode, written up as a table.

``python -m evals.run`` starts the local model (Qwen2.5-Coder-1.5B on llama.cpp, ``evals.local_model``)
unless ``--base-url`` and ``--model`` name another OpenAI-compatible endpoint. Each attempt runs one
task in a fresh world (``evals.world``) in one mode:

- ``code``: code mode, the model calling ``run_code`` as a tool;
- ``text``: code mode with the text protocol, the program in a ```python block of the reply;
- ``direct``: the model calling the MCP tools itself, the baseline code mode is measured against.

Per task and mode it records success, model rounds, prompt and completion tokens, the bytes of tool
results that reached the context, repairs and wall time; it writes ``benchmarks/EVAL.md``,
``benchmarks/eval_results.json`` and (with matplotlib, the ``eval`` extra) ``benchmarks/eval.png``.
With ``--record`` each attempt's model exchanges go to ``evals/recordings/``, which ``make test``
replays. After a harness change, ``--record --stale`` runs again only the attempts whose recordings
no longer replay: the model's replies vary between runs even with a fixed seed, so running an
unchanged attempt again would only draw another sample.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import AsyncExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from asyncai import CodeMode, CodeModeLimits, McpServers, ToolSource
from asyncai.backend import calls
from asyncai.backend.config import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TEMPERATURE,
    NO_ANSWER_TEXT,
    BackendConfig,
    Message,
)
from asyncai.backend.openai import ModelServerError, OpenAiCompatibleBackend, RunResult
from evals.recording import RECORDINGS, Exchange, Recorder, Replayer, stable
from evals.tasks import BY_NAME, TASKS, Task
from evals.world import Services, World, new_world, services

ROOT = Path(__file__).resolve().parents[1]
MODES = ("code", "text", "direct")
DEFAULT_MODES = ("code", "direct")
"""The text protocol stays available (``--modes text``); run 6 found it behind both (26 of 85, none
of the 50 several-call attempts), so a default run leaves it out."""
ATTEMPT_TIMEOUT = 420.0
LIMITS = CodeModeLimits(max_memory=512 * 2**20)


@dataclass
class Attempt:
    task: str
    size: str
    mode: str
    repetition: int
    success: bool
    failure: str | None
    """``None``, or ``model: ...`` / ``harness: ...`` (see ``classify``)."""
    rounds: int
    prompt_tokens: int
    completion_tokens: int
    tool_result_bytes: int
    repairs: int
    seconds: float
    reply: str
    tool_calls: int = 0
    """The model's tool calls that ran (``run_code``'s, or the servers' tools in direct mode)."""
    named_calls: int = 0
    """Of those, calls of a catalog function by its own name, run as a one-call snippet (the
    ``catalog_name`` repair): the model called a tool where code mode asks for a program."""
    nested_calls: int = 0
    """The MCP tool calls the snippets made (code mode; the turn summary's ``nested_calls``)."""
    exchanges: list[Exchange] = field(default_factory=list, repr=False)


def executor_for(mode: str, servers: McpServers) -> ToolSource:
    """What the model's tool calls run on in ``mode``: the servers themselves, or code mode."""
    return servers if mode == "direct" else CodeMode(servers, LIMITS, mutations="allow")


_GAVE_UP = re.compile(r"\b(sorry|unable to|cannot|can't|don't have access|not able to)\b", re.I)
_CODE_BLOCK = re.compile(r"```.*?(?:```|\Z)", re.S)
_OVERFLOW = "too long for the model's context"


_ARGUMENTS_WRITTEN = r"\s*\([^()\n]*(?:\([^()\n]*\)[^()\n]*)*\)"
"""A call's parentheses on one line, with one level of parentheses inside them."""


_ECHOED = re.compile(
    r"<tool_(?:response|result|output)>.*?(?:</tool_(?:response|result|output)>|\Z)|^\(ran as .*$",
    re.S | re.M,
)
"""A tool result the model copied back (or made up) into its reply, and the harness's note on what
it ran: words about calls, not calls."""


def named_calls(reply: str, names: Collection[str]) -> list[str]:
    """The offered tools and catalog functions ``reply`` names as a call, in or out of fences: a JSON
    ``"name": "X"``, or ``X(``. The classifier's own rule, broader than the harness's recogniser, so
    a call the harness failed to read counts against the harness; a result the model echoed, in
    ``<tool_response>`` tags or as the harness's ``(ran as ...)`` line, is not a call."""
    reply = _ECHOED.sub("", reply)
    found = []
    for name in sorted(names):
        quoted = re.search(r'"(?:name|function|tool)"\s*:\s*"' + re.escape(name) + '"', reply)
        if quoted or re.search(r"(?<![\w.])" + re.escape(name) + r"\s*\(", reply):
            found.append(name)
    return found


def _ran_text(messages: Sequence[Message]) -> str:
    """Every call the harness ran in a turn, as text: each ``run_code`` snippet, each tool call."""
    texts = []
    for message in messages:
        for call in message.tool_calls:
            arguments = wire_arguments(call.arguments)
            code = arguments.get("code") if isinstance(arguments, dict) else None
            texts.append(code if isinstance(code, str) else f"{call.name} {call.arguments}")
    return "\n".join(texts)


def wire_arguments(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text).replace('"', "'")


def unran_calls(reply: str, names: Collection[str], messages: Sequence[Message]) -> list[str]:
    """The calls ``reply`` names (``named_calls``) that the harness did not run in the turn: a call
    whose code, or whose name with its arguments, matches one that ran is the model repeating it."""
    ran = _squeezed(_ran_text(messages))
    unran = []
    for name in named_calls(reply, names):
        written = [
            match.group(0)
            for match in re.finditer(
                r"(?<![\w.])" + re.escape(name) + r"\s*\([^()\n]*(?:\([^()\n]*\)[^()\n]*)*\)", reply
            )
        ]
        if not written or not any(_squeezed(call) in ran for call in written):
            unran.append(name)
    return unran


def classify(
    result: RunResult | None, error: str | None, finish_reason: str | None, call_names: set[str]
) -> str:
    """Why a failed attempt failed: the harness's fault or the model's, by rule. ``finish_reason``
    is the last reply's; ``call_names`` are what a call in the reply's text could name."""
    if result is None:
        if (error is not None and "timed out" in error.lower()) or error == "TimeoutError":
            return "model: too slow (the attempt's time ran out)"
        if error is not None and _OVERFLOW in error:
            return "model: read more than its context holds"
        return f"harness: the run failed ({error})"
    reply = result.reply.strip()
    if finish_reason == "length":
        return "model: rambled (its reply was cut at the token limit)"
    if not reply or reply.startswith(NO_ANSWER_TEXT[:-1]):
        return "harness: a turn without an answer"
    if result.final_round_forced:
        return "model: ran out of rounds"
    unran = unran_calls(reply, call_names, result.messages)
    if unran:
        return f"harness: a call it did not run ({', '.join(unran)})"
    if _GAVE_UP.search(_CODE_BLOCK.sub("", reply)):
        return "model: gave up"
    if result.summary.run_code_calls == 0:
        return "model: answered without calling a tool"
    results = [m.content or "" for m in result.messages[1:] if m.role in ("tool", "user")]
    if results and ("Traceback" in results[-1] or "error" in results[-1][:40].lower()):
        return "model: wrong code"
    return "model: wrong answer"


def answered(result: RunResult, finish_reason: str | None) -> bool:
    """Whether the reply can count: finished (not cut at the token limit) and after at least one
    tool call ran. Every task reads the world, so a right number in a plan cut short, or a guess
    made without calling anything, is no success."""
    return finish_reason != "length" and result.summary.run_code_calls > 0


async def run_attempt(task: Task, mode: str, repetition: int, world: World, recorder: Recorder,
                      config: BackendConfig) -> Attempt:  # fmt: skip
    recorder.placeholders = world.placeholders()
    recorder.take()
    started = time.perf_counter()
    result: RunResult | None = None
    error: str | None = None
    async with AsyncExitStack() as stack:
        servers = await stack.enter_async_context(McpServers([world.server(name) for name in task.servers]))
        executor = executor_for(mode, servers)
        if isinstance(executor, CodeMode):
            await stack.enter_async_context(executor)
        offered = {tool.name: tool for tool in executor.tools()}
        call_names = {*offered, *calls.code_functions(offered)}
        backend = await stack.enter_async_context(OpenAiCompatibleBackend(config))
        try:
            async with asyncio.timeout(ATTEMPT_TIMEOUT):
                result = await backend.run(history=[], user_text=task.prompt(world), executor=executor)
        except (ModelServerError, TimeoutError) as exc:
            error = str(exc) or type(exc).__name__
    seconds = time.perf_counter() - started
    exchanges, prompt_tokens, completion_tokens = recorder.take()
    finished = finish_reason(exchanges)
    success = result is not None and answered(result, finished) and task.passes(result.reply, world)
    summary = result.summary if result is not None else None
    return Attempt(
        task=task.name,
        size=task.size,
        mode=mode,
        repetition=repetition,
        success=success,
        failure=None if success else classify(result, error, finished, call_names),
        rounds=result.rounds if result is not None else 0,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        tool_result_bytes=summary.bytes_out if summary is not None else 0,
        repairs=summary.repaired if summary is not None else 0,
        seconds=round(seconds, 1),
        reply=(result.reply if result is not None else error or "")[:2000],
        tool_calls=summary.run_code_calls if summary is not None else 0,
        named_calls=summary.repairs.get("catalog_name", 0) if summary is not None else 0,
        nested_calls=summary.nested_calls if summary is not None else 0,
        exchanges=exchanges,
    )


def finish_reason(exchanges: list[Exchange]) -> str | None:
    """The last model reply's ``finish_reason`` (``length``: cut at the token limit)."""
    choices = exchanges[-1].reply.get("choices") if exchanges else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    reason = choices[0].get("finish_reason")
    return reason if isinstance(reason, str) else None


def progress_line(attempt: Attempt) -> str:
    mark = "ok" if attempt.success else "NO"
    why = "" if attempt.success else f"  {attempt.failure}"
    return (
        f"{mark} {attempt.task:26} {attempt.mode:7} #{attempt.repetition} {attempt.rounds} rounds "
        f"{attempt.prompt_tokens:>6} prompt tokens {attempt.seconds:>6.1f} s{why}"
    )


_CONFIGURED = ("temperature", "max_tokens")


def backend_config(
    url: str, model: str, mode: str, max_rounds: int, sampling: dict[str, Any]
) -> BackendConfig:
    """How an attempt in ``mode`` talks to the model (``sampling``: its seed, and the temperature and
    reply cap when they are not the defaults every user gets)."""
    return BackendConfig(
        base_url=url,
        model=model,
        max_rounds=max_rounds,
        request_timeout=ATTEMPT_TIMEOUT,
        temperature=sampling.get("temperature", DEFAULT_TEMPERATURE),
        max_tokens=sampling.get("max_tokens", DEFAULT_MAX_TOKENS),
        extra_body={
            key: value for key, value in sampling.items() if key not in ("temperature", "max_tokens")
        },
        protocol="text" if mode == "text" else "tools",
    )


def write_report(attempts: list[Attempt], model: str, args: argparse.Namespace) -> str:
    """EVAL.md, the raw results and the chart, from the attempts so far (rewritten after each)."""
    args.out.mkdir(parents=True, exist_ok=True)
    results = [{k: v for k, v in asdict(a).items() if k != "exchanges"} for a in attempts]
    (args.out / "eval_results.json").write_text(
        json.dumps({"model": model, "attempts": results}, indent=1) + "\n"
    )
    report = markdown(attempts, model, args)
    (args.out / "EVAL.md").write_text(report)
    if not chart(attempts, args.out / "eval.png", modes_of(attempts)):
        print("(no chart: matplotlib is not installed; make eval installs it)", file=sys.stderr)
    return report


def recording_name(task: str, mode: str, repetition: int) -> str:
    return f"{task}--{mode}--{repetition}.json"


def save_recording(attempt: Attempt, directory: Path, rounds_limit: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    record = {**{k: v for k, v in asdict(attempt).items() if k != "exchanges"}, "rounds_limit": rounds_limit,
              "exchanges": [asdict(exchange) for exchange in attempt.exchanges]}  # fmt: skip
    name = recording_name(attempt.task, attempt.mode, attempt.repetition)
    (directory / name).write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")


@contextmanager
def model_endpoint(base_url: str | None, model: str | None) -> Iterator[tuple[str, str]]:
    if base_url and model:
        yield base_url, model
        return
    from evals import local_model

    with local_model.running_server() as server:
        yield server.base_url, local_model.MODEL_ALIAS


@dataclass
class Replayed:
    """A recorded attempt run again, the recorded replies answering for the model."""

    attempt: Attempt
    mismatch: str | None
    """The first request the harness now sends differently, with the difference."""
    unasked: int
    """Recorded exchanges the harness never asked for."""

    def matches(self, record: dict[str, Any]) -> bool:
        """Whether the harness today makes the attempt the recording holds."""
        same = (stable(self.attempt.reply), self.attempt.success) == (
            stable(record["reply"]),
            record["success"],
        )
        return self.mismatch is None and self.unasked == 0 and same


def load_recording(path: Path) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(path.read_text())
    record["exchanges"] = [Exchange(**exchange) for exchange in record["exchanges"]]
    return record


@dataclass
class ReplayModel:
    """The model's side of replays: a ``Replayer`` behind the recording proxy, as ``make eval`` ran
    each attempt, started once and loaded with each attempt's exchanges in turn."""

    replayer: Replayer
    recorder: Recorder


@contextmanager
def replay_model() -> Iterator[ReplayModel]:
    replayer = Replayer()
    replayer.start()
    recorder = Recorder(replayer.url)
    recorder.start()
    try:
        yield ReplayModel(replayer, recorder)
    finally:
        recorder.stop()
        replayer.stop()


async def replay(record: dict[str, Any], shared: Services, model: ReplayModel) -> Replayed:
    """Run ``record`` (see ``load_recording``) again through the whole harness in a new world."""
    task = BY_NAME[record["task"]]
    with new_world(shared) as world:
        values = {placeholder: value for value, placeholder in world.placeholders().items()}
        model.replayer.load(record["exchanges"], values)
        first = record["exchanges"][0].request
        sampling = {key: first[key] for key in ("seed", "temperature", "max_tokens") if key in first}
        config = backend_config(
            model.recorder.url, first["model"], record["mode"], record["rounds_limit"], sampling
        )
        attempt = await run_attempt(task, record["mode"], record["repetition"], world, model.recorder, config)
    return Replayed(attempt, model.replayer.mismatch, len(record["exchanges"]) - model.replayer.served)


async def is_stale(task: Task, mode: str, repetition: int, shared: Services, model: ReplayModel) -> bool:
    """Whether the attempt has no recording, or one the harness no longer replays (``--stale``)."""
    path = RECORDINGS / recording_name(task.name, mode, repetition)
    if not path.exists():
        return True
    record = load_recording(path)
    return not (await replay(record, shared, model)).matches(record)


def kept_attempts(path: Path, runs: set[tuple[str, str, int]]) -> list[Attempt]:
    """The attempts of an earlier run's ``eval_results.json`` that are not among ``runs``, the
    ``(task, mode, repetition)`` this run makes (``--update``)."""
    if not path.exists():
        return []
    earlier = [Attempt(**fields) for fields in json.loads(path.read_text())["attempts"]]
    return [a for a in earlier if (a.task, a.mode, a.repetition) not in runs]


def modes_of(attempts: list[Attempt]) -> list[str]:
    """The modes ``attempts`` were made in, in the suite's order."""
    return [mode for mode in MODES if any(a.mode == mode for a in attempts)]


def in_suite_order(attempts: list[Attempt]) -> list[Attempt]:
    """``attempts`` in the order a whole run makes them: by repetition, task, then mode."""
    order = [task.name for task in TASKS]
    return sorted(attempts, key=lambda a: (a.repetition, order.index(a.task), MODES.index(a.mode)))


async def seeded_attempt(
    task: Task,
    mode: str,
    repetition: int,
    args: argparse.Namespace,
    recorder: Recorder,
    model: str,
    shared: Services,
    extra_body: dict[str, Any] | None = None,
) -> Attempt:
    """One attempt in a fresh world over ``shared`` (what a run shares), with ``args``' sampling
    and a fixed seed per repetition: the same sampling parameters again. ``extra_body`` goes into
    every request."""
    sampling = {
        "seed": args.seed + repetition,
        "temperature": args.temperature,
        "max_tokens": args.max_tokens,
        **(extra_body or {}),
    }
    config = backend_config(recorder.url, model, mode, args.max_rounds, sampling)
    with new_world(shared) as world:
        return await run_attempt(task, mode, repetition, world, recorder, config)


async def run_all(args: argparse.Namespace, base_url: str, model: str) -> list[Attempt]:
    tasks = [BY_NAME[name] for name in args.tasks] if args.tasks else list(TASKS)
    attempts: list[Attempt] = []
    recorder = Recorder(base_url, args.api_key)
    recorder.start()
    try:
        with services() as shared, replay_model() as replays:
            runs = [
                (repetition, task, mode)
                for repetition in range(args.repeat)
                for task in tasks
                for mode in args.modes
                if not args.stale or await is_stale(task, mode, repetition, shared, replays)
            ]
            if args.stale:
                print(
                    f"{len(runs)} attempt(s) to run: no recording, or one that no longer replays", flush=True
                )
            made = {(task.name, mode, repetition) for repetition, task, mode in runs}
            kept = kept_attempts(args.out / "eval_results.json", made) if args.update else []
            for repetition, task, mode in runs:
                attempt = await seeded_attempt(task, mode, repetition, args, recorder, model, shared)
                attempts.append(attempt)
                if args.record:
                    save_recording(attempt, RECORDINGS, args.max_rounds)
                write_report(in_suite_order([*kept, *attempts]), model, args)
                print(progress_line(attempt), flush=True)
    finally:
        recorder.stop()
    return in_suite_order([*kept, *attempts])


def summary_rows(attempts: list[Attempt]) -> list[dict[str, Any]]:
    rows = []
    keys = sorted(
        {(a.task, a.size, a.mode) for a in attempts},
        key=lambda k: ([t.name for t in TASKS].index(k[0]), k[2]),
    )
    for task, size, mode in keys:
        group = [a for a in attempts if (a.task, a.mode) == (task, mode)]
        n = len(group)
        rows.append({
            "task": task, "size": size, "mode": mode, "attempts": n,
            "success": sum(a.success for a in group),
            "rounds": sum(a.rounds for a in group) / n,
            "prompt_tokens": sum(a.prompt_tokens for a in group) / n,
            "completion_tokens": sum(a.completion_tokens for a in group) / n,
            "tool_result_bytes": sum(a.tool_result_bytes for a in group) / n,
            "repairs": sum(a.repairs for a in group),
            "seconds": sum(a.seconds for a in group) / n,
        })  # fmt: skip
    return rows


def markdown(attempts: list[Attempt], model: str, args: argparse.Namespace) -> str:
    repetitions = 1 + max((a.repetition for a in attempts), default=0)
    lines = [
        "# Eval: the task suite on a real model",
        "",
        f"Model `{model}`; {repetitions} repetition(s) per task and mode, seeds {args.seed}.., "
        f"temperature {args.temperature}; at most {args.max_rounds} model rounds per attempt. "
        "Written by `make eval` (`python -m evals.run`).",
        "",
        "| task | size | mode | success | rounds | prompt tokens | completion tokens | tool result bytes "
        "| repairs | seconds |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in summary_rows(attempts):
        lines.append(
            f"| {row['task']} | {row['size']} | {row['mode']} | {row['success']}/{row['attempts']} | "
            f"{row['rounds']:.1f} | {row['prompt_tokens']:,.0f} | {row['completion_tokens']:,.0f} | "
            f"{row['tool_result_bytes']:,.0f} | {row['repairs']} | {row['seconds']:.0f} |"
        )
    lines += [
        "",
        "## By mode and size",
        "",
        "Prompt tokens per success: every prompt token of the group's attempts, failed ones "
        "included, over its successes. MCP calls per run_code: the tool calls the snippets made, "
        "over the `run_code` calls that ran (what code mode exists for: one program, many calls). "
        "Tool calls by a function's own name: of the model's tool calls that ran, those that called "
        "a catalog function as if it were a tool, each run as a one-call snippet; in direct mode "
        "every call is one.",
        "",
        "| mode | size | success | prompt tokens per attempt | prompt tokens per success "
        "| MCP calls per run_code | tool calls by a function's own name |",
        "|---|---|---|---|---|---|---|",
    ]
    for mode in modes_of(attempts):
        for size in ("one", "few", "loop", "several", "all"):
            group = [a for a in attempts if a.mode == mode and _in_group(a.size, size)]
            if group:
                lines.append(f"| {mode} | {size} | {' | '.join(group_figures(group, mode))} |")
    failed = [a for a in attempts if not a.success]
    lines += ["", "## Every failed attempt", "",
              "Classified by rule (`evals.run.classify`): the harness's fault (no answer, a call it did "
              "not recognise, the run failed) or the model's (gave up, wrong code, wrong answer).", "",
              "| task | mode | # | class | reply (start) |", "|---|---|---|---|---|"]  # fmt: skip
    for a in failed:
        reply = " ".join(a.reply.split())[:140].replace("|", "\\|")
        lines.append(f"| {a.task} | {a.mode} | {a.repetition} | {a.failure} | {reply} |")
    harness = sum(1 for a in failed if (a.failure or "").startswith("harness"))
    lines += [
        "",
        f"Failed attempts: {len(failed)}; the harness's: {harness}; the model's: {len(failed) - harness}.",
    ]
    return "\n".join(lines) + "\n"


def group_figures(group: list[Attempt], mode: str) -> list[str]:
    """A row of the table by mode and size: success, prompt tokens per attempt and per success, MCP
    calls per ``run_code`` and calls by a function's own name."""
    won = sum(a.success for a in group)
    tokens = sum(a.prompt_tokens for a in group)
    calls = sum(a.tool_calls for a in group)
    direct = mode == "direct"
    return [
        f"{won / len(group):.0%} ({won}/{len(group)})",
        f"{tokens / len(group):,.0f}",
        f"{tokens / won:,.0f}" if won else "–",
        "–" if direct or not calls else f"{sum(a.nested_calls for a in group) / calls:.2f}",
        "–" if direct else f"{sum(a.named_calls for a in group)} of {calls}",
    ]


def _in_group(size: str, group: str) -> bool:
    """Whether a task of ``size`` counts in the table's row ``group``: its own size, ``several``
    (the tasks that need more than one call: ``few`` and ``loop``) or ``all``."""
    return group in (size, "all") or (group == "several" and size != "one")


def chart(attempts: list[Attempt], path: Path, modes: list[str]) -> bool:
    """Success rate and prompt tokens per mode, as a PNG; False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    sizes = ["one", "few", "loop"]
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    width = 0.8 / max(len(modes), 1)
    for index, mode in enumerate(modes):
        rates, tokens = [], []
        for size in sizes:
            group = [a for a in attempts if a.mode == mode and a.size == size]
            rates.append(100 * sum(a.success for a in group) / len(group) if group else 0)
            tokens.append(sum(a.prompt_tokens for a in group) / len(group) if group else 0)
        positions = [i + index * width for i in range(len(sizes))]
        left.bar(positions, rates, width, label=mode)
        right.bar(positions, tokens, width, label=mode)
    for axis, title in ((left, "success (%)"), (right, "prompt tokens per attempt")):
        axis.set_xticks([i + width * (len(modes) - 1) / 2 for i in range(len(sizes))], sizes)
        axis.set_title(title)
        axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)  # the report is drawn again after every attempt
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.run", description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible API root (default: the local model)")
    parser.add_argument("--model", help="the model name at --base-url")
    parser.add_argument("--api-key")
    parser.add_argument("--tasks", nargs="*", choices=sorted(BY_NAME), help="default: every task")
    parser.add_argument("--modes", nargs="*", choices=MODES, default=list(DEFAULT_MODES))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--temperature", type=float, default=DEFAULT_TEMPERATURE, help="the CLI's default")
    parser.add_argument("--max-rounds", type=int, default=6)
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=DEFAULT_MAX_TOKENS,
        help="tokens per model reply (the CLI's default)",
    )
    parser.add_argument(
        "--record", action="store_true", help="keep each attempt's exchanges in evals/recordings"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks")
    parser.add_argument(
        "--update",
        action="store_true",
        help="keep the other attempts of --out's eval_results.json and replace only those this run makes",
    )
    parser.add_argument(
        "--stale",
        action="store_true",
        help="run only the attempts whose recordings no longer replay through the harness, "
        "record them and keep the rest (implies --record and --update)",
    )
    args = parser.parse_args(argv)
    args.record = args.record or args.stale
    args.update = args.update or args.stale
    if bool(args.base_url) != bool(args.model):
        parser.error("--base-url and --model go together")
    with model_endpoint(args.base_url, args.model) as (base_url, model):
        attempts = asyncio.run(run_all(args, base_url, model))
    print(write_report(attempts, model, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
