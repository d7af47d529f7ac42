"""``LiveRuns``: a stateless caller's run that goes on while the client answers a question a
wrapped server asked (the rules, without processes; serve-mcp end to end is in
tests/tools/mcp/test_elicitation_sampling.py)."""

from __future__ import annotations

import asyncio

import mcp.types as mt
import pytest

from asyncai.serve.live import LiveRun, LiveRuns

pytestmark = pytest.mark.anyio
FORM = mt.ElicitRequest(
    params=mt.ElicitRequestFormParams(message="Which?", requested_schema={"type": "object"})
)


def done(text: str) -> mt.CallToolResult:
    return mt.CallToolResult(content=[mt.TextContent(type="text", text=text)])


async def test_a_question_comes_back_as_input_required_and_the_answer_lets_the_run_finish() -> None:
    runs = LiveRuns(ttl=60)

    async def work(live: LiveRun) -> mt.CallToolResult:
        answer = await live.ask(FORM)
        assert isinstance(answer, mt.ElicitResult)
        return done(f"got {answer.action}")

    run = runs.start("me", work)
    asked = await runs.follow(run)
    assert isinstance(asked, mt.InputRequiredResult) and asked.request_state == run.id
    [(key, request)] = (asked.input_requests or {}).items()
    assert request == FORM
    assert runs.get(run.id, "someone else") is None  # only its caller may answer
    followed = runs.get(run.id, "me")
    assert followed is run
    run.answer({key: mt.ElicitResult(action="accept", content={})})
    finished = await runs.follow(run)
    assert isinstance(finished, mt.CallToolResult) and finished.content[0].text == "got accept"  # type: ignore[union-attr]
    assert runs.get(run.id, "me") is None and len(runs) == 0  # collected: gone


async def test_a_follower_that_goes_away_while_nothing_is_asked_stops_the_run() -> None:
    runs = LiveRuns(ttl=60)
    started = asyncio.Event()

    async def work(live: LiveRun) -> mt.CallToolResult:
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    run = runs.start("me", work)
    following = asyncio.ensure_future(runs.follow(run))
    await started.wait()
    following.cancel()
    with pytest.raises(asyncio.CancelledError):
        await following
    with pytest.raises(asyncio.CancelledError):
        await run.task
    assert len(runs) == 0


async def test_a_finished_run_nobody_collects_is_dropped_after_its_ttl() -> None:
    now = [0.0]
    runs = LiveRuns(ttl=10, clock=lambda: now[0])

    async def work(live: LiveRun) -> mt.CallToolResult:
        await live.ask(FORM)
        return done("late")

    run = runs.start("me", work)
    asked = await runs.follow(run)
    assert isinstance(asked, mt.InputRequiredResult)
    run.answer({key: mt.ElicitResult(action="decline") for key in asked.input_requests or {}})
    await run.task  # finished, but the client never came back for the result
    now[0] += 11
    runs.start("me", lambda live: asyncio.sleep(0, done("next")))
    assert runs.get(run.id, "me") is None
