"""The run stage, and a snippet's whole path, without worker processes: ``MemorySandbox`` runs the
snippets in this process (what Monty itself does is tested against real workers elsewhere)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest

from asyncai.code_mode import CodeMode, SandboxConfig
from asyncai.code_mode.engine.contract import LARGE_VALUE_MARK
from asyncai.code_mode.engine.finish import RESTARTED_NOTE
from asyncai.code_mode.engine.scope import ReplScope
from asyncai.code_mode.limits import CodeModeLimits
from asyncai.code_mode.sandbox.memory import MemorySandbox, MemoryWorker
from tests.code_mode.conftest import FakeExecutor

pytestmark = pytest.mark.anyio

LIMITS = CodeModeLimits(code_timeout=2.0, tool_timeout=5.0, wall_timeout=30.0, max_calls=5)
WALL_LIMITS = replace(LIMITS, wall_timeout=0.5)
"""Only the wall-clock test meets the wall clock: on a loaded machine a streamed snippet's own
statements can take half a second."""


@pytest.fixture
def fake() -> FakeExecutor:
    return FakeExecutor()


@pytest.fixture
async def scope(fake: FakeExecutor) -> AsyncIterator[ReplScope]:
    async with CodeMode(fake, LIMITS, sandbox=SandboxConfig(kind="memory")) as code_mode:
        assert isinstance(code_mode.sandbox, MemorySandbox)
        yield code_mode.new_scope()


async def run(scope: ReplScope, code: str, **extra: Any) -> tuple[str, bool]:
    output = await scope.call_tool("run_code", {"code": code, **extra})
    return output.content, output.is_error


def feeds(scope: ReplScope) -> int:
    assert isinstance(scope.worker, MemoryWorker)
    return scope.worker.feeds


async def test_the_variables_probe_rides_on_the_snippets_own_feed(scope: ReplScope) -> None:
    assert await run(scope, "rows = [1, 2]") == ("[1,2]", False)
    before = feeds(scope)
    assert await run(scope, "rows.append(3)\nlen(rows)") == ("3", False)
    assert feeds(scope) == before + 1  # the snippet and its probe: one round trip
    assert scope.context_note() == "[run_code variables still in scope: rows: list[3]]"
    assert await run(scope, "1 + 1") == ("2", False)
    assert feeds(scope) == before + 2  # nothing bound or changed: no probe at all


async def test_nested_calls_are_served_and_audited(scope: ReplScope) -> None:
    output = await scope.call_tool(
        "run_code",
        {"code": "a, b = await asyncio.gather(pods(), wait(seconds=0))\n[len(a['items']), b['tag']]"},
    )
    assert (output.content, output.is_error) == ("[10,null]", False)
    assert output.audit is not None
    assert [call["tool"] for call in output.audit["nested_calls"]] == ["pods", "wait"]


async def test_a_snippet_that_raises_keeps_what_it_bound_before(scope: ReplScope) -> None:
    text, is_error = await run(scope, "kept = 1\n1 / 0\nlost = 2")
    assert is_error and text.rstrip().endswith("ZeroDivisionError: division by zero")
    assert 'File "<python-input-' in text and "line 2" in text
    assert scope.context_note() == "[run_code variables still in scope: kept: int]"


@pytest.fixture
async def wall_scope(fake: FakeExecutor) -> AsyncIterator[ReplScope]:
    async with CodeMode(fake, WALL_LIMITS, sandbox=SandboxConfig(kind="memory")) as code_mode:
        yield code_mode.new_scope()


async def test_the_wall_clock_stops_a_snippet_waiting_on_a_tool_and_resets_the_repl(
    wall_scope: ReplScope,
) -> None:
    scope = wall_scope
    await run(scope, "x = 1")
    text, is_error = await run(scope, "await hang()")
    assert is_error and "wall-clock limit" in text and "variables are gone" in text
    assert "hang" in text  # the report of the call that was cut off
    text, is_error = await run(scope, "x")
    assert is_error and text.rstrip().endswith("NameError: name 'x' is not defined")


async def test_a_lost_dump_restarts_the_repl_and_says_so_once(scope: ReplScope) -> None:
    await run(scope, "x = 1")
    assert await scope.park() and scope.parked
    scope.dump = b"not a dump"
    assert await run(scope, "y = 2\ny") == (f"{RESTARTED_NOTE}\n2", False)
    assert await run(scope, "y") == ("2", False)


async def test_a_parked_repl_comes_back_on_its_next_snippet(scope: ReplScope) -> None:
    await run(scope, "x = [1]")
    assert await scope.park() and scope.worker is None
    assert await run(scope, "x.append(2)\nx") == ("[1,2]", False)


async def test_a_streamed_snippet_runs_its_statements_as_they_arrive(
    scope: ReplScope, fake: FakeExecutor
) -> None:
    called = asyncio.Event()
    fake.on_call = called.set
    streamed = scope.eager()
    streamed.update("a = await pods()\n")
    streamed.update("a = await pods()\nn = len(a['items'])\n")
    streamed.update("a = await pods()\nn = len(a['items'])\nn")
    await called.wait()  # the first statement began once the second had, before the call was whole
    assert streamed.started()
    output = await streamed.finish({"code": "a = await pods()\nn = len(a['items'])\nn"})
    assert (output.content, output.is_error) == ("10", False)
    assert streamed.ran == ["a = await pods()", "n = len(a['items'])"]
    assert output.audit is not None and output.audit["eager_statements"] == 2


async def test_a_streamed_snippet_cut_off_says_what_ran(scope: ReplScope, fake: FakeExecutor) -> None:
    called = asyncio.Event()
    fake.on_call = called.set
    streamed = scope.eager()
    streamed.update("a = await pods()\nb = 2\n")
    await called.wait()
    report = await streamed.abandon()
    assert report is not None and "cut off" in report and "- a = await pods()" in report
    assert await run(scope, "len(a['items'])") == ("10", False)
    text, is_error = await run(scope, "b")  # the statement still arriving never ran
    assert is_error and "NameError" in text


async def test_a_streamed_snippet_whose_early_statement_raised_is_noted_as_the_whole_snippet(
    fake: FakeExecutor,
) -> None:
    """The whole snippet that raised notes every name it binds first, in its order (a feed is
    not transactional); a streamed one that ended at a statement run early must note the same
    (found by ``make fuzz``: ``d`` kept its old place)."""
    first = "d = {'a': 1}\ns = {1, 2}"
    second = "t = (await pods())['missing']\nd = {'a': 1}\nlen(d)"
    notes = []
    for streamed in (False, True):
        async with CodeMode(fake, LIMITS, sandbox=SandboxConfig(kind="memory")) as code_mode:
            scope = code_mode.new_scope()
            await run(scope, first)
            if streamed:
                called = asyncio.Event()
                fake.on_call = called.set
                snippet = scope.eager()
                snippet.update(second)  # its first statement is complete: it runs
                await called.wait()
                output = await snippet.finish({"code": second})
                assert snippet.ran == ["t = (await pods())['missing']"]
            else:
                output = await scope.call_tool("run_code", {"code": second})
            assert output.is_error and "KeyError" in output.content
            notes.append(scope.context_note())
    assert notes[0] == "[run_code variables still in scope: d: dict[1], s: set[2]]"
    assert notes[1] == notes[0]


async def test_a_refused_snippet_feeds_nothing(scope: ReplScope) -> None:
    await run(scope, "x = 1")
    before = feeds(scope)
    text, is_error = await run(scope, "pods = 1")
    assert is_error and "pods" in text and feeds(scope) == before


async def test_imports_are_monty_s_modules_only() -> None:
    worker = await MemorySandbox().checkout()
    assert await worker.feed_run("import json\njson.dumps([1])") == "[1]"
    with pytest.raises(Exception, match="No module named 'subprocess'"):
        await worker.feed_run("import subprocess")


async def test_a_value_over_the_result_limit_stays_in_the_worker(scope: ReplScope) -> None:
    """Only its JSON's length and first characters come back from the feed (``preamble.BOUNDED``);
    a value that fits comes back whole."""
    assert await run(scope, "small = [1, 2]") == ("[1,2]", False)
    worker = scope.worker
    assert isinstance(worker, MemoryWorker)
    returned: list[Any] = []
    feed_run = worker.feed_run

    async def recorded(code: str, **options: Any) -> Any:
        value = await feed_run(code, **options)
        returned.append(value)
        return value

    worker.feed_run = recorded  # type: ignore[method-assign]
    text, is_error = await run(scope, "rows = ['x' * 100] * 300")
    assert not is_error and text.startswith("(the value assigned to rows is 30,901 chars")
    [(value, _rows)] = returned
    assert value == (LARGE_VALUE_MARK, 30_901, json.dumps(["x" * 100] * 300, separators=(",", ":"))[:2_000])
    assert await run(scope, "len(rows)") == ("300", False)
    assert returned[-1] == 300
