"""The resumable streams' event store (``serve.events``) without a server: what it keeps within its
bounds (bytes, per-event size, per-stream count, age with an injected clock), what a resume after
an id gets, and a resume that waits for the rest of its stream."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp.server.streamable_http import GET_STREAM_KEY, EventMessage
from mcp_types import INTERNAL_ERROR, JSONRPCError, JSONRPCNotification, JSONRPCResponse

from asyncai.serve.events import EventBuffer, SessionEvents

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def payload_only(**bounds: Any) -> EventBuffer:
    """A buffer counting only the events' JSON (no bookkeeping costs), for exact sums."""
    return EventBuffer(event_cost=0, stream_cost=0, **bounds)


def note(n: int, text: str = "") -> JSONRPCNotification:
    return JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"n": n, "text": text})


def answer(request_id: int | str, text: str = "done") -> JSONRPCResponse:
    return JSONRPCResponse(jsonrpc="2.0", id=request_id, result={"text": text})


async def replay(store: SessionEvents, last_event_id: str) -> tuple[list[EventMessage], str | None]:
    sent: list[EventMessage] = []

    async def send(event: EventMessage) -> None:
        sent.append(event)

    with anyio.fail_after(5):
        stream = await store.replay_events_after(last_event_id, send)
    return sent, stream


def params(events: list[EventMessage]) -> list[Any]:
    """Each note's number, and any other message itself."""
    return [
        (e.message.params or {})["n"] if isinstance(e.message, JSONRPCNotification) else e.message
        for e in events
    ]


async def test_a_resume_gets_what_followed_the_id_up_to_the_response() -> None:
    store = EventBuffer().session()
    priming = await store.store_event("7", None)
    first = await store.store_event("7", note(1))
    second = await store.store_event("7", note(2))
    done = await store.store_event("7", answer(7))
    sent, stream = await replay(store, priming)
    assert params(sent) == [1, 2, answer(7)] and stream is None, "None: the GET ends after the response"
    assert [e.event_id for e in sent] == [first, second, done]
    sent, _ = await replay(store, second)
    assert params(sent) == [answer(7)]
    assert await replay(store, done) == ([], None), "the client has it all"


async def test_sessions_with_the_same_request_ids_do_not_mix() -> None:
    buffer = EventBuffer()
    a, b = buffer.session(), buffer.session()
    primed = await a.store_event("2", None)
    await b.store_event("2", None)
    await b.store_event("2", answer(2, "b's"))
    await a.store_event("2", answer(2, "a's"))
    sent, _ = await replay(a, primed)
    assert [e.message for e in sent] == [answer(2, "a's")]


async def test_an_id_the_store_never_gave_replays_nothing() -> None:
    store = EventBuffer().session()
    await store.store_event("1", None)
    for garbage in ("", "x", "abc:1", ":1", "5"):
        assert await replay(store, garbage) == ([], None)


async def test_a_stream_it_does_not_hold_ends_its_request_with_a_reason() -> None:
    store = EventBuffer().session()
    [lone], stream = await replay(store, "12:4")  # another instance's, or long gone
    assert stream is None and isinstance(lone.message, JSONRPCError)
    assert lone.message.id == 4 and lone.message.error.code == INTERNAL_ERROR
    assert "cannot be sent again" in lone.message.error.message
    [lone], _ = await replay(store, "12:req-a")
    assert isinstance(lone.message, JSONRPCError) and lone.message.id == "req-a"


async def test_the_total_is_bounded_by_bytes_oldest_first() -> None:
    buffer = payload_only(max_bytes=1200)  # three of these notes (377 bytes each)
    a, b = buffer.session(), buffer.session()
    a_primed = await a.store_event("1", None)
    await a.store_event("1", note(1, "x" * 300))
    await a.store_event("1", note(2, "x" * 300))
    b_primed = await b.store_event("1", None)
    await b.store_event("1", note(3, "x" * 300))
    assert buffer.bytes == 3 * 377 and len(buffer) == 5
    await b.store_event("1", note(4, "x" * 300))
    assert buffer.bytes == 3 * 377 and len(buffer) == 4
    sent, _ = await _replay_started(a, a_primed)
    assert params(sent) == [2], "note 1, the oldest, went"
    sent, _ = await _replay_started(b, b_primed)
    assert params(sent) == [3, 4]
    await a.store_event("1", answer(1, "y" * 300))
    sent, _ = await replay(a, a_primed)
    assert params(sent) == [answer(1, "y" * 300)], "what remains"


async def _replay_started(store: SessionEvents, last_event_id: str) -> tuple[list[EventMessage], None]:
    """A resume of a stream still running, cut off once it has sent what is kept."""
    sent: list[EventMessage] = []
    stream = store.streams[last_event_id.partition(":")[2]]

    async def send(event: EventMessage) -> None:
        sent.append(event)

    async with anyio.create_task_group() as tg:
        tg.start_soon(store.replay_events_after, last_event_id, send)
        await anyio.wait_all_tasks_blocked()
        assert stream.tails, "it waits for more"
        tg.cancel_scope.cancel()
    assert not stream.tails
    return sent, None


