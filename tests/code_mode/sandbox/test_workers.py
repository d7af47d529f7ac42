"""``WorkerRoom`` with fake REPLs: who gets a worker, who is parked for it, and who waits."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from asyncai.code_mode.sandbox.workers import NoWorker, WorkerRoom

pytestmark = pytest.mark.anyio

TIMEOUT = 0.05
"""The checkout timeout where a test expects ``NoWorker``: a deadline, not a wait for something."""


class Scope:
    """A parkable REPL: records parks; ``looked`` is set each time the room checks ``running``;
    ``while_parking`` runs inside ``park`` (what other scopes do meanwhile)."""

    def __init__(self, name: str, *, running: bool = False) -> None:
        self.name = name
        self.last_used = 0
        self.is_running = running
        self.parks = 0
        self.looked = asyncio.Event()
        self.while_parking: Callable[[], None] | None = None

    def __repr__(self) -> str:
        return f"Scope({self.name})"

    @property
    def running(self) -> bool:
        self.looked.set()
        return self.is_running

    async def park(self) -> bool:
        self.parks += 1
        if self.while_parking is not None:
            self.while_parking()
        return not self.is_running

    async def aclose(self) -> None:
        pass


async def take(room: WorkerRoom, scope: Scope) -> None:
    """What a REPL does to get a worker: reserve one, then hold it."""
    await room.enter(scope)
    room.entered(scope)


async def full_room(limit: int, *scopes: Scope, timeout: float = 1.0) -> WorkerRoom:
    room = WorkerRoom(limit, timeout)
    for scope in scopes:
        await take(room, scope)
        room.touch(scope)
    return room


async def test_scopes_enter_while_there_is_room() -> None:
    a, b = Scope("a"), Scope("b")
    room = await full_room(2, a, b)
    assert room.holders == {a, b}
    assert (a.parks, b.parks) == (0, 0)


async def test_a_full_room_parks_the_least_recently_used_idle_scope() -> None:
    a, b, c = Scope("a"), Scope("b"), Scope("c")
    room = await full_room(2, a, b)
    room.touch(a)  # now b is the least recently used
    await take(room, c)
    assert (a.parks, b.parks) == (0, 1)
    assert room.holders == {a, c}


async def test_a_running_scope_is_never_parked() -> None:
    a, b, c = Scope("a", running=True), Scope("b"), Scope("c")
    room = await full_room(2, a, b)  # a is the least recently used, but it runs a snippet
    await take(room, c)
    assert (a.parks, b.parks) == (0, 1)
    assert room.holders == {a, c}


async def test_a_scope_that_starts_running_before_it_is_parked_stays() -> None:
    """``park`` says False when the scope started a snippet meanwhile: it keeps its worker."""
    a, b = Scope("a"), Scope("b")
    room = await full_room(1, a, timeout=TIMEOUT)

    def starts_a_snippet() -> None:
        a.is_running = True

    a.while_parking = starts_a_snippet
    with pytest.raises(NoWorker):
        await room.enter(b)
    assert a.parks == 1 and room.holders == {a}


async def test_when_every_scope_runs_the_next_one_waits_for_a_snippet_to_end() -> None:
    a, b = Scope("a", running=True), Scope("b")
    room = await full_room(1, a)
    a.looked.clear()
    entering = asyncio.create_task(take(room, b))
    await a.looked.wait()  # the room saw a running and went on to wait, with no await in between
    assert not entering.done() and a.parks == 0
    a.looked.clear()
    room.poke()  # a poke with a still running: the room looks again and goes on waiting
    await a.looked.wait()
    assert not entering.done() and a.parks == 0
    a.is_running = False
    room.poke()
    await entering
    assert a.parks == 1 and room.holders == {b}


async def test_a_scope_that_leaves_makes_room_for_a_waiting_one() -> None:
    a, b = Scope("a", running=True), Scope("b")
    room = await full_room(1, a)
    a.looked.clear()
    entering = asyncio.create_task(take(room, b))
    await a.looked.wait()
    room.leave(a)  # closed: it gives its worker back without being parked
    await entering
    assert a.parks == 0 and room.holders == {b}


async def test_no_worker_after_the_checkout_timeout() -> None:
    a = Scope("a", running=True)
    room = await full_room(1, a, timeout=TIMEOUT)
    with pytest.raises(
        NoWorker, match=r"^every sandbox worker \(1\) stayed busy running snippets for 0.05 s$"
    ):
        await room.enter(Scope("b"))
    assert room.holders == {a}


async def test_a_reservation_holds_a_worker_until_it_is_abandoned() -> None:
    room = WorkerRoom(1, TIMEOUT)
    a, b = Scope("a"), Scope("b")
    await room.enter(a)  # reserved: its worker is being checked out
    with pytest.raises(NoWorker):
        await room.enter(b)
    room.abandon()  # the checkout failed
    await take(room, b)
    assert room.holders == {b}


async def test_abandon_lets_a_waiting_scope_in_once_poked() -> None:
    a, b, c = Scope("a", running=True), Scope("b"), Scope("c")
    room = await full_room(2, a)
    await room.enter(b)  # the room is full: a holds a worker, b has one reserved
    a.looked.clear()
    entering = asyncio.create_task(take(room, c))
    await a.looked.wait()
    assert not entering.done()
    room.abandon()
    room.poke()  # what the REPL's call does when it ends, whatever happened
    await entering
    assert room.holders == {a, c} and a.parks == 0


async def test_a_worker_freed_while_a_park_fails_is_not_missed() -> None:
    a, b, c = Scope("a"), Scope("b", running=True), Scope("c")
    room = await full_room(2, b, a, timeout=TIMEOUT)

    def meanwhile() -> None:
        a.is_running = True  # a started a snippet, so it keeps its worker...
        room.leave(b)  # ...and b closed, giving its worker back

    a.while_parking = meanwhile
    await take(room, c)  # b's worker is free: c must get it
    assert room.holders == {a, c}
