"""The runtime: conversation threads over a backend.

* Runs on one thread never overlap. Messages that arrive while a thread is busy wait; when the
  run ends, every waiting message is coalesced into one follow-up run (texts joined with blank
  lines). Runs on different threads proceed concurrently.
* Each thread keeps the messages of its earlier runs as the model saw them, tool calls and results
  included (not only their text: a resumed session must show the model the
  same messages as before).
* With a session factory, each thread records into its own session (a Claude Code transcript):
  the session's loaded history starts the thread, its one-time note (the sandbox was restarted)
  goes into the first run, and every run's messages are recorded as they happen. A failed run's
  records stay in the file, off the chain the next run continues.
* Each run holds its thread's scope (``scopes.use(thread_id)``: code mode's REPL of the thread,
  taken up from the session's saved state on the thread's first run and saved after each run);
  the scope's variables note goes into the run's newest user message.
* Run numbers are per runtime: 1, 2, 3, ... in the order runs start, across all threads.
* A failed run (model server down, anything else) produces a reply with ``error`` set; the
  runtime and the thread stay usable, and the failed exchange does not enter the history.

Delivery: :meth:`Runtime.post` returns a future per message; every message answered by one run
gets the *same* :class:`RunReply` (``texts`` lists them). The ``on_reply`` callback is called once
per run, which is what a JSONL channel wants: one output line per run.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from asyncai.backend.config import Message
from asyncai.backend.harness import SessionHarness
from asyncai.log import log_event
from asyncai.state.stores import StateLoad
from asyncai.tools.types import ToolSource

if TYPE_CHECKING:
    from asyncai.backend.openai import RunResult


@dataclass(frozen=True)
class RunRequest:
    """A user message for one conversation thread."""

    thread_id: str
    text: str


@dataclass(frozen=True)
class RunReply:
    """The answer of one run; shared by every message the run answered.

    ``reply`` is empty and ``error`` set when the run failed. ``result`` is the backend's result
    (``None`` on failure). ``session`` is the id of the session the thread records into.
    """

    thread_id: str
    run: int
    reply: str
    texts: tuple[str, ...]
    error: str | None = None
    result: RunResult | None = field(default=None, compare=False, repr=False)
    session: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_json(self) -> dict[str, Any]:
        """The JSONL line for this run: ``{"thread", "reply", "run"}``, plus ``session`` when the
        thread is recorded and ``error`` on failure."""
        line: dict[str, Any] = {"thread": self.thread_id, "reply": self.reply, "run": self.run}
        if self.session is not None:
            line["session"] = self.session
        if self.error is not None:
            line["error"] = self.error
        return line


class RunBackend(Protocol):
    """What the runtime needs from a backend (``OpenAiCompatibleBackend`` implements it)."""

    async def run(
        self,
        *,
        history: Sequence[Message],
        user_text: str,
        executor: ToolSource,
        note: str | None = None,
        thread_id: str | None = None,
        run_id: int | str | None = None,
        session: SessionHarness | None = None,
    ) -> RunResult: ...


class RunScope(Protocol):
    """The tools one run uses, held for the run (``code_mode.scopes.ScopeUse``)."""

    @property
    def scope(self) -> ToolSource: ...

    @property
    def state(self) -> StateLoad:
        """What became of the thread's saved state ("none" when nothing was saved)."""
        ...

    @property
    def note(self) -> str | None:
        """A note for the run's user message (the variables the REPL holds)."""
        ...


class ScopeProvider(Protocol):
    """Where runs get their tools: one scope per thread (``ReplScopes``), or one source for all
    (``SharedScope``)."""

    def use(
        self, key: str | None, *, saved_as: str | None = None
    ) -> AbstractAsyncContextManager[RunScope]: ...


@dataclass(frozen=True)
class _SharedUse:
    scope: ToolSource
    state: StateLoad = "none"
    note: str | None = None


class SharedScope:
    """Every thread uses the same tool source, with nothing kept per thread."""

    def __init__(self, tools: ToolSource) -> None:
        self.tools = tools

    @contextlib.asynccontextmanager
    async def use(self, key: str | None, *, saved_as: str | None = None) -> AsyncIterator[_SharedUse]:
        yield _SharedUse(self.tools)


