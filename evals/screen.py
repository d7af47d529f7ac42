"""``python -m evals.screen``: the model's first step under the harness as it is now, in minutes.

An eval run of a change to what the model sees takes an hour or more. Most changes aimed at the
several-call tasks act on the model's first reply, so that reply can be screened first: each
attempt starts as in ``make eval`` (its world, its servers, this checkout's harness, the same
seed) and stops when the harness asks the model a second time. The request it would have sent
then shows what it read in the first reply: the code it ran, the tools it called, or nothing.

Each first reply gets one kind by the rule in :func:`first_step`, beside the kind of the same
attempt's recorded first reply (``evals/recordings``), so the table compares the change with the
recorded run on the very same prompts. A screening keeps, decides and records nothing: a change
is still kept or reverted by a run and its rule (``benchmarks/EVAL-RULES.md``); a screening only
says whether the run is worth its hour. ``--save`` keeps the replies to read.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from asyncai.backend.config import DEFAULT_MAX_TOKENS, DEFAULT_TEMPERATURE
from evals.recording import RECORDINGS, Exchange, Recorder
from evals.run import MODES, load_recording, model_endpoint, recording_name, seeded_attempt
from evals.tasks import BY_NAME, TASKS, Task
from evals.world import services

KINDS = ("program", "one call", "no function called", "answer", "cut")
"""What a first reply did, as the harness read it:

- ``program``: code that calls two different functions, or one inside a loop, a comprehension or
  ``asyncio.gather`` (direct mode: two tool calls or more in the reply);
