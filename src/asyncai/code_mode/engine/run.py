"""Stage 3 of a snippet, *run*: feed the worker, serve its nested calls (``dispatch``), supervise the
limits (the wall clock, the worker watch, interrupts) and pause or resume a snippet that waits for
a person (``pausing``). ``Runner`` is one snippet's run on its scope's worker; what a feed leaves in
the REPL (names bound, a reset, a parked snapshot) it tells the scope."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pydantic_monty as pm

from asyncai.approvals.gate import Approval, ApprovalRequest, MutationGate
from asyncai.code_mode.engine.clock import WallClock
from asyncai.code_mode.engine.contract import RunCodeText, hide_frames
from asyncai.code_mode.engine.dispatch import SnippetDispatcher
from asyncai.code_mode.engine.finish import (
    ABANDONED_REASON,
    NO_ANSWER,
    Written,
    crash_text,
    error_result,
    error_text,
    outcome_text,
    wall_clock_text,
)
from asyncai.code_mode.engine.pausing import (
    HeldCall,
    Holder,
    PausedSnippet,
    SnippetHeld,
    drive,
    new_pause_id,
    settled,
)
from asyncai.code_mode.engine.plan import FeedPlan, plan_feed
from asyncai.code_mode.engine.preamble import HOST_CALL
from asyncai.code_mode.engine.read import SnippetScan, as_written, placed_name_error
from asyncai.code_mode.engine.setup import Repl
from asyncai.code_mode.engine.skill_feed import feed_skills
from asyncai.code_mode.engine.type_check import rejection
from asyncai.code_mode.engine.variables import probe_source
from asyncai.code_mode.sandbox.interface import SnippetRaised, Worker
from asyncai.log import log_event

INTERRUPT_GRACE_SECONDS = 1.0
"""How long an interrupted snippet may take to end once its tool calls failed, before it is
stopped the hard way (its worker killed, its REPL reset)."""
PREAMBLE_FILENAME = "<python-input-0>"  # Monty names the Nth feed <python-input-N>


class StateLost(Exception):
    """The worker is gone (killed, crashed, unreachable); the scope starts over."""


class TypeCheckRejected(Exception):
    """The type check stopped the snippet before anything ran; the message is the error result."""


class PrintCapture:
    """Keeps the first ``max_bytes`` of ``print()`` output and counts the rest; never fails the feed."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.parts: list[str] = []
        self.size = 0
        self.dropped = 0

    def __call__(self, stream: str, text: str) -> None:
        data = text.encode()
        keep = data[: max(self.max_bytes - self.size, 0)]
        if keep:
            self.parts.append(keep.decode(errors="ignore"))
        self.size += len(keep)
        self.dropped += len(data) - len(keep)

    @property
    def text(self) -> str:
        return "".join(self.parts)


