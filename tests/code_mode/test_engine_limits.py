"""Code mode's guards: budgets, deadlines, cancellation, scope lifetimes and refused snippets."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from typing import Any

import pytest

from asyncai.code_mode import CodeMode, SandboxConfig
from asyncai.code_mode.engine import finish, plan
from asyncai.tools.functions import FunctionTools, tool
from tests.code_mode.conftest import TEST_LIMITS, FakeExecutor, run
from tests.fakes.logs import captured_log

pytestmark = pytest.mark.anyio


async def test_wall_clock_limit_cancels_in_flight_calls_and_resets(fake: FakeExecutor) -> None:
    limits = dataclasses.replace(TEST_LIMITS, wall_timeout=1.0, tool_timeout=30.0)
    async with CodeMode(fake, limits) as code_mode:
        await run(code_mode, "kept = 1")
        output = await run(code_mode, "await asyncio.gather(hang(), hang())")
        after = await run(code_mode, "kept")
    assert output.is_error and "wall-clock limit of 1.0 s" in output.content and "reset" in output.content
    assert len(fake.spans) == 2 and all(span.ended for span in fake.spans), (
        "in-flight calls were not cancelled"
    )
    assert "NameError" in after.content


async def test_cancelled_run_code_stops_its_tool_calls_and_the_scope_recovers(
    code_mode: CodeMode, fake: FakeExecutor
) -> None:
    scope = code_mode.scopes.get("c")
    started = asyncio.Event()
    fake.on_call = started.set
    # hang(*()) is no literal call, so the call that starts is the snippet's own, not a launch
    task = asyncio.create_task(run(scope, "x = 1\nawait hang(*())"))
    await started.wait()
    with captured_log(verbose=True) as stream:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert fake.spans[0].ended, "the nested tool call kept running after the cancel"
    [cancelled] = [
        json.loads(line) for line in stream.getvalue().splitlines() if "code_mode.cancelled" in line
    ]
    assert "- cut off: hang()" in cancelled["calls"]
    fake.on_call = None
    # The call failed inside the snippet, which ended: its REPL is kept, as IPython keeps it.
    after = await run(scope, "x + 41")
    assert (after.content, after.is_error) == ("42", False)


async def test_a_cancelled_snippet_that_cannot_be_interrupted_is_stopped_and_says_so(
    code_mode: CodeMode,
) -> None:
    scope = code_mode.scopes.get("busy")
    await run(scope, "x = 1")
    task = asyncio.create_task(run(scope, "while True:\n    x = x + 1"))
    await asyncio.sleep(0)  # the snippet starts; cancelled before or while computing, it ends alike
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    after = await run(scope, "40 + 2")  # pure computation: the worker was stopped, the REPL reset
    assert (after.content, after.is_error) == (f"{finish.RESTARTED_NOTE}\n42", False)
    gone = await run(scope, "x")
    assert gone.is_error and "NameError" in gone.content


async def test_suspension_budget_cannot_be_caught_and_counts_refused_calls(fake: FakeExecutor) -> None:
    limits = dataclasses.replace(TEST_LIMITS, max_suspensions=3)
    code = "n = 0\nfor i in range(20):\n    try:\n        await wait(1)\n    except Exception:\n        n += 1\nn"
    # Without the type check, which would stop `wait(1)` before it runs.
    async with CodeMode(fake, limits, sandbox=SandboxConfig(type_check=False)) as code_mode:
        output = await run(code_mode, code)
    assert output.is_error
    assert "suspension limit exceeded" in output.content
    assert fake.spans == []


async def test_print_output_is_capped_and_never_crowds_out_the_result(
    code_mode: CodeMode,
) -> None:
    output = await run(code_mode, "for i in range(200000):\n    print('line', i)\n'the result'")
    assert not output.is_error, output.content[:300]
    data = json.loads(output.content)
    assert data["result"] == "the result"
    assert "print output truncated" in data["output"] and "chars omitted" in data["output"]
    assert len(output.content) <= TEST_LIMITS.max_result_chars


async def test_error_results_respect_the_result_limit(fake: FakeExecutor) -> None:
    limits = dataclasses.replace(TEST_LIMITS, max_result_chars=500)
    async with CodeMode(fake, limits) as code_mode:
        output = await run(code_mode, "raise ValueError('x' * 5000)")
    assert output.is_error and len(output.content) < 700 and "chars omitted" in output.content


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("wait = 1", "`wait` is the name of a tool function"),
        ("fetched = await pods()\npods = fetched", "`pods` is the name of a tool function"),
        (
            "try:\n    1 / 0\nexcept ZeroDivisionError as pods:\n    pass",
            "`pods` is the name of a tool function",
        ),
        ("y = [(pods := 3)]", "`pods` is the name of a tool function"),
        ("def f():\n    global wait\n    wait = 1", "`wait` is the name of a tool function"),
        ("_asyncai_tool = None", "reserved for asyncai"),
        ('delete_item(name="a")\n"done"', "`delete_item(...)` is called without await"),
        ("asyncio.gather(wait(seconds=0))", "`asyncio.gather(...)` is called without await"),
    ],
)
async def test_refused_snippets_run_nothing(
    code_mode: CodeMode, fake: FakeExecutor, code: str, message: str
) -> None:
    output = await run(code_mode, code)
    assert output.is_error and message in output.content and "Nothing was run" in output.content
    assert fake.spans == []


async def test_accepted_patterns_are_not_refused(code_mode: CodeMode, fake: FakeExecutor) -> None:
    code = (
        "coros = [wait(seconds=0, tag=str(i)) for i in range(3)]\n"
        "done = await asyncio.gather(*coros)\n"
        "def helper():\n    items_ = 1\n    return items_\n"
        "json = None\n"
        "[len(done), helper()]"
    )
    output = await run(code_mode, code)
    assert json.loads(output.content) == [3, 1]
    after = await run(code_mode, "(await pods())['items'][0]['metadata']['name']")
    assert after.content == "pod-0", "rebinding json must not break the tool wrappers"


async def test_a_scope_running_a_snippet_is_not_parked_and_idle_ones_are(fake: FakeExecutor) -> None:
    sandbox = SandboxConfig(max_workers=2, checkout_timeout=10.0)
    started, release = asyncio.Event(), asyncio.Event()

    @tool(read_only=True)
    async def held() -> str:
        """Wait until the test releases it."""
        started.set()
        await release.wait()
        return "released"

    # Not speculated: held() must start from the snippet, once busy holds its worker (a read-only
    # call with literal arguments would start while the worker is still being readied).
    tools = [fake, FunctionTools([held])]
    async with CodeMode(tools, TEST_LIMITS, sandbox=sandbox, speculate=False) as code_mode:
        busy = code_mode.scopes.get("busy")
        running = asyncio.create_task(run(busy, "mine = 'busy'\nawait held()\nmine"))
        await started.wait()
        for number in range(4):  # they share the one other worker, parking each other
            assert (await run(code_mode.scopes.get(f"t{number}"), f"x = {number}\nx")).content == str(number)
            assert busy in code_mode._setup.room.holders and not busy.parked
        release.set()  # the busy snippet ends only now, however slow the machine
        assert (await running).content == "busy"
        assert code_mode.scopes.get("t0").parked
        assert (await run(code_mode.scopes.get("t0"), "x")).content == "0"


async def test_busy_pool_gives_an_error_instead_of_waiting_forever(fake: FakeExecutor) -> None:
    sandbox = SandboxConfig(max_workers=1, checkout_timeout=0.5)
    async with CodeMode(fake, TEST_LIMITS, sandbox=sandbox) as code_mode:
        started = asyncio.Event()
        fake.on_call = started.set
        running = asyncio.create_task(run(code_mode.scopes.get("a"), "await wait(seconds=1.5)"))
        await started.wait()
        output = await run(code_mode.scopes.get("b"), "1")
        await running
    assert output.is_error and output.content.startswith("error: could not start the sandbox")
    assert "every sandbox worker (1) stayed busy running snippets for 0.5 s" in output.content


async def test_more_concurrent_threads_than_workers_all_get_one(fake: FakeExecutor) -> None:
    """Runs waiting for a worker get one as soon as a snippet ends: the idle REPL is parked for
    them (64 --jsonl threads once timed out waiting)."""
    sandbox = SandboxConfig(max_workers=9, checkout_timeout=10.0)
    async with CodeMode(fake, TEST_LIMITS, sandbox=sandbox) as code_mode:

        async def thread(number: int) -> str:
            scope = code_mode.scopes.get(f"t{number}")
            with scope.hold():
                return (await run(scope, f"{number} * 2")).content

        answers = await asyncio.gather(*(thread(number) for number in range(12)))
        assert answers == [str(number * 2) for number in range(12)]
        assert len(code_mode._setup.room.holders) <= 9


async def test_source_cpython_cannot_parse_is_left_to_monty(code_mode: CodeMode) -> None:
    output = await run(code_mode, "x = " + "-" * 100_000 + "1")  # CPython's parser gives up on this
    assert output.content  # an answer from Monty, not an exception from the host


async def test_a_long_lived_repl_stops_type_checking(
    fake: FakeExecutor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checker re-reads the REPL's history on each feed; after TYPE_CHECKED_SNIPPETS snippets
    a scope runs them unchecked (the host still validates every call)."""
    monkeypatch.setattr(plan, "TYPE_CHECKED_SNIPPETS", 2)
    async with CodeMode(fake, TEST_LIMITS) as code_mode:
        scope = code_mode.scopes.get("long")
        first = await run(scope, "await wait(tag='x')")
        await run(scope, "1")  # names no tool function: not checked, not counted
        await run(scope, "await wait(seconds=0)")  # a call the check has nothing to say of: not counted
        await run(scope, "w = wait\nawait w(seconds=0)")  # a function as a value: checked, counted
        fourth = await run(scope, "await wait(tag='x')")
    assert "the type check found mistakes" in first.content
    assert "the type check" not in fourth.content
    assert "missing required keyword argument 'seconds'" in fourth.content