- ``one call``: code that calls one function once (direct mode: one tool call);
- ``no function called``: code the harness ran that calls none of the catalog's functions;
- ``answer``: the harness ran nothing, and took the reply as the answer or nudged the model;
- ``cut``: the reply stopped at the token cap."""
SIZES = {"one": ("one",), "few": ("few",), "loop": ("loop",), "several": ("few", "loop")}
_STUB = re.compile(r"async def (\w+)\(")
_REPEATING = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def catalog_names(request: dict[str, Any]) -> set[str]:
    """The functions a first request offers: the tools' names, and every stub in their
    descriptions (``run_code``'s catalog)."""
    names = set()
    for tool in request.get("tools") or ():
        function = tool.get("function") or {}
        names.add(str(function.get("name")))
        names.update(_STUB.findall(str(function.get("description") or "")))
    return names


def _calls_in(code: str, names: set[str]) -> tuple[list[str], bool]:
    """The catalog functions ``code`` calls, and whether one is called in a loop or a gather;
    ``([], False)`` for code that does not parse."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError):
        return [], False
    called: list[str] = []
    repeated = False

    def visit(node: ast.AST, in_loop: bool) -> None:
        nonlocal repeated
        if isinstance(node, ast.Call):
            function = node.func
            if isinstance(function, ast.Name) and function.id in names:
                called.append(function.id)
                repeated = repeated or in_loop
            in_loop = in_loop or (isinstance(function, ast.Attribute) and function.attr == "gather")
        in_loop = in_loop or isinstance(node, _REPEATING)
        for child in ast.iter_child_nodes(node):
            visit(child, in_loop)

    visit(tree, False)
    return called, repeated


def first_step(exchanges: Sequence[Exchange], mode: str) -> str:
    """The kind (see ``KINDS``) of the first reply in ``exchanges``, read from the request that
    followed it: the assistant message the harness made of the reply."""
    first = exchanges[0]
    choices = first.reply.get("choices") or [{}]
    if choices[0].get("finish_reason") == "length":
        return "cut"
    if len(exchanges) < 2:
        return "answer"
    after = exchanges[1].request["messages"][len(first.request["messages"]) :]
    read: dict[str, Any] = next((m for m in after if m.get("role") == "assistant"), {})
    tool_calls = read.get("tool_calls") or []
    if not tool_calls:
        return "answer"
    if mode == "direct":
        return "program" if len(tool_calls) > 1 else "one call"
    names = catalog_names(first.request) - {"run_code"}
    called: list[str] = []
    repeated = False
    for call in tool_calls:
        try:
            arguments = json.loads(call["function"]["arguments"])
        except (KeyError, TypeError, ValueError):
            continue
        code = arguments.get("code") if isinstance(arguments, dict) else None
        found, looped = _calls_in(code if isinstance(code, str) else "", names)
        called += found
        repeated = repeated or looped
    if not called:
        return "no function called"
    return "program" if repeated or len(set(called)) > 1 else "one call"


@dataclass
class Screened:
    task: str
    size: str
    mode: str
    repetition: int
    kind: str
    recorded: str | None
    """The recorded first reply's kind, ``None`` when the attempt has no recording."""
    prompt_tokens: int
    recorded_prompt_tokens: int | None
    reply: str


def _tokens(exchange: Exchange) -> int:
    usage = exchange.reply.get("usage") or {}
    return int(usage.get("prompt_tokens") or 0)


def _content(exchange: Exchange) -> str:
    message = (exchange.reply.get("choices") or [{}])[0].get("message") or {}
    calls = message.get("tool_calls")
    return str(message.get("content") or "") + (f"\n{json.dumps(calls)}" if calls else "")


def _recorded(task: Task, mode: str, repetition: int) -> list[Exchange] | None:
    path = RECORDINGS / recording_name(task.name, mode, repetition)
    if not path.exists():
        return None
    exchanges: list[Exchange] = load_recording(path)["exchanges"]
    return exchanges


def screened(task: Task, mode: str, repetition: int, exchanges: list[Exchange]) -> Screened:
    recorded = _recorded(task, mode, repetition)
    return Screened(
        task=task.name,
        size=task.size,
        mode=mode,
        repetition=repetition,
        kind=first_step(exchanges, mode),
        recorded=first_step(recorded, mode) if recorded else None,
        prompt_tokens=_tokens(exchanges[0]),
        recorded_prompt_tokens=_tokens(recorded[0]) if recorded else None,
        reply=_content(exchanges[0]),
    )


def table(rows: Sequence[Screened]) -> str:
    """Each size and mode: how many first replies of each kind, now and as recorded, and their
    prompt tokens."""
    lines = [
        "| mode | size | first replies | " + " | ".join(KINDS) + " | prompt tokens |",
        "|---|---|---|" + "---|" * len(KINDS) + "---|",
    ]
    for mode in dict.fromkeys(row.mode for row in rows):
        for size in dict.fromkeys(row.size for row in rows):
            group = [row for row in rows if row.mode == mode and row.size == size]
            if not group:
                continue
            now = Counter(row.kind for row in group)
            before = Counter(row.recorded for row in group if row.recorded is not None)
            recorded = [row for row in group if row.recorded_prompt_tokens is not None]
            cells = [f"{now[kind]} ({before[kind]})" for kind in KINDS]
            tokens = f"{sum(row.prompt_tokens for row in group):,}"
            if recorded:
                tokens += f" ({sum(row.recorded_prompt_tokens or 0 for row in recorded):,})"
            lines.append(f"| {mode} | {size} | {len(group)} | " + " | ".join(cells) + f" | {tokens} |")
    return "\n".join(lines) + "\n\nIn brackets: the same attempts' recorded first replies (evals/recordings)."


async def screen(args: argparse.Namespace, base_url: str, model: str) -> list[Screened]:
    sizes = {size for name in args.sizes for size in SIZES[name]}
    tasks = [BY_NAME[name] for name in args.tasks] if args.tasks else [t for t in TASKS if t.size in sizes]
    recorder = Recorder(base_url, args.api_key)
    recorder.stop_after = 1
    recorder.start()
    rows: list[Screened] = []
    try:
        with services() as shared:
            for repetition in range(args.repeat):
                for task in tasks:
                    for mode in args.modes:
                        attempt = await seeded_attempt(
                            task, mode, repetition, args, recorder, model, shared, args.extra_body
                        )
                        row = screened(task, mode, repetition, attempt.exchanges)
                        rows.append(row)
                        print(f"{row.task:26} {row.mode:7} #{row.repetition}  {row.kind:18} "
                              f"(recorded: {row.recorded})", flush=True)  # fmt: skip
    finally:
        recorder.stop()
    return rows


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.screen", description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible API root (default: the local model)")
    parser.add_argument("--model", help="the model name at --base-url")
    parser.add_argument("--api-key")
    parser.add_argument("--tasks", nargs="*", choices=sorted(BY_NAME), help="default: every task of --sizes")
    parser.add_argument("--sizes", nargs="*", choices=sorted(SIZES), default=["several"])
    parser.add_argument("--modes", nargs="*", choices=MODES, default=["code"])
    parser.add_argument("--repeat", type=int, default=2, help="repetitions 0 .. N-1, as make eval's seeds")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--temperature", type=float, default=DEFAULT_TEMPERATURE)
    parser.add_argument("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS)
    parser.add_argument("--max-rounds", type=int, default=6)
    parser.add_argument(
        "--extra-body",
        type=_json_object,
        default={},
        help="JSON merged into every request, e.g. '{\"response_format\": {...}}'",
    )
    parser.add_argument("--save", type=Path, help="write every first reply, with its kinds, as JSON here")
    args = parser.parse_args(argv)
    if bool(args.base_url) != bool(args.model):
        parser.error("--base-url and --model go together")
    with model_endpoint(args.base_url, args.model) as (base_url, model):
        rows = asyncio.run(screen(args, base_url, model))
    if args.save:
        args.save.write_text(json.dumps([asdict(row) for row in rows], indent=1) + "\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
