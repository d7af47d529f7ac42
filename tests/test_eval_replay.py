"""Real-model runs in every test run: each recorded eval attempt (``evals/recordings``, written by
``make eval`` with ``--record``) is run again through the whole harness, the recorded replies
answering the model's side, while the MCP servers, the sandbox and the world are real. A request
the harness now sends differently from the recorded one fails with the difference and the command
that records afresh; otherwise the attempt must end with the recorded reply and verdict.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from evals.recording import RECORDINGS, RERECORD, recorded_programs, stable, timeless
from evals.run import ReplayModel, is_stale, load_recording, replay, replay_model
from evals.tasks import BY_NAME
from evals.world import Services, services

RECORDED_ATTEMPTS = sorted(RECORDINGS.glob("*.json"))
MINIMUM_EXCHANGES = 30

pytestmark = pytest.mark.anyio


def test_enough_real_model_exchanges_are_recorded() -> None:
    exchanges = sum(len(load_recording(path)["exchanges"]) for path in RECORDED_ATTEMPTS)
    assert exchanges >= MINIMUM_EXCHANGES, f"{exchanges} recorded exchanges; record more with {RERECORD}"


def test_the_programs_a_real_model_wrote_are_taken_once_each_in_order() -> None:
    def call(code: str) -> dict[str, Any]:
        arguments = json.dumps({"code": code})
        return {
            "role": "assistant",
            "tool_calls": [{"function": {"name": "run_code", "arguments": arguments}}],
        }

    def record(mode: str, *messages: dict[str, Any]) -> dict[str, Any]:
        return {"mode": mode, "exchanges": [{"request": {"messages": list(messages)}}]}

    code = record(
        "code", {"role": "user", "content": "q"}, call("await f(a=1)"), call("await f(a=1)"), call(" ")
    )
    text = record(
        "text",
        {"role": "assistant", "content": "Here:\n```python\nx = await g()\n```"},
        {"role": "assistant", "content": "No code, just words."},
        {"role": "user", "content": "```python\nnot the model's\n```"},
    )
    direct = record("direct", {"role": "assistant", "content": "```python\nprint(1)\n```"})
    assert recorded_programs([code, text, direct]) == ["await f(a=1)", "x = await g()"]
    committed = [json.loads(path.read_text()) for path in RECORDED_ATTEMPTS]
    assert recorded_programs(committed), "the committed recordings hold programs for the corpus"


def test_a_replayed_request_may_differ_only_in_the_times_of_the_worlds_files() -> None:
    info = "size: 44\ncreated: Sat Dec 05 2026 09:46:07 GMT+0000 (Coordinated Universal Time)\nisFile: true"
    assert timeless(info) == "size: 44\ncreated: {TIME}\nisFile: true"
    assert timeless("the year 2026, at 09:46") == "the year 2026, at 09:46"


@pytest.fixture(scope="module")
def shared_services() -> Iterator[Services]:
    """What the attempts of one eval run share (the web site, the fake kcp and the web MCP
    server), shared by the module's replays too."""
    with services() as served:
        yield served


@pytest.fixture(scope="module")
def model() -> Iterator[ReplayModel]:
    """One replaying model server and recording proxy for the module's replays, as one model
    server answers a whole eval run (starting and stopping the two took 0.4 s a replay)."""
    with replay_model() as started:
        yield started


@pytest.mark.parametrize("path", RECORDED_ATTEMPTS, ids=[path.stem for path in RECORDED_ATTEMPTS])
async def test_a_recorded_attempt_replays_through_the_harness(
    path: Path, shared_services: Services, model: ReplayModel
) -> None:
    record = load_recording(path)
    replayed = await replay(record, shared_services, model)
    assert replayed.mismatch is None, f"{replayed.mismatch}\n\nRecord again with: {RERECORD}"
    assert replayed.unasked == 0, "every recorded exchange was asked for"
    assert (stable(replayed.attempt.reply), replayed.attempt.success) == (
        stable(record["reply"]),
        record["success"],
    )
    assert (replayed.attempt.tool_calls, replayed.attempt.named_calls, replayed.attempt.nested_calls) == (
        record["tool_calls"],
        record["named_calls"],
        record["nested_calls"],
    ), "the calls, those that named a catalog function, and the MCP calls made, counted as when recorded"
    assert replayed.matches(record)


async def test_stale_finds_an_attempt_the_harness_no_longer_makes(
    shared_services: Services, model: ReplayModel
) -> None:
    path = RECORDED_ATTEMPTS[0]
    record = load_recording(path)
    changed = load_recording(path)
    changed["exchanges"][0].request["messages"][-1]["content"] += " (asked differently)"
    missing = load_recording(path)
    missing["exchanges"].append(missing["exchanges"][-1])
    assert (await replay(record, shared_services, model)).matches(record)
    assert "changed since it was recorded" in str((await replay(changed, shared_services, model)).mismatch)
    assert (await replay(missing, shared_services, model)).unasked == 1
    assert (await replay(record, shared_services, model)).matches(record), (
        "a replay after a mismatch starts afresh"
    )
    task = BY_NAME[record["task"]]
    assert not await is_stale(task, record["mode"], record["repetition"], shared_services, model)
    assert await is_stale(task, record["mode"], 99, shared_services, model), "no recording at all"
