"""Resumable SSE streams for ``serve-mcp --http`` (SEP-1699): the ``mcp`` SDK's ``EventStore``, in
memory and bounded.

With a store the SDK opens each POST's SSE stream with a priming event (an id, no data, the
``retry`` field) and gives every event an id; a client whose stream was cut sends a GET with
``Last-Event-ID`` and gets what it missed. The SDK names a stream by its request id (the
standalone GET stream: ``GET_STREAM_KEY``), which every session's client picks for itself, so each
session gets a store of its own (``SessionEvents``), all of them sharing one bound
(``EventBuffer``):

- at most ``KEEP_BYTES`` in all (the events' JSON, and ``EVENT_COST`` and ``STREAM_COST`` for
  the bookkeeping), the oldest events dropped first; an event over ``MAX_EVENT_BYTES`` is never
  kept (it still goes out live);
- at most ``MAX_STREAM_EVENTS`` events a stream, and none older than ``KEEP_FOR`` seconds; a
  stream answered (its response stored) is gone ``KEEP_FOR`` seconds later or once none of its
  events is left, and a session's streams all go when the session ends.

An event id is ``SEQ:STREAM``, so a resume finds its stream even when the event it names was
dropped, and gets what remains after it. A response that was not kept (too big, or dropped) is
replaced, for a client that missed it, by a JSON-RPC error saying so, as is the whole rest of a
stream that is gone: the request ends with a reason instead of the client polling for a response
that will never come.

A resume of a request's stream is served here to its end: the events kept after the id, then each
new one as it is stored, until the response; then the GET ends. (The SDK would otherwise tail the
request itself, missing what is stored while it sends the resumed stream's priming event, and never
end the GET.) The standalone stream is the SDK's to tail.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.server.streamable_http import (
    GET_STREAM_KEY,
    EventCallback,
    EventId,
    EventMessage,
    EventStore,
    StreamId,
)
from mcp_types import (
    INTERNAL_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCResponse,
    RequestId,
    jsonrpc_message_adapter,
)
from pydantic import BaseModel

from asyncai.humanize import data_size
from asyncai.log import log_event

RETRY_MS = 1000
"""The ``retry`` a cut stream's client waits before resuming: the SDK client's own default, soon
enough for a run still going and no busier than that."""
KEEP_BYTES = 64 * 1024 * 1024
"""All sessions' kept events together (run_code results reach ~50 MB)."""
MAX_EVENT_BYTES = KEEP_BYTES // 4
"""The largest event kept: one huge result must not push out everyone else's."""
KEEP_FOR = 300.0
"""Seconds an event is kept, and an answered stream after its response: a client cut off longer
than that (a laptop asleep) sends its request again."""
MAX_STREAM_EVENTS = 1000
"""Events kept per stream (a chatty request's notifications), the oldest dropped first."""
EVENT_COST = 256
STREAM_COST = 1280
"""What an event and a stream take besides the event's JSON, counted in the bound so that many
small ones are bounded too (tracemalloc: about 200 B an event, 1.1 KB a stream)."""
MAX_BACKLOG = 1000
"""Events a resumed stream may fall behind by before it is ended (its client resumes again)."""
DROPPED = "it was dropped to keep the server's memory bounded"
"""Why a response kept at first is not any more."""


@dataclass(eq=False, slots=True)
class _Event:
    seq: int
    stream: _Stream
    payload: bytes
    """The message's JSON; empty for a priming event."""
    at: float
    cost: int


@dataclass(eq=False, slots=True)
class _Response:
    seq: int
    id: RequestId
    lost: str | None
    """Why it is not kept (then a client that missed it gets an error saying so), or None."""


@dataclass(eq=False, slots=True)
class _Tail:
    """A resumed stream waiting for more: ``store`` hands it each new event."""

    pending: deque[tuple[int, JSONRPCMessage | None]] = field(default_factory=deque)
    wake: anyio.Event = field(default_factory=anyio.Event)
    ended: bool = False

    def push(self, seq: int, message: JSONRPCMessage | None) -> None:
        if self.ended:
            return
        self.pending.append((seq, message))
        if len(self.pending) > MAX_BACKLOG:
            self.end()
        self.wake.set()

    def end(self) -> None:
        self.ended = True
        self.wake.set()


