"""An aborted snippet's error result says what its nested calls did: which finished, which failed,
which were cut off, and whether a mutating one may have changed something."""

from __future__ import annotations

import dataclasses
import os
import signal

import pytest

from asyncai.code_mode import CodeMode
from tests.code_mode.conftest import TEST_LIMITS, FakeExecutor, run, worker_pid

pytestmark = pytest.mark.anyio

TWO_FINISHED_ONE_IN_FLIGHT = 'await wait(seconds=0, tag="a")\nawait delete_item(name="web")\nawait {third}'


async def test_a_wall_clock_abort_reports_two_finished_calls_and_one_in_flight(fake: FakeExecutor) -> None:
    # Room for the two quick calls on a loaded machine; only hang() meets the wall clock.
    limits = dataclasses.replace(TEST_LIMITS, wall_timeout=3.0, tool_timeout=30.0)
    async with CodeMode(fake, limits) as code_mode:
        output = await run(code_mode, TWO_FINISHED_ONE_IN_FLIGHT.format(third="hang()"))
        after = await run(code_mode, "1 + 1")
    assert output.is_error
    text = output.content
    assert "wall-clock limit" in text
    assert "Nested calls this snippet started before it was stopped (3):" in text
    assert "- finished: wait(seconds=0, tag='a')" in text
    assert "- finished: delete_item(name='web') (mutating: its change was applied)" in text
    assert "- cut off: hang()" in text
    assert "Check what the mutating calls changed before running them again." in text
    assert after.content == "2"


async def test_a_worker_killed_mid_snippet_reports_the_call_it_cut_off(
    code_mode: CodeMode, fake: FakeExecutor
) -> None:
    scope = code_mode.scopes.get("t")
    pid = await worker_pid(scope)

    def kill_on_the_call_after_the_delete() -> None:  # the snippet's own: launches before it are void
        if fake.spans[-1].tool == "wait" and any(span.tool == "delete-item" for span in fake.spans):
            os.kill(pid, signal.SIGKILL)

    fake.on_call = kill_on_the_call_after_the_delete
    output = await run(scope, TWO_FINISHED_ONE_IN_FLIGHT.format(third="wait(seconds=0.5)"))
    assert output.is_error and "REPL state was reset" in output.content
    assert "- finished: delete_item(name='web') (mutating: its change was applied)" in output.content
    assert "- cut off: wait(seconds=0.5)" in output.content


async def test_an_ordinary_exception_gets_no_report(code_mode: CodeMode) -> None:
    output = await run(code_mode, 'await delete_item(name="web")\n1 / 0')
    assert output.is_error and "ZeroDivisionError" in output.content
    assert "Nested calls this snippet started" not in output.content
