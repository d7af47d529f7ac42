"""What running a snippet while the model writes it saves (issue 25): a turn's wall time with eager
execution against without, the model streaming at a fixed rate.

    .venv/bin/python benchmarks/bench_eager.py [--runs N] [--no-save]

The scripted model (``tests/fakes/openai_server.py``) streams one ``run_code`` call at 30 tokens
per second (4 characters a token, a chunk every 1/30 s) and then answers with text. The snippet
makes three dependent calls of a read-only tool that takes one second each, with a line of
filtering after each, as a model writes them. Measured: the whole
``OpenAiCompatibleBackend.run`` (both model requests and the snippet), eager and ``--no-eager``
alternating; the streaming time is the model's own, from the request to its last chunk. The target
is the streaming time plus the last call's second, plus 10 %.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from report import Row, Stats, arguments, save_section, seconds

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes.openai_server import ScriptedOpenAI, call, text_reply, tool_reply

from asyncai.backend.config import BackendConfig
from asyncai.backend.openai import OpenAiCompatibleBackend
from asyncai.code_mode import CodeMode
from asyncai.tools.functions import FunctionTools, tool

TOKENS_PER_SECOND = 30
CHARS_PER_TOKEN = 4
CALL_SECONDS = 1.0
SNIPPET = f"""# which pods the app runs, and which of them are not running
a = await slow(seconds={CALL_SECONDS}, tag='a')
kinds = sorted(str(x) for x in [a['tag'], 'first', 'second', 'third'] if x)
# what the first answer says decides the next question
b = await slow(seconds={CALL_SECONDS}, tag=a['tag'] + 'b')
counts = {{k: len(k) for k in [b['tag'], 'alpha', 'beta', 'gamma'] if k}}
# and the last one depends on both
c = await slow(seconds={CALL_SECONDS}, tag=b['tag'] + 'c')
[a['tag'], b['tag'], c['tag'], len(kinds), len(counts)]"""
BRANCHES = f"""# which pods the app runs, and which of them are not running
a = await slow(seconds={CALL_SECONDS}, tag='a')
kinds = sorted(str(x) for x in [a['tag'], 'first', 'second', 'third'] if x)
if a['tag'] == 'a':
    # only when the first answer says so: the second question
    b = await slow(seconds={CALL_SECONDS}, tag='ab')
    counts = {{k: len(k) for k in [b['tag'], 'alpha', 'beta', 'gamma'] if k}}
    if b['tag'] == 'ab':
        # and the last one, two branches deep
        c = await slow(seconds={CALL_SECONDS}, tag='abc')
        kinds.append(c['tag'])
[a['tag'], b['tag'], c['tag'], len(kinds), len(counts)]"""
EXPECTED = {SNIPPET: ["a", "ab", "abc", 4, 4], BRANCHES: ["a", "ab", "abc", 5, 4]}


@tool(read_only=True)
async def slow(seconds: float, tag: str) -> dict[str, Any]:
    """Wait ``seconds``, then answer ``tag``."""
    await asyncio.sleep(seconds)
    return {"tag": tag}


def reply(code: str) -> dict[str, Any]:
    return tool_reply(
        call("run_code", json.dumps({"code": code})),
        arg_chunk=CHARS_PER_TOKEN,
        chunk_delay=1 / TOKENS_PER_SECOND,
    )


async def turn(code_mode: CodeMode, eager: bool, code: str = SNIPPET) -> tuple[float, float]:
    """One turn's wall time, and how long the model took to stream its call."""
    with ScriptedOpenAI([reply(code), text_reply("abc")]) as server:
        config = BackendConfig(base_url=server.base_url, model="m", stream=True, eager=eager)
        async with OpenAiCompatibleBackend(config) as backend, code_mode.scopes.use(f"t{time.time()}") as use:
            started = time.perf_counter()
            result = await backend.run(history=[], user_text="go", executor=use.scope)
            took = time.perf_counter() - started
            assert json.loads(result.messages[-2].content or "") == EXPECTED[code], result.messages[-2]
            return took, server.stream_ended[0] - started