class Session(SessionHarness, Protocol):
    """A thread's recorded session: the harness plus what the runtime needs around each run."""

    @property
    def session_id(self) -> str: ...

    def history(self) -> list[Message]:
        """The messages a resumed session starts the thread with (empty for a new one)."""
        ...

    def note(self) -> str | None:
        """A note for the next run's user message until a run succeeds (the sandbox restarted)."""
        ...

    def begin_run(self) -> None:
        """A run starts: its records continue the chain of the last successful run."""

    def end_run(self, ok: bool) -> None:
        """The run ended; a failed or cancelled one is left off the chain the next run continues."""


SessionFactory = Callable[[str], Session | None]
"""The session a new thread records into (by thread id), or ``None`` for no recording."""

ReplyCallback = Callable[[RunReply], Awaitable[None] | None]


@dataclass
class _Pending:
    text: str
    future: asyncio.Future[RunReply]


@dataclass
class _Thread:
    thread_id: str
    session: Session | None = None
    history: list[Message] = field(default_factory=list)
    pending: list[_Pending] = field(default_factory=list)
    worker: asyncio.Task[None] | None = None


def coalesce(texts: Sequence[str]) -> str:
    """The user text of a run that answers several messages at once."""
    return "\n\n".join(texts)


class Runtime:
    """Conversation threads over a backend; each run takes its tools from ``scopes`` (a plain tool
    source is shared by every thread)."""

    def __init__(
        self,
        backend: RunBackend,
        scopes: ScopeProvider | ToolSource,
        *,
        on_reply: ReplyCallback | None = None,
        sessions: SessionFactory | None = None,
    ) -> None:
        self.backend = backend
        self.scopes: ScopeProvider = SharedScope(scopes) if isinstance(scopes, ToolSource) else scopes
        self.on_reply = on_reply
        self.sessions = sessions
        self._threads: dict[str, _Thread] = {}
        self._runs = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._closed = False

    # ------------------------------------------------------------------------------------------
    # Public API

    def post(self, request: RunRequest) -> asyncio.Future[RunReply]:
        """Queue ``request`` and return the future of the reply that answers it (non-blocking).

        Must be called from the running event loop. If the thread is busy, the message waits and
        is coalesced with the other waiting messages into the thread's next run.
        """
        if self._closed:
            raise RuntimeError("the runtime is closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[RunReply] = loop.create_future()
        thread = self._threads.get(request.thread_id) or self._new_thread(request.thread_id)
        thread.pending.append(_Pending(request.text, future))
        if thread.worker is None:
            self._idle.clear()
            thread.worker = loop.create_task(self._drive(thread), name=f"asyncai-thread-{request.thread_id}")
            thread.worker.add_done_callback(functools.partial(self._worker_done, thread))
        return future

    async def submit(self, request: RunRequest) -> RunReply:
        """Queue ``request`` and wait for the reply that answers it."""
        return await self.post(request)

    def history(self, thread_id: str) -> list[Message]:
        """A copy of a thread's history (the messages of its successful runs)."""
        thread = self._threads.get(thread_id)
        return list(thread.history) if thread else []

    def session(self, thread_id: str) -> Session | None:
        """The session a thread records into (``None`` before its first message or without one)."""
        thread = self._threads.get(thread_id)
        return thread.session if thread else None

    def _new_thread(self, thread_id: str) -> _Thread:
        session = self.sessions(thread_id) if self.sessions is not None else None
        history = session.history() if session is not None else []
        thread = self._threads[thread_id] = _Thread(thread_id, session=session, history=history)
        return thread

    def cancel(self, thread_id: str) -> bool:
        """Cancel the thread's run in flight (Ctrl-C in the chat): its tool calls stop, its waiting
        messages fail, its history keeps only earlier runs. False when nothing was running."""
        thread = self._threads.get(thread_id)
        if thread is None or thread.worker is None:
            return False
        thread.worker.cancel()
        return True

    def busy(self, thread_id: str) -> bool:
        thread = self._threads.get(thread_id)
        return thread is not None and thread.worker is not None

    async def wait_idle(self) -> None:
        """Wait until no thread has a run in flight or a message waiting."""
        await self._idle.wait()

    async def aclose(self) -> None:
        """Stop accepting messages, cancel in-flight runs and fail waiting messages."""
        self._closed = True
        workers = [t.worker for t in self._threads.values() if t.worker is not None]
        for worker in workers:
            worker.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        for thread in self._threads.values():
            for pending in thread.pending:
                if not pending.future.done():
                    pending.future.cancel()
            thread.pending.clear()
        self._idle.set()

    # ------------------------------------------------------------------------------------------
    # Internals

    def _worker_done(self, thread: _Thread, task: asyncio.Task[None]) -> None:
        """A cancelled worker fails the messages still waiting on its thread, also one cancelled
        before it ever ran (``_drive`` then never started)."""
        if not task.cancelled():
            return
        if thread.worker is task:
            thread.worker = None
        for pending in thread.pending:
            if not pending.future.done():
                pending.future.cancel()
        thread.pending.clear()
        if all(t.worker is None for t in self._threads.values()):
            self._idle.set()

    async def _drive(self, thread: _Thread) -> None:
        try:
            while thread.pending:
                batch, thread.pending = thread.pending, []
                try:
                    reply = await self._run(thread, [p.text for p in batch])
                except asyncio.CancelledError:
                    for pending in batch:
                        pending.future.cancel()
                    raise
                await self._deliver(reply)
                for pending in batch:
                    if not pending.future.done():
                        pending.future.set_result(reply)
        finally:
            thread.worker = None
            if all(t.worker is None for t in self._threads.values()):
                self._idle.set()

    async def _run(self, thread: _Thread, texts: list[str]) -> RunReply:
        self._runs += 1
        run = self._runs
        user_text = coalesce(texts)
        log_event("runtime.run_start", thread=thread.thread_id, run=run, messages=len(texts))
        session = thread.session
        session_id = session.session_id if session is not None else None
        ok = False
        try:
            if session is not None:
                session.begin_run()
            try:
                async with self.scopes.use(thread.thread_id, saved_as=session_id) as use:
                    # Restored variables make the "sandbox restarted" note untrue; the variables
                    # note then says what is still there.
                    restored = use.state == "restored"
                    restart = session.note() if session is not None and not restored else None
                    notes = [restart, use.note]
                    result = await self.backend.run(
                        history=list(thread.history),
                        user_text=user_text,
                        executor=use.scope,
                        note="\n".join(note for note in notes if note) or None,
                        thread_id=thread.thread_id,
                        run_id=run,
                        session=session,
                    )
                ok = True
            finally:
                if session is not None:
                    session.end_run(ok)
        except Exception as exc:
            message = str(exc) or type(exc).__name__
            # The reply carries the error to whoever asked; the log line is for --verbose.
            log_event(
                "runtime.run_failed",
                logging.INFO,
                thread=thread.thread_id,
                run=run,
                error=message,
                error_type=type(exc).__name__,
            )
            return RunReply(
                thread_id=thread.thread_id,
                run=run,
                reply="",
                texts=tuple(texts),
                error=message,
                session=session_id,
            )
        thread.history.extend(result.messages)
        log_event("runtime.run_end", thread=thread.thread_id, run=run)
        return RunReply(
            thread_id=thread.thread_id,
            run=run,
            reply=result.reply,
            texts=tuple(texts),
            result=result,
            session=session_id,
        )

    async def _deliver(self, reply: RunReply) -> None:
        if self.on_reply is None:
            return
        try:
            outcome = self.on_reply(reply)
            if inspect.isawaitable(outcome):
                await outcome
        except Exception as exc:
            log_event(
                "runtime.on_reply_failed",
                logging.ERROR,
                thread=reply.thread_id,
                run=reply.run,
                error=f"{type(exc).__name__}: {exc}",
            )