class Runner:
    """One snippet's feeds on its scope's worker: one dispatcher, one print capture."""

    def __init__(self, scope: Repl, dispatcher: SnippetDispatcher, capture: PrintCapture) -> None:
        self.scope = scope
        self.limits = scope.limits
        self.dispatcher = dispatcher
        self.capture = capture
        self._probe: tuple[list[Any], tuple[str, ...]] | None = None
        """The variables probe's rows and names, when they came with the last feed (``plan_feed``)."""
        self.raised = False
        """The last feed raised and the REPL kept what it bound (not a crash, a limit or a refusal)."""
        self._code = ""
        """What the last feed ran, as the model wrote it (none for a resumed snippet)."""

    async def run(
        self, code: str, scan: SnippetScan, check: bool, written: Written, started: float, pausing: bool
    ) -> RunCodeText | PausedSnippet:
        """Run ``code`` on the scope's worker, whose wall clock ``started`` at that loop time;
        ``check``: the type check is wanted (it runs unless the catalog changed since checkout)."""
        scope = self.scope
        self.raised, self._code = False, code
        try:
            worker = await scope.ensure_worker()
        except StateLost as exc:
            return RunCodeText(f"error: could not start the sandbox: {exc}", is_error=True)
        await feed_skills(scope, worker, scan, self.dispatcher, discard_print)
        checked = check and scope.checked_version == scope.setup.catalog_version  # stubs fixed at checkout
        scope.checked_snippets += checked
        plan = plan_feed(
            code,
            scan,
            type_check=checked,
            pausing=pausing,
            held=list(scope.known.bound),
            result_chars=self.limits.max_result_chars,
        )
        remaining = self.limits.wall_timeout - (asyncio.get_running_loop().time() - started)
        return await self.supervise(
            worker, lambda: self.feed(worker, plan, scan.bound, pausing), remaining, written
        )

    async def feed(self, worker: Worker, plan: FeedPlan, bound: tuple[str, ...], pausing: bool) -> Any:
        """Run ``plan`` on ``worker``: its value (a pausing feed may raise ``SnippetHeld``)."""
        self._probe = None
        try:
            value = await self._feed(worker, plan, pausing)
        except pm.MontyTypingError as exc:
            speculations = self.dispatcher.speculations
            launched = speculations.launched if speculations is not None else 0
            refused = rejection(exc.display(), plan.source, self.scope.setup.catalog, bound, launched)
            if refused is not None:
                raise TypeCheckRejected(refused) from None
            return await self._feed(worker, FeedPlan(plan.source, False, None), pausing)  # Monty decides
        if plan.probed:  # the probe rode on the feed: its value is (the snippet's, the rows)
            value, rows = value
            self._probe = (rows, plan.probed)
        elif plan.probed is not None:  # nothing to probe: every row stays
            self._probe = ([], ())
        return value

    async def _feed(self, worker: Worker, plan: FeedPlan, pausing: bool) -> Any:
        dispatcher = self.dispatcher
        if pausing:
            snapshot = await worker.feed_start(
                plan.source,
                external_lookup={HOST_CALL: dispatcher.call},
                os=dispatcher.deny_os,
                print_callback=self.capture,
                skip_type_check=not plan.type_check,
            )
            return await drive(snapshot, _holder(dispatcher), {})
        return await worker.feed_run(
            plan.source,
            external_lookup={HOST_CALL: dispatcher.call},
            os=dispatcher.deny_os,
            print_callback=self.capture,
            skip_type_check=not plan.type_check,
        )

    async def supervise(
        self,
        worker: Worker,
        start: Callable[[], Awaitable[Any]],
        remaining: float,
        written: Written,
    ) -> RunCodeText | PausedSnippet:
        """Run a started snippet to its result under the wall clock, the worker watch and the
        interrupt rules; ``SnippetHeld`` makes it a ``PausedSnippet``."""
        scope, dispatcher = self.scope, self.dispatcher
        feed: asyncio.Future[Any] | None = None
        clock_started = asyncio.get_running_loop().time()
        try:
            watch = _worker_watch(scope.setup.sandbox.exit_watch(worker), dispatcher)
            async with WallClock(max(remaining, 0.0)) as clock:
                dispatcher.clock = clock
                with watch:
                    feed = asyncio.ensure_future(start())
                    # Shielded: a cancel that reached the feed would lose the REPL (pydantic-monty);
                    # a cancel from outside interrupts the snippet instead (``_interrupted``).
                    value = await asyncio.shield(feed)
        except SnippetHeld as held:
            ran = self.limits.wall_timeout - remaining + asyncio.get_running_loop().time() - clock_started
            return await self._pause(held, worker, written, ran)
        except TimeoutError:
            dispatcher.cancel_in_flight()
            await scope.reset(discard=True)
            await _retrieve(feed)
            report = dispatcher.calls_report()
            if dispatcher.exhausted is not None:  # it caught the budget error and went on
                return error_result(dispatcher.exhausted, self.limits, state_reset=True, report=report)
            return error_result(wall_clock_text(self.limits, ran=True), self.limits, report=report)
        except asyncio.CancelledError:
            # The run was cancelled from outside (Ctrl-C, a client's cancel, shutdown): the tool
            # calls it awaits fail inside the snippet, which ends and keeps its REPL; only one
            # stuck in computation that cannot be interrupted is stopped, and its REPL reset.
            kept = await asyncio.shield(self._interrupted(feed, written.bound))
            report = dispatcher.calls_report()
            if report is not None:  # nobody reads a result now: the report goes to the log
                mutated = any(call.mutating for call in dispatcher.calls)
                log_event("code_mode.cancelled", logging.WARNING if mutated else logging.INFO, calls=report)
            if not kept:
                await asyncio.shield(scope.reset(discard=True))
                scope.restarted = True
            raise
        except TypeCheckRejected as exc:
            return RunCodeText(str(exc), is_error=True)
        except (pm.MontyError, SnippetRaised) as exc:
            return await self._failed(exc, worker, written)
        except RuntimeError as exc:  # pydantic-monty reports a dead worker as a plain RuntimeError
            await scope.reset(discard=True)
            return error_result(
                f"RuntimeError: {exc}", self.limits, state_reset=True, report=dispatcher.calls_report()
            )
        scope.known.remember(written.bound, written.functions)
        if dispatcher.exhausted is not None:
            return error_result(dispatcher.exhausted, self.limits, report=dispatcher.calls_report())
        await self._refresh_note(worker)
        return outcome_text(value, self.capture.text, self.capture.dropped, written, self.limits)

    async def resume(
        self,
        worker: Worker,
        paused: PausedSnippet,
        parked: bytes,
        approvals: Mapping[int, Approval],
    ) -> RunCodeText | PausedSnippet:
        """Go on with ``paused`` (its ``parked`` snapshot) on ``worker``: each held call runs as
        ``approvals`` decides, then the rest runs as any pausing snippet."""
        scope, dispatcher = self.scope, self.dispatcher
        self._code = ""
        self.capture("stdout", paused.printed)
        self.capture.dropped += paused.printed_dropped

        async def start() -> Any:
            snapshot = await worker.load_snapshot(
                parked,
                external_lookup={HOST_CALL: dispatcher.call},
                os=dispatcher.deny_os,
                print_callback=self.capture,
            )
            scope.dump, scope.paused_as = None, None  # loaded: from here on the worker holds the REPL
            if not isinstance(snapshot, pm.AsyncFutureSnapshot):
                raise RuntimeError("the paused snippet did not load as one waiting for its calls")
            outcomes = await asyncio.gather(
                *(_decided(dispatcher, call, approvals.get(call.call_id)) for call in paused.held)
            )
            snapshot = await snapshot.resume(
                {call.call_id: settled(outcome) for call, outcome in zip(paused.held, outcomes, strict=True)}
            )
            return await drive(snapshot, _holder(dispatcher), {})

        written = Written(paused.bound, paused.kept_as_last_value, paused.value_at, paused.assigned)
        return await self.supervise(worker, start, self.limits.wall_timeout - paused.elapsed, written)

    async def _pause(
        self, held: SnippetHeld, worker: Worker, written: Written, ran: float
    ) -> PausedSnippet | RunCodeText:
        """The snippet waits for a person: its snapshot is parked as the REPL's state (saved as any
        parked REPL is), the worker goes back, and the ``PausedSnippet`` says what it waits on."""
        scope, dispatcher = self.scope, self.dispatcher
        try:
            snapshot = held.snapshot.dump()
        except Exception as exc:  # a worker that died at the pause: nothing to resume
            await scope.reset(discard=True)
            return error_result(
                f"error: the sandbox worker failed while pausing the snippet: {error_text(exc)}",
                self.limits,
                state_reset=True,
                report=dispatcher.calls_report(),
            )
        paused = PausedSnippet(
            id=new_pause_id(),
            held=tuple(held.held.values()),
            calls=tuple(dispatcher.calls),
            suspensions=dispatcher.suspensions,
            printed=self.capture.text,
            printed_dropped=self.capture.dropped,
            elapsed=ran,
            bound=written.bound,
            kept_as_last_value=written.kept_as_last_value,
            value_at=written.value_at,
            assigned=written.assigned,
        )
        await scope.park_paused(snapshot, paused.id)
        scope.known.remember(written.bound)  # bound when it ends, resumed or abandoned
        log_event("code_mode.paused", pause=paused.id, held=[call.tool for call in paused.held])
        return paused

    async def _interrupted(self, feed: asyncio.Future[Any] | None, bound: tuple[str, ...]) -> bool:
        """Interrupt a snippet whose run was cancelled; True when it ended and its REPL is kept."""
        if feed is None:  # cancelled before the snippet started: nothing to keep or lose
            return True
        self.dispatcher.interrupt()
        await asyncio.wait({feed}, timeout=INTERRUPT_GRACE_SECONDS)
        if not feed.done():  # computing, not awaiting a tool: only stopping the worker ends it
            feed.cancel()
            await _retrieve(feed)
            return False
        error = feed.exception() if not feed.cancelled() else asyncio.CancelledError()
        if error is None or isinstance(error, pm.MontyRuntimeError | SnippetRaised):
            self.scope.known.remember(bound)  # a feed is not transactional: names bound before stay bound
            return True
        return False

    async def _failed(
        self, exc: pm.MontyError | SnippetRaised, worker: Worker, written: Written
    ) -> RunCodeText:
        """A snippet that raised; one that was stopped (crash, time limit, heap cap) also gets the
        report of its nested calls."""
        scope, report = self.scope, self.dispatcher.calls_report()
        if isinstance(exc, pm.MontyCrashedError):
            await scope.reset(discard=True)
            return error_result(crash_text(exc, self.limits), self.limits, state_reset=True, report=report)
        # The tool wrappers live in the scope's first feed; their frames are noise to the model.
        text = as_written(hide_frames(error_text(exc), PREAMBLE_FILENAME), written.value_at)
        text = placed_name_error(text, self._code)
        lines = text.strip().splitlines()
        last = lines[-1] if lines else ""
        if last.startswith("MemoryError"):
            # After a heap overrun the worker keeps its failed allocations counted: start afresh.
            await scope.reset(discard=True)
            return error_result(text, self.limits, state_reset=True, report=report)
        scope.known.remember(
            written.bound, written.functions
        )  # a feed is not transactional: names stay bound
        self.raised = True
        await self._refresh_note(worker)  # so the note says which of them the snippet got to
        stopped = last.startswith("TimeoutError")  # the execution time limit
        return error_result(text, self.limits, report=report if stopped else None)

    async def _refresh_note(self, worker: Worker) -> None:
        known = self.scope.known
        names = list(reversed(known.bound))
        if not names:
            known.note = None
            return
        probe, self._probe = self._probe, None
        if probe is None:  # every name is probed, in a feed of its own
            try:
                rows = await worker.feed_run(probe_source(names), skip_type_check=True)
            except Exception as exc:  # a failed probe only means the note is missing
                log_event("code_mode.probe_failed", logging.INFO, error=str(exc))
                return
            known.update(rows or [], None)
        else:
            known.update(probe[0] or [], probe[1])


