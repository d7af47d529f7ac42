"""``WallClock``: the deadline, its pauses, and ``expire_within``. The times here are the deadlines
under test; each test measures how long its block ran on the loop's clock."""

from __future__ import annotations

import asyncio

import pytest

from asyncai.code_mode.engine.clock import WallClock

pytestmark = pytest.mark.anyio

GUARD = 0.5
"""Far beyond every deadline here: a block still running then shows a deadline that did not fire."""


def now() -> float:
    return asyncio.get_running_loop().time()


async def forever() -> None:
    await asyncio.Event().wait()


async def run_until_expired(clock: WallClock) -> float:
    """How long ``clock``'s block ran before its deadline ended it (``GUARD`` at most)."""
    started = now()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(GUARD), clock:
            await forever()
    return now() - started


async def test_a_block_expires_after_its_seconds() -> None:
    assert 0.05 <= await run_until_expired(WallClock(0.05)) < GUARD


async def test_the_limit_counts_from_entering_not_from_making_the_clock() -> None:
    clock = WallClock(0.05)
    await asyncio.sleep(0.05)  # a clock made, then entered later: none of its limit is spent yet
    assert 0.05 <= await run_until_expired(clock) < GUARD


async def test_a_pause_longer_than_the_limit_does_not_count() -> None:
    finished = False
    async with WallClock(0.05) as clock:
        async with clock.paused():
            await asyncio.sleep(0.1)  # a person deciding, for twice the limit
        finished = True
    assert finished


async def test_the_time_before_a_pause_still_counts_after_it() -> None:
    clock = WallClock(0.1)
    started = now()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(GUARD), clock:
            await asyncio.sleep(0.06)
            async with clock.paused():
                await asyncio.sleep(0.1)
            resumed = now()
            await forever()
    assert now() - resumed < 0.08  # about the 0.04 s left when the pause began, not a fresh 0.1 s
    assert now() - started >= 0.19  # the limit and the pause


async def test_expire_within_shortens_the_deadline() -> None:
    clock = WallClock(10)
    started = now()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(GUARD), clock:
            clock.expire_within(0.05)
            await forever()
    assert 0.05 <= now() - started < GUARD


async def test_expire_within_never_lengthens_the_deadline() -> None:
    clock = WallClock(0.05)
    started = now()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(GUARD), clock:
            clock.expire_within(5)
            await forever()
    assert now() - started < GUARD


async def test_expire_within_during_a_pause_still_ends_the_block_soon() -> None:
    clock = WallClock(10)
    started = now()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.3), clock:
            async with clock.paused():
                clock.expire_within(0.05)
                await asyncio.sleep(0.01)  # a person deciding, briefly
            await forever()
    assert now() - started < 0.2
