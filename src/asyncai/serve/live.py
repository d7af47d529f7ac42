"""Runs that go on while their client answers a question: under the stateless protocol a request
cannot carry a server's question back, so when a wrapped server asks one (elicitation, sampling)
during a ``run_code``, the request answers ``input_required`` with it while the snippet keeps
running, waiting for the answer; the client's retry brings the answer and follows the run again.

The snippet runs in this process (a wrapped server's question waits on its connection here), so
the retry must reach this instance; a retry that reaches another one is told so.
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
import time
from collections.abc import Awaitable, Callable

import mcp.types as mt

LIVE_PREFIX = "live-"
Outcome = mt.CallToolResult | mt.InputRequiredResult


def looks_like_live_id(text: str) -> bool:
    return text.startswith(LIVE_PREFIX) and 8 < len(text) < 80 and text.isascii()


class LiveRun:
    """One run and the questions it waits on; see the module docstring."""

    def __init__(
        self,
        owner: str,
        work: Callable[[LiveRun], Awaitable[Outcome]],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.clock = clock
        self.id = LIVE_PREFIX + secrets.token_urlsafe(18)
        self.owner = owner
        self._numbers = itertools.count(1)
        self._waiting: dict[str, tuple[mt.InputRequest, asyncio.Future[mt.InputResponse]]] = {}
        self._asked = asyncio.Event()
        self.finished_at: float | None = None
        self.task: asyncio.Task[Outcome] = asyncio.ensure_future(work(self))
        self.task.add_done_callback(lambda _: self._finished())

    def _finished(self) -> None:
        self.finished_at = self.clock()
        self._asked.set()

    async def ask(self, request: mt.InputRequest) -> mt.InputResponse:
        """Put ``request`` to the client (the next ``follow`` answers ``input_required``) and wait
        for its answer (``answer``)."""
        key = f"ask-{next(self._numbers)}"
        answer: asyncio.Future[mt.InputResponse] = asyncio.get_running_loop().create_future()
        self._waiting[key] = (request, answer)
        self._asked.set()
        try:
            return await answer
        finally:
            del self._waiting[key]

    def answer(self, responses: mt.InputResponses) -> None:
        for key, response in responses.items():
            waiting = self._waiting.get(key)
            if waiting is not None and not waiting[1].done():
                waiting[1].set_result(response)

    async def follow(self) -> Outcome:
        """The run's result, or ``input_required`` with the questions it waits on."""
        while True:
            if self.task.done():
                return self.task.result()
            questions = {
                key: request for key, (request, answer) in self._waiting.items() if not answer.done()
            }
            if questions:
                return mt.InputRequiredResult(input_requests=questions, request_state=self.id)
            self._asked.clear()
            waiting = asyncio.ensure_future(self._asked.wait())
            try:
                await asyncio.wait({self.task, waiting}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiting.cancel()


class LiveRuns:
    """The live runs of this process that a client may come back to, for at most ``ttl`` seconds
    after they finished (a retry that brings the last answer collects the result)."""

    def __init__(self, ttl: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.clock = clock
        self._runs: dict[str, LiveRun] = {}

    def start(self, owner: str, work: Callable[[LiveRun], Awaitable[Outcome]]) -> LiveRun:
        self._drop_stale()
        run = LiveRun(owner, work, self.clock)
        self._runs[run.id] = run
        return run

    def get(self, run_id: str, owner: str) -> LiveRun | None:
        run = self._runs.get(run_id) if looks_like_live_id(run_id) else None
        if run is None or not secrets.compare_digest(run.owner, owner):
            return None
        return run

    async def follow(self, run: LiveRun) -> Outcome:
        """``run.follow()``; a run whose result was collected, or whose follower went away (the
        client disconnected), is over."""
        try:
            outcome = await run.follow()
        except BaseException:
            run.task.cancel()
            self._runs.pop(run.id, None)
            raise
        if not isinstance(outcome, mt.InputRequiredResult) or outcome.request_state != run.id:
            self._runs.pop(run.id, None)
        return outcome

    def __len__(self) -> int:
        return len(self._runs)

    def _drop_stale(self) -> None:
        now = self.clock()
        for run_id, run in list(self._runs.items()):
            if run.finished_at is not None and now - run.finished_at > self.ttl:
                del self._runs[run_id]