async def finish_abandoned(scope: Repl, worker: Worker, snapshot: bytes) -> None:
    """A paused snippet nobody resumed (a new snippet came first, or the answer never did): it ends
    as if the person had declined, every later mutating call refused too, its output unread. What
    it bound stays, as after any snippet that raised."""
    log_event("code_mode.pause_abandoned", pause=scope.paused_as)
    refusal = Approval(False, ABANDONED_REASON)
    dispatcher = scope.setup.dispatcher(MutationGate("ask", _Refusing(refusal)), None, scope.skills)
    loaded = await worker.load_snapshot(
        snapshot,
        external_lookup={HOST_CALL: dispatcher.call},
        os=dispatcher.deny_os,
        print_callback=discard_print,
    )
    scope.paused_as, scope.abandoned = None, True
    try:
        async with asyncio.timeout(scope.limits.wall_timeout):
            if isinstance(loaded, pm.AsyncFutureSnapshot):
                error = PermissionError(f"this call was not run: {ABANDONED_REASON}")
                loaded = await loaded.resume({i: {"exception": error} for i in loaded.pending_call_ids})
            await drive(loaded, lambda _: None, {})
    except (pm.MontyRuntimeError, SnippetRaised):
        pass  # it raised: what it bound before stays, as for any snippet
    finally:
        await dispatcher.settle()