async def test_a_snippet_cancelled_while_it_gets_a_worker_leaks_nothing(fake: FakeExecutor) -> None:
    async with CodeMode(fake, TEST_LIMITS, sandbox=SandboxConfig(max_workers=1)) as code_mode:
        room = code_mode._setup.room
        checking_out = asyncio.Event()
        real_checkout = code_mode.sandbox.checkout

        async def stuck_checkout(stubs: str | None = None) -> Any:
            checking_out.set()
            await asyncio.Event().wait()  # until cancelled

        code_mode.sandbox.checkout = stuck_checkout  # type: ignore[method-assign,assignment]
        task = asyncio.create_task(run(code_mode.scopes.get("a"), "1"))
        await checking_out.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert room._reserved == 0 and not room.holders
        code_mode.sandbox.checkout = real_checkout  # type: ignore[method-assign]
        assert (await run(code_mode.scopes.get("b"), "2")).content == "2"


async def test_a_huge_snippet_keeps_to_its_wall_clock_and_never_holds_the_event_loop(
    fake: FakeExecutor,
) -> None:
    """2 MB, 300,000 lines: its scan runs off the event loop and inside the wall clock, so another
    REPL keeps being served meanwhile. (On the loop, the scan alone held it for seconds.)"""
    huge = "x = 1\n" * 300_000 + "x"
    limits = dataclasses.replace(TEST_LIMITS, wall_timeout=2.0, max_memory=1024 * 2**20)
    stalls: list[float] = []

    async def ticker() -> None:
        loop = asyncio.get_running_loop()
        while True:
            before = loop.time()
            await asyncio.sleep(0.01)
            stalls.append(loop.time() - before - 0.01)

    async with CodeMode(fake, limits) as code_mode:
        other = code_mode.scopes.get("other")
        await run(other, "1")  # its worker is up before the huge snippet starts
        tick = asyncio.create_task(ticker())
        started = time.perf_counter()
        big = asyncio.create_task(run(code_mode.scopes.get("huge"), huge))
        answers = [await run(other, f"{n} * 2") for n in range(3)]
        output = await big
        elapsed = time.perf_counter() - started
        tick.cancel()
    assert [a.content for a in answers] == ["0", "2", "4"]
    assert elapsed < limits.wall_timeout + 3.0, (
        f"took {elapsed:.1f} s against a {limits.wall_timeout} s wall clock"
    )
    assert output.content == "1" or "wall-clock limit" in output.content, output.content[:300]
    assert max(stalls) < 1.0, f"the event loop stalled for {max(stalls):.2f} s"