async def measure(runs: int) -> list[Row]:
    eager: list[float] = []
    plain: list[float] = []
    streaming: list[float] = []
    branched: dict[str, list[float]] = {"speculating": [], "eager only": [], "plain": [], "streaming": []}
    async with (
        CodeMode(FunctionTools([slow])) as code_mode,
        CodeMode(FunctionTools([slow]), speculate=False) as no_speculation,
    ):
        await turn(code_mode, True)  # warm-up: the worker pool, the model server's first request
        await turn(no_speculation, True)
        for _ in range(runs):
            took, streamed = await turn(code_mode, True)
            eager.append(took)
            streaming.append(streamed)
            plain.append((await turn(code_mode, False))[0])
            took, streamed = await turn(code_mode, True, BRANCHES)
            branched["speculating"].append(took)
            branched["streaming"].append(streamed)
            branched["eager only"].append((await turn(no_speculation, True, BRANCHES))[0])
            branched["plain"].append((await turn(code_mode, False, BRANCHES))[0])
    stream = Stats.of(streaming)
    target = stream.median + CALL_SECONDS
    branch_stream = Stats.of(branched["streaming"]).median
    eager_only = Stats.of(branched["eager only"]).median
    return [
        Row(
            "eager execution, calls inside branches",
            f"3 dependent literal read-only calls of {CALL_SECONDS:g} s in nested `if`s, speculation on",
            Stats.of(branched["speculating"]),
            "`--no-eager`",
            Stats.of(branched["plain"]),
            target=f"≤ streaming + last call + 10 % = {seconds((branch_stream + CALL_SECONDS) * 1.1)}",
            note=(
                f"streaming took {seconds(branch_stream)}; eager without speculation "
                f"(`--no-speculate`): {seconds(eager_only)}"
            ),
            values={
                "streaming_seconds": branch_stream,
                "eager_without_speculation_seconds": eager_only,
                "target_seconds": (branch_stream + CALL_SECONDS) * 1.1,
            },
        ),
        Row(
            "eager execution",
            f"3 dependent read-only calls of {CALL_SECONDS:g} s, streamed at {TOKENS_PER_SECOND} tokens/s",
            Stats.of(eager),
            "`--no-eager`",
            Stats.of(plain),
            target=f"≤ streaming + last call + 10 % = {seconds(target * 1.1)}",
            note=f"streaming took {seconds(stream.median)}; streaming + last call {seconds(target)}",
            values={"streaming_seconds": stream.median, "target_seconds": target * 1.1},
        ),
    ]


def main() -> None:
    args = arguments(3).parse_args()
    rows = asyncio.run(measure(args.runs))
    notes = (
        "The whole agent turn (`OpenAiCompatibleBackend.run`, streaming on) against the scripted model, "
        f"which streams the `run_code` call {CHARS_PER_TOKEN} characters at a time, "
        f"{TOKENS_PER_SECOND} times a second, then answers. The snippet:\n\n```python\n{SNIPPET}\n```\n\n"
        "With eager execution each statement runs as soon as the next line begins, so the first two "
        "calls overlap the rest of the stream; the last statement waits for the end (its value is the "
        "snippet's). Without, the three calls start after the stream ends. The tool is an "
        "in-memory read-only function (the MCP transport would add about a millisecond per call).\n\n"
        "The second row puts the calls inside nested `if`s, whose statement is complete only when the "
        "next top-level statement begins (here: the last line). Their arguments are literals, so with "
        "speculation each call starts as soon as its line has arrived and the snippet takes its result "
        f"when it gets there:\n\n```python\n{BRANCHES}\n```"
    )
    save_section(
        "eager",
        "Snippets that run while the model writes them (issue 25)",
        rows,
        notes,
        save=not args.no_save,
    )


if __name__ == "__main__":
    main()