def discard_print(stream: str, text: str) -> None:
    """Output nobody reads (the preamble's, an abandoned snippet's) must not reach the host's stdout."""


@contextlib.contextmanager
def _worker_watch(descriptor: int | None, dispatcher: SnippetDispatcher) -> Iterator[None]:
    """While a snippet runs, a worker that exits (killed, crashed) cancels the tool calls the snippet
    awaits: the feed then fails at once instead of when a slow tool finally returns. Event-driven,
    through the worker's pidfd (``Sandbox.exit_watch``); without one nothing is watched."""
    if descriptor is None:
        yield
        return
    loop = asyncio.get_running_loop()
    loop.add_reader(descriptor, dispatcher.cancel_in_flight)
    try:
        yield
    finally:
        loop.remove_reader(descriptor)


async def _retrieve(feed: asyncio.Future[Any] | None) -> None:
    """Stop a feed and take its outcome, so no error is left unretrieved (a cancel of the caller
    still goes through)."""
    if feed is None:
        return
    feed.cancel()
    await asyncio.wait({feed}, timeout=INTERRUPT_GRACE_SECONDS)
    if feed.done() and not feed.cancelled():
        feed.exception()


@dataclass(frozen=True)
class _Refusing:
    """The approver of an abandoned snippet: every mutating call is refused, saying why."""

    refusal: Approval

    async def approve(self, request: ApprovalRequest) -> Approval:
        return self.refusal


def _holder(dispatcher: SnippetDispatcher) -> Holder:
    """Which of a pausing snippet's calls wait for a person: the dispatcher decides."""

    def hold(snapshot: pm.AsyncFunctionSnapshot) -> HeldCall | None:
        if snapshot.function_name != HOST_CALL or len(snapshot.args) != 3:
            return None
        return dispatcher.held_call(snapshot.call_id, *snapshot.args)

    return hold


async def _decided(dispatcher: SnippetDispatcher, call: HeldCall, approval: Approval | None) -> Any:
    """A held call run (or refused) as decided: its host reply, or the exception it raises."""
    try:
        return await dispatcher.run_held(call, approval or Approval(False, NO_ANSWER))
    except Exception as exc:
        return exc
