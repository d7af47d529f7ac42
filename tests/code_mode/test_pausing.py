"""Snippets that pause at a mutating call for a person's decision and resume from Monty's snapshot,
in another scope with a fresh worker as another serve-mcp instance would (real workers; the tools
are in-memory functions)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from asyncai.approvals.gate import Approval
from asyncai.code_mode import CodeMode
from asyncai.code_mode.engine.finish import ABANDONED_NOTE, ABANDONED_PAUSE, ABANDONED_REASON, NO_ANSWER
from asyncai.code_mode.engine.pausing import PausedSnippet, pack_paused, unpack_paused
from asyncai.state.stores import StateDiscarded, pack, unpack
from asyncai.tools.types import ToolCallOutput

from .conftest import TEST_LIMITS, FakeExecutor

pytestmark = pytest.mark.anyio

GATHERED = """
import asyncio
first = await pods()
deleted, waited = await asyncio.gather(delete_item(name="web"), wait(seconds=0.01, tag="w"))
print("between")
again = await delete_item(name="db")
[len(first["items"]), deleted, waited["tag"], again]
"""


@pytest.fixture
async def asking(fake: FakeExecutor) -> AsyncIterator[CodeMode]:
    async with CodeMode(fake, TEST_LIMITS, mutations="ask") as executor:
        yield executor


def paused(result: ToolCallOutput | PausedSnippet) -> PausedSnippet:
    assert isinstance(result, PausedSnippet), result
    return result


def finished(result: ToolCallOutput | PausedSnippet) -> ToolCallOutput:
    assert isinstance(result, ToolCallOutput), result
    return result


async def test_a_held_call_pauses_the_snippet_after_the_calls_around_it_ran(
    asking: CodeMode, fake: FakeExecutor
) -> None:
    scope = asking.new_scope()
    try:
        first = paused(await scope.run_pausing({"code": GATHERED}))
        assert [(call.tool, call.arguments) for call in first.held] == [("delete-item", {"name": "web"})]
        # the read-only calls ran, the mutating one did not
        assert [span.tool for span in fake.spans] == ["pods", "wait"]
        assert scope.worker is None and scope.paused_as == first.id
        assert [call.tool for call in first.calls] == ["pods", "wait"]
    finally:
        await scope.aclose()


async def test_resumed_elsewhere_allowed_calls_run_and_the_snippet_returns_its_value(
    asking: CodeMode, fake: FakeExecutor
) -> None:
    here, there = asking.new_scope(), asking.new_scope()
    try:
        await here.run_pausing({"code": "kept = 41"})
        first = paused(await here.run_pausing({"code": GATHERED}))
        # another instance: the REPL state and the pause both travel as bytes
        await _move(here, there)
        first = unpack_paused(pack_paused(first))
        second = paused(await there.resume(first, {first.held[0].call_id: Approval(True)}))
        assert [call.arguments for call in second.held] == [{"name": "db"}]
        done = finished(await there.resume(second, {second.held[0].call_id: Approval(True)}))
        assert not done.is_error, done.content
        assert json.loads(done.content) == {
            "output": "between\n",
            "result": [10, "deleted web", "w", "deleted db"],
        }
        assert [span.tool for span in fake.spans] == ["pods", "wait", "delete-item", "delete-item"]
        calls = (done.audit or {})["nested_calls"]
        assert [call["tool"] for call in calls] == ["pods", "wait", "delete-item", "delete-item"]
        later = finished(await there.call_tool("run_code", {"code": "[kept, again]"}))
        assert json.loads(later.content) == [41, "deleted db"]
    finally:
        await here.aclose()
        await there.aclose()


async def test_declined_the_call_raises_permission_error_where_it_was_made(
    asking: CodeMode, fake: FakeExecutor
) -> None:
    scope = asking.new_scope()
    code = (
        "try:\n    await delete_item(name='web')\n    outcome = 'ran'\n"
        "except PermissionError as e:\n    outcome = str(e)\noutcome"
    )
    try:
        first = paused(await scope.run_pausing({"code": code}))
        done = finished(
            await scope.resume(first, {first.held[0].call_id: Approval(False, "the user said no")})
        )
        assert "delete_item() was not run: the user said no" in done.content
        assert fake.spans == []
        assert (done.audit or {})["nested_calls"][0]["refused"] is True
        no_answer = paused(await scope.run_pausing({"code": code}))
        done = finished(await scope.resume(no_answer, {}))
        assert NO_ANSWER in done.content and fake.spans == []
    finally:
        await scope.aclose()


async def test_a_new_snippet_first_finishes_the_paused_one_as_declined(
    asking: CodeMode, fake: FakeExecutor
) -> None:
    scope = asking.new_scope()
    code = (
        "x = 2\ntry:\n    await delete_item(name='web')\nexcept PermissionError as e:\n    why = str(e)\n"
        "await delete_item(name='db')\nx = 3"
    )
    try:
        await scope.run_pausing({"code": "x = 1"})
        first = paused(await scope.run_pausing({"code": code}))
        after = finished(await scope.run_pausing({"code": "[x, why]"}))
        assert after.content.startswith(ABANDONED_NOTE), after.content
        # the held call refused where it was made, a later mutating call too (the snippet stopped there)
        assert json.loads(after.content.removeprefix(ABANDONED_NOTE)) == [
            2,
            f"this call was not run: {ABANDONED_REASON}",
        ]
        stale = finished(await scope.resume(first, {first.held[0].call_id: Approval(True)}))
        assert stale.is_error and stale.content == ABANDONED_PAUSE
        assert fake.spans == []
    finally:
        await scope.aclose()


async def test_allowed_by_policy_nothing_pauses(fake: FakeExecutor) -> None:
    async with CodeMode(fake, TEST_LIMITS, mutations="allow") as executor:
        scope = executor.new_scope()
        try:
            done = finished(await scope.run_pausing({"code": "await delete_item(name='web')"}))
            assert done.content == "deleted web"
        finally:
            await scope.aclose()


def test_a_paused_snippet_that_is_not_one_is_discarded() -> None:
    with pytest.raises(StateDiscarded):
        unpack_paused(b"asyncai-paused\n{not json\n")
    with pytest.raises(StateDiscarded):
        unpack_paused(b"something else")


async def _move(source: object, target: object) -> None:
    """What a save to the state store and a load on another instance do to a scope."""
    from asyncai.code_mode.engine.scope import ReplScope

    assert isinstance(source, ReplScope) and isinstance(target, ReplScope)
    assert source.dump is not None
    from asyncai.state.stores import SavedScope

    saved = unpack(pack(SavedScope(source.dump, None, tuple(source.known.bound), None, source.paused_as)))
    target.dump, target.paused_as = saved.dump, saved.paused_as
    target.wrappers_version = -1


SAME_EITHER_WAY = [
    "import asyncio\nawait asyncio.sleep(0.01)\nimport time\ntime.sleep(0.01)\n'slept'",
    "import asyncio\n[w['tag'] for w in await asyncio.gather(wait(seconds=0.01, tag='a'), wait(seconds=0, tag='b'))]",
    "print('out')\nlen((await pods())['items'])",
    "import os\nos.getenv('HOME')",
    "import numpy",
    "undefined_name",
    "await fail(message='boom')",
    "try:\n    await fail(message='boom')\nexcept RuntimeError as e:\n    r = str(e)\nr",
    "open('/etc/passwd').read()",
    "await pods(namespace=1, extra=2)",
]


@pytest.mark.parametrize("code", SAME_EITHER_WAY)
async def test_a_pausing_run_that_does_not_pause_answers_as_a_plain_run(
    asking: CodeMode, fake: FakeExecutor, code: str
) -> None:
    """Driving a snippet snapshot by snapshot changes nothing but where it may stop."""
    plain, pausing = asking.new_scope(), asking.new_scope()
    try:
        expected = finished(await plain.call_tool("run_code", {"code": code}))
        got = finished(await pausing.run_pausing({"code": code}))
        assert (got.content, got.is_error, got.audit) == (expected.content, expected.is_error, expected.audit)
    finally:
        await plain.aclose()
        await pausing.aclose()