async def test_a_response_too_big_to_keep_is_replaced_by_an_error_for_a_later_resume() -> None:
    buffer = payload_only(max_bytes=1000, max_event_bytes=500)
    store = buffer.session()
    primed = await store.store_event("3", None)
    await store.store_event("3", note(1))
    kept = buffer.bytes
    done = await store.store_event("3", answer(3, "z" * 600))  # found too big by its strings
    assert buffer.bytes == kept, "not kept"
    sent, stream = await replay(store, primed)
    assert stream is None and params(sent)[0] == 1
    error = sent[1].message
    assert isinstance(error, JSONRPCError) and error.id == 3 and sent[1].event_id == done
    assert "over the 500 B an event may keep" in error.error.message
    primed = await store.store_event("4", None)
    await store.store_event("4", answer(4, "\n" * 250))  # 250 characters, escaped over 500 bytes
    [lone], _ = await replay(store, primed)
    assert (
        isinstance(lone.message, JSONRPCError) and "it is 545 B, over the 500 B" in lone.message.error.message
    )
    assert buffer.bytes == kept


async def test_a_response_dropped_for_the_bound_is_replaced_by_an_error() -> None:
    buffer = payload_only(max_bytes=1000)
    a, b = buffer.session(), buffer.session()
    primed = await a.store_event("1", None)
    await a.store_event("1", note(0))
    await a.store_event("1", answer(1, "a" * 400))
    await b.store_event("1", note(1, "b" * 400))
    assert len(a.streams["1"].events) == 3
    await b.store_event("1", note(2, "b" * 400))
    assert a.streams == {}, "a's events were the oldest; answered and emptied, its stream went"
    [lone], stream = await replay(a, primed)
    assert stream is None and isinstance(lone.message, JSONRPCError) and lone.message.id == 1
    assert "no longer kept" in lone.message.error.message


async def test_many_small_streams_are_bounded_by_what_they_take() -> None:
    buffer = EventBuffer(max_bytes=100_000)
    store = buffer.session()
    for n in range(1000):  # a client sending pings: a priming event and a tiny answer each
        await store.store_event(str(n), None)
        await store.store_event(str(n), JSONRPCResponse(jsonrpc="2.0", id=n, result={}))
    assert buffer.bytes <= 100_000 and len(store.streams) < 100
    assert set(store.streams) == {str(n) for n in range(1000 - len(store.streams), 1000)}, "the newest"


async def test_a_stream_keeps_its_latest_events() -> None:
    store = EventBuffer(max_stream_events=3).session()
    primed = await store.store_event("1", None)
    for n in range(5):
        await store.store_event("1", note(n))
    sent, _ = await _replay_started(store, primed)
    assert params(sent) == [2, 3, 4]


async def test_events_and_answered_streams_go_after_their_time() -> None:
    clock = Clock()
    buffer = EventBuffer(keep_for=60, clock=clock)
    store = buffer.session()
    primed = await store.store_event("1", None)
    await store.store_event("1", note(1))
    clock.now += 59
    await store.store_event("1", note(2))
    sent, _ = await _replay_started(store, primed)
    assert params(sent) == [1, 2]
    clock.now += 1
    sent, _ = await _replay_started(store, primed)
    assert params(sent) == [2], "note 1 is 60 s old"
    await store.store_event("1", answer(1))
    clock.now += 59  # the answer is 59 s old
    sent, _ = await replay(store, primed)
    assert params(sent) == [answer(1)], "note 2 is 60 s old too"
    clock.now += 1
    buffer.prune()
    assert len(buffer) == 0 and store.streams == {}, "answered 60 s ago: the stream went"
    [lone], _ = await replay(store, primed)
    assert isinstance(lone.message, JSONRPCError) and "no longer kept" in lone.message.error.message


async def test_a_request_id_used_again_starts_a_new_stream() -> None:
    store = EventBuffer().session()
    old = await store.store_event("1", None)
    await store.store_event("1", answer(1, "old"))
    new = await store.store_event("1", None)
    await store.store_event("1", answer(1, "new"))
    sent, _ = await replay(store, new)
    assert [e.message for e in sent] == [answer(1, "new")]
    [lone], _ = await replay(store, old)
    assert isinstance(lone.message, JSONRPCError), "the old request's response is gone"


async def test_a_resume_before_the_response_waits_for_it() -> None:
    buffer = EventBuffer(max_event_bytes=100)
    store = buffer.session()
    primed = await store.store_event("5", None)
    await store.store_event("5", note(1))
    sent: list[EventMessage] = []
    caught_up = anyio.Event()
    result: list[str | None] = []

    async def send(event: EventMessage) -> None:
        sent.append(event)
        caught_up.set()

    async def resume() -> None:
        result.append(await store.replay_events_after(primed, send))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(resume)
            await caught_up.wait()
            await store.store_event("5", note(2))
            big = answer(5, "w" * 200)  # too big to keep, but this client is here for it
            await store.store_event("5", big)
    assert params(sent) == [1, 2, big] and result == [None]


async def test_a_waiting_resume_ends_with_its_session() -> None:
    store = EventBuffer().session()
    primed = await store.store_event("5", None)
    result: list[str | None] = []

    async def resume() -> None:
        result.append(await store.replay_events_after(primed, _discard))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(resume)
            await anyio.wait_all_tasks_blocked()
            store.close()
    assert result == [None] and store.streams == {}
    assert await store.store_event("5", note(1))  # late events of a closed session are not kept
    assert len(store.buffer) == 0


async def _discard(event: EventMessage) -> None:
    pass


async def test_the_standalone_stream_is_replayed_and_left_to_the_sdk() -> None:
    store = EventBuffer().session()
    first = await store.store_event(GET_STREAM_KEY, note(1))
    await store.store_event(GET_STREAM_KEY, note(2))
    sent, stream = await replay(store, first)
    assert params(sent) == [2] and stream == GET_STREAM_KEY