@dataclass(eq=False, slots=True)
class _Stream:
    owner: SessionEvents
    key: StreamId
    start: int
    """The seq it began at: an id before it names an earlier request with the same id."""
    events: deque[_Event] = field(default_factory=deque)
    response: _Response | None = None
    done_at: float | None = None
    tails: set[_Tail] = field(default_factory=set)
    gone: bool = False


class EventBuffer:
    """Every session's kept events, oldest first, within the bounds (see the module)."""

    def __init__(
        self,
        *,
        max_bytes: int = KEEP_BYTES,
        max_event_bytes: int = MAX_EVENT_BYTES,
        keep_for: float = KEEP_FOR,
        max_stream_events: int = MAX_STREAM_EVENTS,
        event_cost: int = EVENT_COST,
        stream_cost: int = STREAM_COST,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_bytes = max_bytes
        self.max_event_bytes = min(max_event_bytes, max_bytes)
        self.keep_for = keep_for
        self.max_stream_events = max_stream_events
        self.event_cost = event_cost
        self.stream_cost = stream_cost
        self.clock = clock
        self.bytes = 0
        """What is kept: the events' JSON and the events' and streams' costs."""
        self._events: OrderedDict[int, _Event] = OrderedDict()
        self._answered: dict[_Stream, None] = {}
        """Streams with their response stored, in the order they got it."""
        self._seq = itertools.count(1)

    def session(self) -> SessionEvents:
        return SessionEvents(self)

    def __len__(self) -> int:
        return len(self._events)

    def store(self, owner: SessionEvents, key: StreamId, message: JSONRPCMessage | None) -> EventId:
        now = self.clock()
        self.prune(now)
        seq = next(self._seq)
        event_id = f"{seq}:{key}"
        if owner.closed:
            return event_id
        stream = owner.streams.get(key)
        if stream is None or (message is None and stream.done_at is not None):
            if stream is not None:  # the request id again, after its earlier request was answered
                self._drop_stream(stream)
            stream = owner.streams[key] = _Stream(owner, key, seq)
            self.bytes += self.stream_cost
        for tail in stream.tails:
            tail.push(seq, message)
        payload, lost = self._encode(message)
        if payload is not None:
            event = _Event(seq, stream, payload, now, len(payload) + self.event_cost)
            self._events[seq] = event
            stream.events.append(event)
            self.bytes += event.cost
            while len(stream.events) > self.max_stream_events:
                self._drop(stream.events[0])
        if isinstance(message, JSONRPCResponse | JSONRPCError) and key != GET_STREAM_KEY:
            stream.response = _Response(seq, message.id if message.id is not None else key, lost)
            stream.done_at = now
            self._answered.pop(stream, None)
            self._answered[stream] = None
        while self.bytes > self.max_bytes and self._events:  # (streams still running stay)
            self._drop(next(iter(self._events.values())))
        return event_id

    def _encode(self, message: JSONRPCMessage | None) -> tuple[bytes | None, str | None]:
        """The JSON to keep, or None and why not."""
        if message is None:
            return b"", None
        limit = data_size(self.max_event_bytes)
        try:  # the JSON is at least as long as the strings in it: one far too big is not encoded
            text = _text_length(message)
        except RecursionError:
            text = 0
        if text > self.max_event_bytes:
            return None, f"it is over the {limit} an event may keep"
        payload = jsonrpc_message_adapter.dump_json(message, by_alias=True, exclude_unset=True)
        if len(payload) > self.max_event_bytes:
            return None, f"it is {data_size(len(payload))}, over the {limit} an event may keep"
        return payload, None

    def prune(self, now: float | None = None) -> None:
        """Drop what is past ``keep_for``: old events, and streams answered that long ago."""
        deadline = (self.clock() if now is None else now) - self.keep_for
        while self._answered:
            stream = next(iter(self._answered))
            assert stream.done_at is not None
            if stream.done_at > deadline:
                break
            self._drop_stream(stream)
        while self._events:
            event = next(iter(self._events.values()))
            if event.at > deadline:
                break
            self._drop(event)

    def _drop(self, event: _Event) -> None:
        """Forget one event, its stream's oldest."""
        del self._events[event.seq]
        stream = event.stream
        if stream.events and stream.events[0] is event:
            stream.events.popleft()
        else:
            stream.events.remove(event)
        self.bytes -= event.cost
        if stream.response is not None and stream.response.seq == event.seq:
            stream.response.lost = DROPPED
        if not stream.events and stream.response is not None:
            self._drop_stream(stream)  # answered, and nothing of it left to send

    def _drop_stream(self, stream: _Stream) -> None:
        if stream.gone:
            return
        stream.gone = True
        self.bytes -= self.stream_cost
        for event in list(stream.events):
            self._drop(event)
        self._answered.pop(stream, None)
        if stream.owner.streams.get(stream.key) is stream:
            del stream.owner.streams[stream.key]
        for tail in stream.tails:
            tail.end()

    def close(self, owner: SessionEvents) -> None:
        owner.closed = True
        for stream in list(owner.streams.values()):
            self._drop_stream(stream)


class SessionEvents(EventStore):
    """One session's streams (the SDK's ``EventStore`` for one transport) in the shared buffer."""

    def __init__(self, buffer: EventBuffer) -> None:
        self.buffer = buffer
        self.streams: dict[StreamId, _Stream] = {}
        self.closed = False

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        return self.buffer.store(self, stream_id, message)

    def close(self) -> None:
        """The session ended: its events go, and its resumed streams end."""
        self.buffer.close(self)

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        """Send what followed ``last_event_id``. A request's stream is sent to its end here (None
        back: the SDK then ends the GET); the standalone stream's key goes back for the SDK to tail."""
        self.buffer.prune()
        seq_text, _, key = last_event_id.partition(":")
        if not seq_text.isdigit() or not key:
            return None  # not an id this store gave
        after = int(seq_text)
        stream = self.streams.get(key)
        if key == GET_STREAM_KEY:
            for seq, payload in _after(stream.events if stream else (), after):
                await send_callback(EventMessage(_decode(payload), f"{seq}:{key}"))
            return key
        if stream is None or after < stream.start:
            reason = "it is no longer kept (for a while, within a memory bound), or never was on this server"
            await send_callback(EventMessage(_lost(_request_id(key), reason)))
            return None
        tail = _Tail()
        stream.tails.add(tail)  # before the backlog is taken: nothing stored from now on is missed
        try:
            response = stream.response
            for seq, payload in _after(stream.events, after):
                if response is not None and response.seq < seq:
                    break  # the response was not kept: its stand-in goes here
                await send_callback(EventMessage(_decode(payload), f"{seq}:{key}"))
                after = seq
                if response is not None and seq == response.seq:
                    return None
            if response is not None:
                if response.seq > after:
                    lost = response.lost or DROPPED
                    await send_callback(EventMessage(_lost(response.id, lost), f"{response.seq}:{key}"))
                return None
            while True:
                await tail.wake.wait()
                tail.wake = anyio.Event()
                while tail.pending:
                    seq, message = tail.pending.popleft()
                    if seq <= after or message is None:
                        continue
                    await send_callback(EventMessage(message, f"{seq}:{key}"))
                    after = seq
                    if isinstance(message, JSONRPCResponse | JSONRPCError):
                        return None
                if tail.ended:
                    return None  # the session ended, or this client fell behind: it may resume again
        finally:
            stream.tails.discard(tail)


def _after(events: Iterable[_Event], after: int) -> list[tuple[int, bytes]]:
    """The messages after seq ``after`` (not priming events), as they are now."""
    return [(event.seq, event.payload) for event in events if event.seq > after and event.payload]


def _decode(payload: bytes) -> JSONRPCMessage:
    return jsonrpc_message_adapter.validate_json(payload, by_name=False)


def _lost(request_id: RequestId, reason: str) -> JSONRPCError:
    log_event("serve.resume_incomplete", logging.INFO, request=str(request_id), reason=reason)
    message = f"this request's response cannot be sent again: {reason}; send the request again"
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=INTERNAL_ERROR, message=message))


def _request_id(key: StreamId) -> RequestId:
    """The request id a stream is named after (the SDK names it ``str(id)``; most ids are numbers)."""
    try:
        number = int(key)
    except ValueError:
        return key
    return number if str(number) == key else key


def _text_length(value: Any) -> int:
    """The characters of the strings in ``value``: less than its JSON's length, and cheap to count."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(len(str(k)) + _text_length(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return sum(_text_length(item) for item in value)
    if isinstance(value, BaseModel):
        return sum(_text_length(item) for item in vars(value).values())
    return 0
