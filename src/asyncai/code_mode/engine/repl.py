"""``ReplScope``: one REPL (a Monty session checked out on a sandbox worker) and the ``run_code``
calls fed to it. Here *worker* names that checked-out session; *session* is kept for the recorded
conversation."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pydantic_monty as pm

from asyncai.activity import QUIET, Activity, combined
from asyncai.approvals import MutationPolicy
from asyncai.approvals.gate import Approval, ApprovalRequest, Approver, MutationGate
from asyncai.code_mode.catalog.entries import CatalogEntry, Finder
from asyncai.code_mode.catalog.observed import ObservedShapes
from asyncai.code_mode.catalog.stubs import RUN_CODE
from asyncai.code_mode.engine.clock import WallClock
from asyncai.code_mode.engine.contract import (
    RunCodeText,
    SnippetOutcome,
    format_error,
    format_outcome,
    hide_frames,
    tool_name_taken,
)
from asyncai.code_mode.engine.dispatch import SnippetDispatcher, refuse_os
from asyncai.code_mode.engine.eager import Statement, complete_statements, runs_early
from asyncai.code_mode.engine.pausing import (
    HeldCall,
    Holder,
    PausedSnippet,
    SnippetHeld,
    drive,
    new_pause_id,
    settled,
)
from asyncai.code_mode.engine.preamble import (
    DISABLED_BUILTINS,
    HOST_CALL,
    INTERNAL_PREFIX,
    keeping,
    scope_preamble,
)
from asyncai.code_mode.engine.read import (
    LAST_VALUE,
    SCAN_ON_LOOP_CHARS,
    SnippetScan,
    as_written,
    bind_last_value,
    parse_snippet,
    scan_snippet,
    scan_snippet_off_loop,
)
from asyncai.code_mode.engine.speculation import Speculations, literal_calls, literal_calls_in
from asyncai.code_mode.engine.type_check import check_can_catch, rejection, stub_types, type_check_stubs
from asyncai.code_mode.engine.variables import (
    BoundVariable,
    format_note,
    names_to_probe,
    note_candidates,
    probe_source,
)
from asyncai.code_mode.sandbox.sandboxes import Sandbox, release
from asyncai.code_mode.sandbox.workers import NoWorker, WorkerRoom
from asyncai.humanize import count, one_line, seconds
from asyncai.log import log_event
from asyncai.state.stores import SavedScope, StateDiscarded, StateLoad, StateStore, pack, unpack
from asyncai.telemetry.spans import DEFAULT_TRACING, Tracing, end_snippet, ended_by, start_snippet
from asyncai.telemetry.spans import snippet as snippet_span
from asyncai.tools.types import ToolCallOutput, ToolDefinition, ToolSource
from asyncai.wording import setting

STORE_TIMEOUT = 10.0
"""Seconds any state-store call may take before it counts as failed."""
ABANDONED_PAUSE = (
    "error: this approval is for a snippet that no longer waits: its REPL ran another snippet since, "
    "or was reset. Nothing of it ran after the pause; run it again if it is still wanted."
)
NO_ANSWER = "no answer was given for it"
CUT_OFF = "the run_code call was cut off before the whole snippet arrived"
ABANDONED_REASON = "the snippet waited for an approval that never came (a newer snippet ran first)"
ABANDONED_NOTE = (
    "[the snippet that waited for an approval was abandoned: its mutating calls were refused, the "
    "rest of it ran, and what it bound is kept]"
)
RESTARTED_NOTE = "[the sandbox was restarted: variables from earlier run_code calls are gone]"
INTERRUPT_GRACE_SECONDS = 1.0
"""How long an interrupted snippet may take to end once its tool calls failed, before it is
stopped the hard way (its worker killed, its REPL reset)."""
TYPE_CHECKED_SNIPPETS = 100
"""Snippets of one REPL that are type-checked; later ones run unchecked (see ``_feed``)."""
PREAMBLE_FILENAME = "<python-input-0>"  # Monty names the Nth feed <python-input-N>


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


@dataclass
class ScopeSetup:
    """What every scope of one code-mode executor shares. ``catalog`` and ``run_code`` change when a
    wrapped server's tools change; ``catalog_version`` counts those changes, so a scope created
    earlier feeds the new function wrappers before its next snippet."""

    run_code: ToolDefinition
    catalog: Mapping[str, CatalogEntry]
    inner: ToolSource
    sandbox: Sandbox
    room: WorkerRoom
    """Which scopes hold a worker (what the executor must close), and the bound on how many."""
    operator_preamble: str | None = None
    mutations: MutationPolicy = "allow"
    finder: Finder | None = None
    catalog_version: int = 0
    store: StateStore | None = None
    """Where thread REPLs are saved for resumed sessions (``None``: not saved)."""
    approver: Approver | None = None
    """Asked about mutating calls under ``--mutations ask`` when a call brings no approver of its own."""
    activity: Activity = QUIET
    """Told of every snippet's nested calls (a live display)."""
    shapes: ObservedShapes | None = None
    """Where the shapes of results from tools without an output schema are learned."""
    tracing: Tracing = DEFAULT_TRACING
    """Where the spans of snippets and their nested calls go (``telemetry.spans``)."""
    speculate: bool = True
    """Launch read-only calls with literal arguments as soon as their line streamed (``speculation``)."""
    speculate_tools: frozenset[str] = frozenset()
    """Tools that speculate though they do not declare ``readOnlyHint``."""
    closed: str | None = None
    """Why no snippet may run any more (the code mode closed); a scope made before says so."""

    def check_open(self) -> None:
        if self.closed is not None:
            raise RuntimeError(self.closed)

    def speculates(self, entry: CatalogEntry) -> bool:
        tool = entry.tool
        return (
            self.speculate
            and not entry.host_function
            and (tool.name in self.speculate_tools or (tool.read_only and not tool.destructive))
        )

    _stubs: tuple[int, str] | None = None
    _preamble: tuple[int, str, str] | None = None

    def preamble(self) -> tuple[str, str]:
        """The current catalog's scope preamble (helpers and one wrapper per tool) and its
        fingerprint, made once per catalog version."""
        if self._preamble is None or self._preamble[0] != self.catalog_version:
            source = scope_preamble(self.catalog, stub_types(self.catalog).sources)
            fingerprint = hashlib.sha256(source.encode()).hexdigest()[:32]
            self._preamble = (self.catalog_version, source, fingerprint)
        return self._preamble[1], self._preamble[2]

    def type_check_stubs(self) -> str:
        """The current catalog's type-check stubs, made once per catalog version."""
        if self._stubs is None or self._stubs[0] != self.catalog_version:
            self._stubs = (self.catalog_version, type_check_stubs(self.catalog))
        return self._stubs[1]


class _StateLost(Exception):
    """The worker is gone (killed, crashed, unreachable); the scope starts over."""


class _TypeCheckRejected(Exception):
    """The type check stopped the snippet before anything ran; the message is the error result."""


def _describe(exc: BaseException) -> str:
    return one_line(f"{type(exc).__name__}: {exc}", 300)


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, pm.MontyRuntimeError | pm.MontySyntaxError):
        return exc.display()
    return str(exc)


class ReplScope(ToolSource):
    """A ``ToolSource`` offering ``run_code`` over one persistent REPL.

    Feeds are serialised with a lock (a worker cannot take two feeds at once); the worker is
    checked out on first use and released by ``aclose``; an idle REPL may give its worker back
    (``park``) and get one again on its next snippet. ``hold()`` marks the scope in use for a
    whole run, so its owner does not release it between two of the run's snippets.
    """

    def __init__(self, setup: ScopeSetup) -> None:
        self.setup = setup
        self.limits = setup.sandbox.limits
        self._worker: pm.AsyncMontySession | None = None
        self._lock = asyncio.Lock()
        self._holds = 0
        self._bound: dict[str, None] = {}
        self._note: str | None = None
        self._catalog_version = setup.catalog_version
        self._checked_version = setup.catalog_version
        """The catalog version the worker's type-check stubs were made from."""
        self._checked_snippets = 0
        self._parked: bytes | None = None
        """The dump of a scope that gave its worker back (``park``)."""
        self._restarted = False
        """State was lost (a parked dump that would not load): the next result says so."""
        self._abandoned = False
        """A paused snippet was finished unanswered (``_finish_abandoned``): the next result says so."""
        self._probed: list[Any] | None = None
        """The variables probe's rows, when they came with the snippet's own feed (``_with_probe``)."""
        self._probed_names: set[str] | None = None
        """The names that probe looked at (``variables.names_to_probe``); the others kept their rows."""
        self.last_used = 0
        self._variables: list[BoundVariable] = []
        self._changed = False
        """A snippet ran since the state was last saved."""
        self._stamp: str | None = None
        """The store's stamp of the state held here (``sync_state``)."""
        self.paused_as: str | None = None
        """The id of this REPL's snippet that waits for an approval (``run_pausing``), if any."""

    def tools(self) -> list[ToolDefinition]:
        return [self.setup.run_code]

    def context_note(self) -> str | None:
        return self._note

    def variables(self) -> list[BoundVariable]:
        """What the REPL holds, as of its last snippet (names only for a restored one not yet run)."""
        if self._variables or not self._bound:
            return list(self._variables)
        return [BoundVariable(name, "?") for name in reversed(self._bound)]

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        self._holds += 1
        try:
            yield
        finally:
            self._holds -= 1

    @property
    def busy(self) -> bool:
        return self._holds > 0 or self._lock.locked()

    @property
    def running(self) -> bool:
        return self._lock.locked()

    @property
    def parked(self) -> bool:
        return self._parked is not None

    async def park(self) -> bool:
        """Dump the REPL and give the worker back; the next snippet restores it on any worker."""
        if self._lock.locked():
            return False
        async with self._lock:
            worker = self._worker
            if worker is None:
                return True
            try:
                blob = await worker.dump()
            except Exception as exc:  # a dead or broken worker: its state is gone anyway
                log_event("code_mode.park_failed", logging.WARNING, error=_error_text(exc))
                await asyncio.shield(self._reset(discard=True))
                self._restarted = True
                return True
            # The dump is kept before the worker goes: a cancel from here on loses nothing.
            self._parked, self._worker = blob, None
            self.setup.room.leave(self)
            await asyncio.shield(release(worker))
            return True

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        approver: Approver | None = None,
        activity: Activity | None = None,
    ) -> ToolCallOutput:
        """Run one snippet; ``approver`` is asked about mutating calls under ``--mutations ask``;
        ``activity`` is told of this snippet's nested calls (besides the executor's own display)."""
        self.setup.check_open()
        if name != RUN_CODE:
            return ToolCallOutput.error(f"error: unknown tool {name!r}; the only tool is run_code")
        result = await self._snippet(arguments, approver, activity, pausing=False)
        assert isinstance(result, ToolCallOutput)  # only a pausing run pauses
        return result

    async def run_pausing(
        self, arguments: dict[str, Any], *, activity: Activity | None = None
    ) -> ToolCallOutput | PausedSnippet:
        """Run one snippet in which a mutating call that needs a person's decision (``ask``)
        pauses the snippet instead of waiting: the ``PausedSnippet`` then goes on in ``resume``.
        Until then the paused snippet is the REPL's state (parked, saved like any other); a new
        snippet first finishes it as if the person had declined (``_finish_abandoned``)."""
        self.setup.check_open()
        return await self._snippet(arguments, None, activity, pausing=True)

    def eager(self, *, approver: Approver | None = None, activity: Activity | None = None) -> EagerSnippet:
        """A snippet run while it is still being written (``engine.eager``): give it the code so far
        with ``update``, then ``finish`` it with the call's arguments, or ``abandon`` it."""
        self.setup.check_open()
        return EagerSnippet(self, approver, activity)

    def _noted(self, result: RunCodeText, arguments: Mapping[str, Any]) -> str:
        """The result's text with what the model must know of the REPL first."""
        text = result.text
        if self._restarted and not arguments.get("restart"):
            text = f"{RESTARTED_NOTE}\n{text}"
        if self._abandoned:
            text = f"{ABANDONED_NOTE}\n{text}"
        self._restarted = self._abandoned = False
        return text

    async def _snippet(
        self,
        arguments: dict[str, Any],
        approver: Approver | None,
        activity: Activity | None,
        *,
        pausing: bool,
    ) -> ToolCallOutput | PausedSnippet:
        code = arguments.get("code")
        if not isinstance(code, str):
            return ToolCallOutput.error('error: run_code needs {"code": "<python source>"}')
        self.setup.room.touch(self)
        self._changed = True
        try:
            async with self._lock:
                if arguments.get("restart") in (True, "true", "True", 1):
                    await self._reset()
                asking = None if pausing else approver or self.setup.approver
                dispatcher = self._dispatcher(MutationGate(self.setup.mutations, asking), activity)
                with snippet_span(self.setup.tracing, code) as (span, traced):
                    dispatcher.span = span  # its nested calls' spans are children of the snippet's
                    try:
                        result = await self._run(code, dispatcher, pausing=pausing)
                    finally:
                        if dispatcher.speculations is not None:
                            await dispatcher.speculations.cancel_rest()
                    await dispatcher.settle()
                    traced.audit = dispatcher.audit()
                    if isinstance(result, PausedSnippet):
                        traced.paused = True
                        return result
                    traced.output = _tool_output(self._noted(result, arguments), result, traced.audit)
                    return traced.output
        finally:
            self.setup.room.poke()

    async def resume(
        self, paused: PausedSnippet, approvals: Mapping[int, Approval], *, activity: Activity | None = None
    ) -> ToolCallOutput | PausedSnippet:
        """Go on with a paused snippet of this REPL: each held call runs if ``approvals`` allows it,
        else raises ``PermissionError`` where it was called; the rest runs as ``run_pausing``."""
        self.setup.check_open()
        self.setup.room.touch(self)
        self._changed = True
        try:
            async with self._lock:
                if self.paused_as != paused.id or self._parked is None:
                    return ToolCallOutput.error(ABANDONED_PAUSE)
                self.paused_as = None
                dispatcher = self._dispatcher(MutationGate(self.setup.mutations), activity)
                dispatcher.calls = list(paused.calls)
                dispatcher.suspensions = paused.suspensions
                with snippet_span(self.setup.tracing, None) as (span, traced):
                    dispatcher.span = span
                    result = await self._resume(paused, approvals, dispatcher)
                    await dispatcher.settle()
                    traced.audit = dispatcher.audit()
                    if isinstance(result, PausedSnippet):
                        traced.paused = True
                        return result
                    self._restarted = False
                    traced.output = _tool_output(result.text, result, traced.audit)
                    return traced.output
        finally:
            self.setup.room.poke()

    def _dispatcher(self, gate: MutationGate, activity: Activity | None) -> SnippetDispatcher:
        return SnippetDispatcher(
            self.setup.catalog,
            self.setup.inner,
            self.limits,
            gate,
            finder=self.setup.finder,
            activity=combined(self.setup.activity, activity),
            shapes=self.setup.shapes,
            tracing=self.setup.tracing,
        )

    def _refusal(self, scan: SnippetScan) -> RunCodeText | None:
        """An error for a snippet that must not run, from what the scan found. A helper's name may
        be bound (the helper is then shadowed in this REPL); a tool function's may not."""
        taken = [name for name in scan.bound if name in self.setup.catalog]
        if taken:
            return RunCodeText(tool_name_taken(taken, scan.defined), is_error=True)
        for name in scan.bound:
            if name.startswith(INTERNAL_PREFIX) or name in DISABLED_BUILTINS:
                text = (
                    f"error: `{name}` is reserved for asyncai and cannot be rebound; "
                    f"pick another name (e.g. `{name}_`). Nothing was run."
                )
                return RunCodeText(text, is_error=True)
        if scan.unawaited:
            call = scan.unawaited[0]
            text = (
                f"error: `{call}(...)` is called without await, so it would never run. "
                f"Write `result = await {call}(...)`. Nothing was run."
            )
            return RunCodeText(text, is_error=True)
        return None

    async def _run(
        self,
        code: str,
        dispatcher: SnippetDispatcher,
        *,
        pausing: bool,
        capture: PrintCapture | None = None,
        spent: float = 0.0,
        bound: tuple[str, ...] | None = None,
    ) -> RunCodeText | PausedSnippet:
        """Run ``code``; ``capture`` and ``spent`` (wall-clock seconds) carry on from statements of
        the same snippet that ran before (``EagerSnippet``), and ``bound`` is then what the whole
        snippet binds, in its order, so the note reads as if it had run in one piece."""
        started = asyncio.get_running_loop().time() - spent
        try:  # the scan counts against the wall clock: a huge snippet is scanned off the loop
            async with asyncio.timeout(max(self.limits.wall_timeout - spent, 0.0)):
                scan = await scan_snippet_off_loop(code, self.setup.catalog.keys())
        except TimeoutError:
            return self._format_error(self._wall_clock_text(ran=False, chars=len(code)))
        refusal = self._refusal(scan)
        if refusal is not None:
            return refusal
        if bound is not None:  # the probe looks at every name the whole snippet binds
            scan = dataclasses.replace(scan, bound=bound)
        may_check = self._may_check(code, scan)
        if not may_check:  # a snippet the check may stop calls nothing before it: "no tool was called"
            self._speculate(scan, dispatcher)
        try:
            worker = await self._ensure_worker()
        except _StateLost as exc:
            return RunCodeText(f"error: could not start the sandbox: {exc}", is_error=True)
        capture = capture or PrintCapture(self.limits.max_print_bytes)
        fed = bind_last_value(code, scan.value_at, scan.assigned)
        snippet = _Snippet(scan.bound, scan.value_at is not None, scan.value_at, scan.assigned)
        remaining = self.limits.wall_timeout - (asyncio.get_running_loop().time() - started)
        return await self._supervise(
            worker,
            lambda: self._feed(worker, fed, dispatcher, capture, scan, may_check, pausing=pausing),
            dispatcher,
            capture,
            remaining,
            snippet,
        )

    def _speculate(self, scan: SnippetScan, dispatcher: SnippetDispatcher) -> None:
        """A snippet that arrived whole: its literal read-only calls start now, while the worker is
        readied and fed, as a streamed snippet's start once their line has arrived (``EagerSnippet``
        launched those already)."""
        if self.setup.speculate and dispatcher.speculations is None and scan.nodes is not None:
            dispatcher.speculations = Speculations()
            dispatcher.speculate(literal_calls_in(scan.nodes, self.setup.catalog, self.setup.speculates))

    async def _resume(
        self, paused: PausedSnippet, approvals: Mapping[int, Approval], dispatcher: SnippetDispatcher
    ) -> RunCodeText | PausedSnippet:
        snippet = _Snippet(paused.bound, paused.kept_as_last_value, paused.value_at, paused.assigned)
        parked = self._parked
        assert parked is not None  # ``resume`` checked
        await self._reset_worker()
        try:
            worker = await self._checkout()
        except _StateLost as exc:
            return RunCodeText(f"error: could not start the sandbox: {exc}", is_error=True)
        self._worker = worker
        self._checked_version = -1
        capture = PrintCapture(self.limits.max_print_bytes)
        capture("stdout", paused.printed)
        capture.dropped += paused.printed_dropped

        async def start() -> Any:
            snapshot = await worker.load_snapshot(
                parked,
                external_lookup={HOST_CALL: dispatcher.call},
                os=dispatcher.deny_os,
                print_callback=capture,
            )
            # Loaded: from here on the worker holds the REPL (a failure resets it as any run's would).
            self._parked, self.paused_as = None, None
            if not isinstance(snapshot, pm.AsyncFutureSnapshot):
                raise RuntimeError("the paused snippet did not load as one waiting for its calls")
            outcomes = await asyncio.gather(
                *(_decided(dispatcher, call, approvals.get(call.call_id)) for call in paused.held)
            )
            snapshot = await snapshot.resume(
                {call.call_id: settled(outcome) for call, outcome in zip(paused.held, outcomes, strict=True)}
            )
            return await drive(snapshot, _holder(dispatcher), {})

        remaining = self.limits.wall_timeout - paused.elapsed
        return await self._supervise(worker, start, dispatcher, capture, remaining, snippet)

    async def _supervise(
        self,
        worker: pm.AsyncMontySession,
        start: Callable[[], Awaitable[Any]],
        dispatcher: SnippetDispatcher,
        capture: PrintCapture,
        remaining: float,
        snippet: _Snippet,
    ) -> RunCodeText | PausedSnippet:
        """Run a started snippet to its result under the wall clock, the worker watch and the
        interrupt rules; ``SnippetHeld`` makes it a ``PausedSnippet``."""
        bound = snippet.bound
        feed: asyncio.Future[Any] | None = None
        clock_started = asyncio.get_running_loop().time()
        try:
            watch = _worker_watch(self.setup.sandbox.exit_watch(worker), dispatcher)
            async with WallClock(max(remaining, 0.0)) as clock:
                dispatcher.clock = clock
                with watch:
                    feed = asyncio.ensure_future(start())
                    # Shielded: a cancel that reached the feed would lose the REPL (pydantic-monty);
                    # a cancel from outside interrupts the snippet instead (``_interrupted``).
                    value = await asyncio.shield(feed)
        except SnippetHeld as held:
            ran = self.limits.wall_timeout - remaining + asyncio.get_running_loop().time() - clock_started
            return await self._pause(held, worker, dispatcher, capture, snippet, ran)
        except TimeoutError:
            dispatcher.cancel_in_flight()
            await self._reset(discard=True)
            await _retrieve(feed)
            report = dispatcher.calls_report()
            if dispatcher.exhausted is not None:  # it caught the budget error and went on
                return self._format_error(dispatcher.exhausted, state_reset=True, report=report)
            return self._format_error(self._wall_clock_text(ran=True), report=report)
        except asyncio.CancelledError:
            # The run was cancelled from outside (Ctrl-C, a client's cancel, shutdown): the tool
            # calls it awaits fail inside the snippet, which ends and keeps its REPL; only one
            # stuck in computation that cannot be interrupted is stopped, and its REPL reset.
            kept = await asyncio.shield(self._interrupted(feed, dispatcher, bound))
            report = dispatcher.calls_report()
            if report is not None:  # nobody reads a result now: the report goes to the log
                mutated = any(call.mutating for call in dispatcher.calls)
                log_event("code_mode.cancelled", logging.WARNING if mutated else logging.INFO, calls=report)
            if not kept:
                await asyncio.shield(self._reset(discard=True))
                self._restarted = True
            raise
        except _TypeCheckRejected as exc:
            return RunCodeText(str(exc), is_error=True)
        except pm.MontyError as exc:
            return await self._error_result(exc, worker, snippet, dispatcher)
        except RuntimeError as exc:  # pydantic-monty reports a dead worker as a plain RuntimeError
            await self._reset(discard=True)
            return self._format_error(
                f"RuntimeError: {exc}", state_reset=True, report=dispatcher.calls_report()
            )
        self._remember(bound)
        if dispatcher.exhausted is not None:
            return self._format_error(dispatcher.exhausted, report=dispatcher.calls_report())
        await self._refresh_note(worker)
        return format_outcome(
            SnippetOutcome(value=value, printed=capture.text, printed_truncated_bytes=capture.dropped),
            max_chars=self.limits.max_result_chars,
            kept_as=LAST_VALUE if snippet.kept_as_last_value else None,
            assigned=snippet.assigned,
        )

    async def _pause(
        self,
        held: SnippetHeld,
        worker: pm.AsyncMontySession,
        dispatcher: SnippetDispatcher,
        capture: PrintCapture,
        snippet: _Snippet,
        ran: float,
    ) -> PausedSnippet | RunCodeText:
        """The snippet waits for a person: its snapshot is parked as the REPL's state (saved as any
        parked REPL is), the worker goes back, and the ``PausedSnippet`` says what it waits on."""
        try:
            snapshot = held.snapshot.dump()
        except Exception as exc:  # a worker that died at the pause: nothing to resume
            await self._reset(discard=True)
            return self._format_error(
                f"error: the sandbox worker failed while pausing the snippet: {_error_text(exc)}",
                state_reset=True,
                report=dispatcher.calls_report(),
            )
        self._worker = None
        self.setup.room.leave(self)
        await asyncio.shield(release(worker, discard=True))  # it is mid-feed: no other snippet can use it
        self._parked = snapshot
        self._remember(snippet.bound)  # bound when it ends, resumed or abandoned
        paused = PausedSnippet(
            id=new_pause_id(),
            held=tuple(held.held.values()),
            calls=tuple(dispatcher.calls),
            suspensions=dispatcher.suspensions,
            printed=capture.text,
            printed_dropped=capture.dropped,
            elapsed=ran,
            bound=snippet.bound,
            kept_as_last_value=snippet.kept_as_last_value,
            value_at=snippet.value_at,
            assigned=snippet.assigned,
        )
        self.paused_as = paused.id
        log_event("code_mode.paused", pause=paused.id, held=[call.tool for call in paused.held])
        return paused

    async def _interrupted(
        self, feed: asyncio.Future[Any] | None, dispatcher: SnippetDispatcher, bound: tuple[str, ...]
    ) -> bool:
        """Interrupt a snippet whose run was cancelled; True when it ended and its REPL is kept."""
        if feed is None:  # cancelled before the snippet started: nothing to keep or lose
            return True
        dispatcher.interrupt()
        await asyncio.wait({feed}, timeout=INTERRUPT_GRACE_SECONDS)
        if not feed.done():  # computing, not awaiting a tool: only stopping the worker ends it
            feed.cancel()
            await _retrieve(feed)
            return False
        error = feed.exception() if not feed.cancelled() else asyncio.CancelledError()
        if error is None or isinstance(error, pm.MontyRuntimeError):
            self._remember(bound)  # a feed is not transactional: names bound before stay bound
            return True
        return False

    def _wall_clock_text(self, *, ran: bool, chars: int = 0) -> str:
        limit = f"error: run_code exceeded its wall-clock limit of {seconds(self.limits.wall_timeout)}"
        if not ran:
            return f"{limit} while its {count(chars)} chars were read; nothing ran."
        return (
            f"{limit}; in-flight tool calls were cancelled and the REPL state was reset (variables are gone)."
        )

    async def _feed(
        self,
        worker: pm.AsyncMontySession,
        code: str,
        dispatcher: SnippetDispatcher,
        capture: PrintCapture,
        scan: SnippetScan,
        may_check: bool,
        *,
        pausing: bool = False,
    ) -> Any:
        # Stubs are fixed at checkout: after a catalog change the scope's snippets run unchecked.
        checked = may_check and self._checked_version == self.setup.catalog_version
        self._checked_snippets += checked
        self._probed, self._probed_names = None, None
        folded = None if pausing or checked else self._with_probe(code, scan)
        if folded is not None:  # the variables probe rides on the snippet's own feed: one round trip
            value, self._probed = await worker.feed_run(
                folded,
                external_lookup={HOST_CALL: dispatcher.call},
                os=dispatcher.deny_os,
                print_callback=capture,
                skip_type_check=True,
            )
            return value

        async def feed(check: bool) -> Any:
            if pausing:
                snapshot = await worker.feed_start(
                    code,
                    external_lookup={HOST_CALL: dispatcher.call},
                    os=dispatcher.deny_os,
                    print_callback=capture,
                    skip_type_check=not check,
                )
                return await drive(snapshot, _holder(dispatcher), {})
            return await worker.feed_run(
                code,
                external_lookup={HOST_CALL: dispatcher.call},
                os=dispatcher.deny_os,
                print_callback=capture,
                skip_type_check=not check,
            )

        try:
            return await feed(checked)
        except pm.MontyTypingError as exc:
            launched = dispatcher.speculations.launched if dispatcher.speculations is not None else 0
            refused = rejection(exc.display(), code, self.setup.catalog, scan.bound, launched)
            if refused is not None:
                raise _TypeCheckRejected(refused) from None
        return await feed(False)  # the checker was unsure: Monty decides

    def _format_error(
        self, text: str, *, state_reset: bool = False, report: str | None = None
    ) -> RunCodeText:
        return format_error(
            text, state_reset=state_reset, max_chars=self.limits.max_result_chars, calls_report=report
        )

    async def _error_result(
        self,
        exc: pm.MontyError,
        worker: pm.AsyncMontySession,
        snippet: _Snippet,
        dispatcher: SnippetDispatcher,
    ) -> RunCodeText:
        """A snippet that raised; one that was stopped (crash, time limit, heap cap) also gets the
        report of its nested calls."""
        if isinstance(exc, pm.MontyCrashedError):
            await self._reset(discard=True)
            if exc.timed_out:
                reason = (
                    f"was killed: the snippet ran past its {seconds(self.limits.code_timeout)} "
                    "execution limit inside one long operation (such as a huge integer power) "
                    "that cannot be interrupted"
                )
            else:
                reason = f"crashed ({exc})"
            report = dispatcher.calls_report()
            return self._format_error(f"error: the sandbox worker {reason}", state_reset=True, report=report)
        # The tool wrappers live in the scope's first feed; their frames are noise to the model.
        text = as_written(hide_frames(_error_text(exc), PREAMBLE_FILENAME), snippet.value_at)
        lines = text.strip().splitlines()
        last = lines[-1] if lines else ""
        if last.startswith("MemoryError"):
            # After a heap overrun the worker keeps its failed allocations counted: start afresh.
            await self._reset(discard=True)
            return self._format_error(text, state_reset=True, report=dispatcher.calls_report())
        self._remember(snippet.bound)  # a feed is not transactional: names before the error stay bound
        await self._refresh_note(worker)  # so the note says which of them the snippet got to
        stopped = last.startswith("TimeoutError")  # the execution time limit
        return self._format_error(text, report=dispatcher.calls_report() if stopped else None)

    async def _ensure_worker(self) -> pm.AsyncMontySession:
        if self._worker is not None and not self.setup.sandbox.holds(self._worker):
            await self._reset()  # its pool was closed with an earlier event loop
            self._restarted = True
        if self._worker is not None:
            if self._catalog_version != self.setup.catalog_version:
                await self._feed_new_wrappers(self._worker)
            return self._worker
        version = self.setup.catalog_version  # the stubs below are made from this catalog
        worker = await self._checkout()
        room = self.setup.room
        try:
            restored = await self._restore(worker)
            if not restored:
                await self._start(worker)
        except BaseException as exc:
            room.leave(self)
            await asyncio.shield(release(worker, discard=True))
            if not isinstance(exc, Exception):
                raise
            raise _StateLost(f"the code preamble failed: {_error_text(exc)}") from None
        self._worker = worker
        # A restored REPL is not type-checked: the checker would start without its history (every
        # earlier variable unknown, so unsure, so run twice) and costs ~20 ms to start per checkout.
        self._checked_version = -1 if restored else version
        self._checked_snippets = 0
        if self._catalog_version != self.setup.catalog_version:
            await self._feed_new_wrappers(worker)  # restored wrappers and helpers are replaced
        return worker

    async def _checkout(self) -> pm.AsyncMontySession:
        """A worker of this scope's own, counted in the room; ``_StateLost`` when none can be had."""
        room = self.setup.room
        try:
            await room.enter(self)
        except NoWorker as exc:
            raise _StateLost(str(exc)) from None
        try:
            worker = await self.setup.sandbox.checkout(self.setup.type_check_stubs())
        except BaseException as exc:  # a cancel too: the reservation must not leak
            room.abandon()
            if not isinstance(exc, Exception):
                raise
            raise _StateLost(str(exc)) from None
        room.entered(self)
        return worker

    async def _start(self, worker: pm.AsyncMontySession) -> None:
        """A fresh REPL: the helpers, one wrapper per tool, the operator's preamble."""
        await worker.feed_run(self.setup.preamble()[0], skip_type_check=True)
        if self.setup.operator_preamble:
            await worker.feed_run(
                self.setup.operator_preamble,
                os=refuse_os,
                print_callback=_discard_print,
                skip_type_check=True,
            )
        self._catalog_version = self.setup.catalog_version

    async def load_state(self, key: str) -> StateLoad:
        """Take up the scope saved under ``key``; it is loaded into a worker by the first snippet."""
        store = self.setup.store
        if store is None or self._worker is not None or self._parked is not None:
            return "none"
        try:
            async with asyncio.timeout(STORE_TIMEOUT):
                stored = await store.load(key)
        except Exception as exc:  # an unreachable store only means starting empty
            log_event("state.load_failed", logging.WARNING, session=key, error=_describe(exc))
            return "none"
        if stored is None:
            return "none"
        self._stamp = stored.stamp
        try:
            saved = unpack(stored.data)
        except StateDiscarded as exc:
            log_event("state.discarded", logging.WARNING, session=key, reason=str(exc))
            return "discarded"
        self._parked, self._note, self._bound = saved.dump, saved.note, dict.fromkeys(saved.bound)
        self._variables = [BoundVariable(*row) for row in saved.variables]
        self.paused_as = saved.paused_as
        # The dump holds the saving process's helpers and wrappers: unless they are this process's
        # own, this process's replace them.
        same = saved.preamble is not None and saved.preamble == self.setup.preamble()[1]
        self._catalog_version = self.setup.catalog_version if same else -1
        self._changed = False
        return "restored"

    async def sync_state(self, key: str) -> bool:
        """Before a run, where several processes share the store (serve-mcp behind a load balancer,
        under the session's lease): if the saved scope changed since this process last saved or
        loaded it, drop the copy held here and take up the saved one. True when the copy here is
        now the saved one; False when that is unknown (the store failed): the run then must not
        save, or it could overwrite newer state with older."""
        store = self.setup.store
        if store is None:
            return False
        try:
            async with asyncio.timeout(STORE_TIMEOUT):
                stamp = await store.stamp(key)
        except Exception as exc:
            log_event("state.load_failed", logging.WARNING, session=key, error=_describe(exc))
            return False
        if stamp == self._stamp:
            return True
        async with self._lock:
            await self._reset()
        if stamp is None:  # saved state that is gone (too big to save, expired): nothing to trust
            self._restarted = True
            return True
        loaded = await self.load_state(key)
        self._restarted = loaded != "restored"
        return loaded != "none"  # "none": it did not load, but may still be there

    def forget_stamp(self) -> None:
        """The copy here went on without being saved: the next ``sync_state`` takes up the saved one."""
        self._stamp = None

    async def save_state(self, key: str) -> None:
        """Save the scope under ``key`` if a snippet ran since the last save; a scope with nothing
        left (never used, or reset) removes what was saved before. A failed save is tried again
        after the next run."""
        store = self.setup.store
        if store is None or not self._changed:
            return
        try:
            async with self._lock:
                dump = self._parked
                if self._worker is not None:
                    try:
                        dump = await self._worker.dump()
                    except Exception as exc:
                        log_event("state.not_saved", logging.WARNING, session=key, reason=_error_text(exc))
                        return
        finally:
            self.setup.room.poke()
        if dump is not None and len(dump) > self.limits.max_state:
            largest = sorted(self._variables, key=lambda v: v.size, reverse=True)[:3]
            log_event(
                "state.not_saved",
                logging.WARNING,
                session=key,
                reason=f"the REPL state is {count(len(dump))} bytes, over {setting('max_state')} "
                f"({count(self.limits.max_state)})",
                largest=", ".join(v.describe() for v in largest),
            )
            dump = None  # what was saved before is stale now: it goes too
        try:
            async with asyncio.timeout(STORE_TIMEOUT):
                if dump is None:
                    await store.delete(key)
                    self._stamp = None
                else:
                    current = self._catalog_version == self.setup.catalog_version
                    preamble = self.setup.preamble()[1] if current else None
                    variables = tuple((v.name, v.type_name, v.size) for v in self._variables)
                    bound = tuple(self._bound)
                    saved = SavedScope(dump, self._note, bound, preamble, self.paused_as, variables)
                    self._stamp = await store.save(key, pack(saved))
        except Exception as exc:
            log_event("state.not_saved", logging.WARNING, session=key, reason=_describe(exc))
            return
        self._changed = False

    async def _restore(self, worker: pm.AsyncMontySession) -> bool:
        """Load the parked dump into ``worker``; False when there is none or it would not load
        (the scope then starts afresh and its next result says so)."""
        if self._parked is None:
            return False
        try:
            if self.paused_as is not None:
                await self._finish_abandoned(worker, self._parked)
            else:
                await worker.load_session(self._parked)
        except Exception as exc:
            log_event("code_mode.restore_failed", logging.WARNING, error=_error_text(exc))
            self._parked = None
            self._forget_variables()
            self._restarted = True
            return False
        self._parked = None  # only once it is loaded: a cancel before keeps it
        return True

    async def _finish_abandoned(self, worker: pm.AsyncMontySession, snapshot: bytes) -> None:
        """A paused snippet nobody resumed (a new snippet came first, or the answer never did): it
        ends as if the person had declined, every later mutating call refused too, its output
        unread. What it bound stays, as after any snippet that raised."""
        log_event("code_mode.pause_abandoned", pause=self.paused_as)
        refusal = Approval(False, ABANDONED_REASON)
        dispatcher = self._dispatcher(MutationGate("ask", _Refusing(refusal)), None)
        loaded = await worker.load_snapshot(
            snapshot,
            external_lookup={HOST_CALL: dispatcher.call},
            os=dispatcher.deny_os,
            print_callback=_discard_print,
        )
        self.paused_as, self._abandoned = None, True
        try:
            async with asyncio.timeout(self.limits.wall_timeout):
                if isinstance(loaded, pm.AsyncFutureSnapshot):
                    error = PermissionError(f"this call was not run: {ABANDONED_REASON}")
                    loaded = await loaded.resume({i: {"exception": error} for i in loaded.pending_call_ids})
                await drive(loaded, lambda _: None, {})
        except pm.MontyRuntimeError:
            pass  # it raised: what it bound before stays, as for any snippet
        finally:
            await dispatcher.settle()

    async def _feed_new_wrappers(self, worker: pm.AsyncMontySession) -> None:
        """The wrapped servers' tools changed: define the current functions (variables stay, those
        that shadow a helper too)."""
        preamble = self.setup.preamble()[0]
        # A variable that shadows what the preamble binds (a helper, say) is put back after it;
        # one named like a tool function is not: the tool's wrapper must be what the name calls.
        catalog = self.setup.catalog
        shadowing = [
            name for name in self._bound if name.isidentifier() and name in preamble and name not in catalog
        ]
        try:
            await worker.feed_run(keeping(preamble, shadowing), skip_type_check=True)
        except Exception as exc:
            await self._reset(discard=True)
            self._restarted = True
            raise _StateLost(f"the new tool functions could not be defined: {_error_text(exc)}") from None
        self._catalog_version = self.setup.catalog_version

    def _remember(self, bound: tuple[str, ...]) -> None:
        for name in note_candidates(list(bound)):
            self._bound.pop(name, None)
            self._bound[name] = None

    def _may_check(self, code: str, scan: SnippetScan) -> bool:
        """Whether ``code`` is type-checked, unless the catalog changed since checkout (``_feed``)."""
        # Only a snippet that names a catalog function can make a mistake the check is sure of.
        # The checker re-reads the REPL's checked history on every feed (45 ms after 300
        # snippets, measured), so a long-lived REPL stops checking after TYPE_CHECKED_SNIPPETS.
        return (
            scan.uses_functions
            and self._checked_snippets < TYPE_CHECKED_SNIPPETS
            and self._check_can_catch(code, scan)
        )

    def _check_can_catch(self, code: str, scan: SnippetScan) -> bool:
        """Whether the type check might stop ``code`` (``type_check.check_can_catch``); a long
        snippet is not parsed again on the event loop, and is checked."""
        tree = scan.tree
        if tree is None and len(code) <= SCAN_ON_LOOP_CHARS:
            tree = parse_snippet(code)
        return tree is None or check_can_catch(tree, self.setup.catalog, scan.nodes)

    def _with_probe(self, code: str, scan: SnippetScan) -> str | None:
        """``code`` (as fed: its value bound to ``_``) followed by the variables probe of the names it
        may have changed (``names_to_probe``), its value ``(the snippet's value, the probe's rows)``;
        ``None`` when there is nothing to probe."""
        names = names_to_probe(code, list(self._bound), list(scan.bound))
        self._probed_names = set(names)
        if not names:  # nothing it did can show in the note: no probe, and every row stays
            self._probed = []
            return None
        probe = probe_source(list(reversed(names))).rsplit("\n", 1)[0]  # its statements, not its value
        value = LAST_VALUE if scan.value_at is not None else scan.assigned or "None"
        return f"{code}\n{probe}\n({value}, _asyncai_probe)"

    async def _refresh_note(self, worker: pm.AsyncMontySession) -> None:
        names = list(reversed(self._bound))
        if not names:
            self._note = None
            return
        rows, self._probed = self._probed, None
        probed, self._probed_names = self._probed_names, None
        if rows is None:
            probed = None
            try:
                rows = await worker.feed_run(probe_source(names), skip_type_check=True)
            except Exception as exc:  # a failed probe only means the note is missing
                log_event("code_mode.probe_failed", logging.INFO, error=str(exc))
                return
        seen = {str(n): BoundVariable(str(n), str(t), int(s)) for n, t, s in rows or []}
        if probed is None:  # every name was probed: those it did not find are gone
            variables = list(seen.values())
        else:  # the others hold what the last probe saw
            before = {variable.name: variable for variable in self._variables}
            kept = (seen.get(name) or before.get(name, BoundVariable(name, "?")) for name in names)
            variables = [v for v in kept if v.name in seen or v.name not in probed]
        self._bound = {v.name: None for v in reversed(variables)}
        self._variables = variables
        self._note = format_note(variables)

    def _forget_variables(self) -> None:
        self._bound.clear()
        self._variables = []
        self._note = None

    async def _reset_worker(self) -> None:
        """Give the worker back, keeping what is known of the REPL (a snapshot replaces its state)."""
        worker, self._worker = self._worker, None
        if worker is not None:
            self.setup.room.leave(self)
            await release(worker, discard=True)

    async def _reset(self, *, discard: bool = False) -> None:
        worker, self._worker = self._worker, None
        self._parked = None
        self.paused_as = None
        self._stamp = None  # nothing held here matches a save any more (``sync_state`` reloads)
        self._forget_variables()
        self.setup.room.leave(self)
        if worker is not None:
            await release(worker, discard=discard)

    async def aclose(self) -> None:
        async with self._lock:
            await self._reset()
        self.setup.room.poke()


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
class _Snippet:
    """What the end of a run needs to know of its snippet."""

    bound: tuple[str, ...]
    kept_as_last_value: bool
    value_at: tuple[int, int] | None = None
    """Where its last value was bound to ``_`` (``bind_last_value``), for tracebacks as written."""
    assigned: str | None = None
    """What its closing assignment assigned, when that is its value (``SnippetScan.assigned``)."""


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


def _tool_output(text: str, result: RunCodeText, audit: dict[str, Any] | None) -> ToolCallOutput:
    """``run_code``'s output: ``text`` for the model, and for an embedder the value as data too."""
    structured = None if result.is_error else {"value": result.value}
    return ToolCallOutput(content=text, is_error=result.is_error, structured=structured, audit=audit)


def _discard_print(stream: str, text: str) -> None:
    """Preamble output must not reach the host's stdout."""


class EagerSnippet:
    """A ``run_code`` snippet fed to its REPL while the model is still writing it.

    Each complete top-level statement that ``eager.runs_early`` allows runs as soon as the next one
    has begun; feeding stops at the first it does not allow, and the rest (always at least the last
    statement, whose value is the snippet's) runs once ``finish`` brings the whole call and the whole
    snippet compiled and passed the scan. A mutating call reached anyway before then waits for that.
    One dispatcher, one print capture and one wall clock serve the whole snippet; the time spent
    waiting for the model does not count. The scope is held from the start.
    """

    def __init__(self, scope: ReplScope, approver: Approver | None, activity: Activity | None) -> None:
        self.scope = scope
        self.ran: list[str] = []
        """The first line of each statement that ran early, in order."""
        self._prefix = ""
        self._fed_lines = 0
        self._running = False
        self._changed = asyncio.Event()
        loop = asyncio.get_running_loop()
        self._arguments: asyncio.Future[dict[str, Any] | None] = loop.create_future()
        self._release: asyncio.Future[Approval] = loop.create_future()
        """What a mutating call reached before the end waits for: allowed once the whole snippet
        passed its checks, refused otherwise."""
        gate = MutationGate(scope.setup.mutations, approver or scope.setup.approver)
        self._dispatcher = scope._dispatcher(gate, activity)
        self._dispatcher.mutations_held = self._release
        self._speculations = Speculations() if scope.setup.speculate else None
        self._dispatcher.speculations = self._speculations
        self._scanned_lines = 0
        self._whole: SnippetScan | None = None
        """The finished snippet's scan, once ``finish`` brought it."""
        self._span = start_snippet(scope.setup.tracing)  # the run so far: the stream is its first part
        self._dispatcher.span = self._span
        self._task = asyncio.ensure_future(self._traced())

    def update(self, code: str) -> None:
        """The ``code`` argument as streamed so far."""
        if code != self._prefix:
            self._prefix = code
            self._changed.set()
            self._speculate()

    def _speculate(self) -> None:
        """Launch the literal read-only calls of the lines that arrived since the last look."""
        if self._speculations is None or self._arguments.done():
            return
        lines = self._prefix.splitlines(keepends=True)
        whole = len(lines) if lines and lines[-1].endswith("\n") else len(lines) - 1
        catalog, allowed = self.scope.setup.catalog, self.scope.setup.speculates
        for line in lines[self._scanned_lines : whole]:
            self._dispatcher.speculate(literal_calls(line, catalog, allowed))
        self._scanned_lines = max(self._scanned_lines, whole)

    async def _traced(self) -> ToolCallOutput:
        output: ToolCallOutput | None = None
        error: str | None = None
        try:
            output = await self._work()
            return output
        except BaseException as exc:
            error = ended_by(exc)
            raise
        finally:
            arguments = self._arguments.result() if self._arguments.done() else None
            code = arguments.get("code") if arguments is not None else self._prefix
            tracing = self.scope.setup.tracing
            end_snippet(
                self._span, tracing, code=code if isinstance(code, str) else None, output=output, error=error
            )

    async def finish(self, arguments: dict[str, Any]) -> ToolCallOutput:
        """The call is complete: run the rest of the snippet (if it passes) and return its result."""
        refusal = self._check(arguments)
        if not self._release.done():
            self._release.set_result(Approval(True) if refusal is None else Approval(False, refusal))
        if not self._arguments.done():
            self._arguments.set_result(arguments)
        return await self._task

    async def abandon(self) -> str | None:
        """The call never completed (a cut stream, unusable arguments): nothing more runs. A report
        of the statements that ran early, if any did."""
        if not self._release.done():
            self._release.set_result(Approval(False, CUT_OFF))
        if not self._arguments.done():
            self._arguments.set_result(None)
        output = await self._task
        return output.content if self.ran else None

    def started(self) -> bool:
        """Whether a statement has begun to run (and may have left something behind)."""
        return self._fed_lines > 0 or self._running

    def _fed(self) -> str:
        return "".join(self._prefix.splitlines(keepends=True)[: self._fed_lines])

    def _check(self, arguments: Mapping[str, Any]) -> str | None:
        """Why the rest of the snippet must not run (``None``: it may), from the whole call."""
        code = arguments.get("code")
        if not isinstance(code, str):
            return "the call has no code"
        if not code.startswith(self._fed()):
            return "the finished code differs from the code that streamed"
        if arguments.get("restart") in (True, "true", "True", 1):
            return "restart was asked for after statements had already run"
        if parse_snippet(code) is None:
            return "the finished snippet does not compile"
        self._whole = scan_snippet(code, self.scope.setup.catalog.keys())
        refusal = self.scope._refusal(self._whole)
        if refusal is not None:
            reason = refusal.text.removeprefix("error: ").removesuffix(" Nothing was run.")
            return f"the finished snippet was refused ({reason})"
        return None

    async def _work(self) -> ToolCallOutput:
        scope = self.scope
        scope.setup.room.touch(scope)
        scope._changed = True
        try:
            async with scope._lock:
                return await self._run()
        finally:
            scope.setup.room.poke()

    async def _run(self) -> ToolCallOutput:
        scope, dispatcher = self.scope, self._dispatcher
        capture = PrintCapture(scope.limits.max_print_bytes)
        spent = 0.0
        bound: set[str] = set()
        failed: RunCodeText | None = None
        feeding = True
        while not self._arguments.done():
            for statement in complete_statements(self._prefix, self._fed_lines) if feeding else ():
                scan = scan_snippet(statement.source, scope.setup.catalog.keys())
                # A name the REPL holds may shadow a helper or a built-in: not the function it was.
                rebound = bound.union(scope._bound)
                if (
                    not runs_early(statement, scope.setup.catalog, rebound)
                    or scope._refusal(scan) is not None
                ):
                    feeding = False
                    break
                started = asyncio.get_running_loop().time()
                self._running = True
                result = await self._feed(statement, scan, capture, spent)
                self._running = False
                spent += asyncio.get_running_loop().time() - started
                self._fed_lines = statement.start_line - 1 + statement.source.count("\n")
                self.ran.append(statement.source.splitlines()[0])
                bound.update(scan.bound)
                log_event("code_mode.eager_statement", line=statement.start_line, is_error=result.is_error)
                if result.is_error:  # it raised: the snippet ends here, as it would have anyway
                    failed, feeding = result, False
                    break
            await _first_of(self._changed.wait(), self._arguments)
            self._changed.clear()
        arguments = self._arguments.result()
        decision = self._release.result()
        await dispatcher.settle()
        try:
            return await self._rest(arguments, decision, failed, capture, spent)
        finally:
            if self._speculations is not None:
                await self._speculations.cancel_rest()

    async def _rest(
        self,
        arguments: dict[str, Any] | None,
        decision: Approval,
        failed: RunCodeText | None,
        capture: PrintCapture,
        spent: float,
    ) -> ToolCallOutput:
        """After the call is complete: the rest of the snippet, or why it does not run."""
        dispatcher = self._dispatcher
        if arguments is None:
            return self._stopped(CUT_OFF)
        if not self.ran:  # nothing ran early: the whole snippet runs as it would have
            return await self._run_whole(arguments)
        if not decision.allowed:
            return self._stopped(decision.reason)
        if failed is not None:
            return self._output(failed, arguments)
        # Blank lines in place of what ran: the rest keeps its line numbers in tracebacks.
        tail = "\n" * self._fed_lines + arguments["code"][len(self._fed()) :]
        bound = self._whole.bound if self._whole is not None else None
        rest = await self.scope._run(
            tail, dispatcher, pausing=False, capture=capture, spent=spent, bound=bound
        )
        assert isinstance(rest, RunCodeText)  # a run that does not pause
        if self.ran:
            log_event("code_mode.eager", statements=len(self.ran), calls=len(dispatcher.calls))
        return self._output(rest, arguments)

    async def _run_whole(self, arguments: dict[str, Any]) -> ToolCallOutput:
        code = arguments.get("code")
        if not isinstance(code, str):
            return ToolCallOutput.error('error: run_code needs {"code": "<python source>"}')
        if arguments.get("restart") in (True, "true", "True", 1):
            await self.scope._reset()
        self._dispatcher.mutations_held = None
        result = await self.scope._run(code, self._dispatcher, pausing=False)
        assert isinstance(result, RunCodeText)  # a run that does not pause
        return self._output(result, arguments)

    async def _feed(
        self, statement: Statement, scan: SnippetScan, capture: PrintCapture, spent: float
    ) -> RunCodeText:
        scope = self.scope
        numbered = "\n" * (statement.start_line - 1) + statement.source  # its lines as in the snippet
        try:
            worker = await scope._ensure_worker()
        except _StateLost as exc:
            return RunCodeText(f"error: could not start the sandbox: {exc}", is_error=True)
        outcome = await scope._supervise(
            worker,
            # A statement fed early keeps no value: the probe riding on its feed must not read ``_``.
            lambda: scope._feed(
                worker,
                numbered,
                self._dispatcher,
                capture,
                dataclasses.replace(scan, value_at=None, assigned=None),
                scope._may_check(numbered, scan),
            ),
            self._dispatcher,
            capture,
            scope.limits.wall_timeout - spent,
            _Snippet(scan.bound, False),
        )
        assert isinstance(outcome, RunCodeText)  # a feed that does not pause
        return outcome

    def _output(self, result: RunCodeText, arguments: Mapping[str, Any]) -> ToolCallOutput:
        return _tool_output(self.scope._noted(result, arguments), result, self._audit())

    def _audit(self) -> dict[str, Any]:
        audit = self._dispatcher.audit()
        if self.ran:
            audit["eager_statements"] = len(self.ran)
        return audit

    def _stopped(self, why: str) -> ToolCallOutput:
        """The snippet stopped after its early statements: say so, and what they were."""
        listed = "\n".join(f"- {line}" for line in self.ran)
        text = (
            f"error: {why}, so the rest of the snippet did not run. These statements had already run "
            f"while it streamed, and the REPL keeps what they did:\n{listed}"
            if self.ran
            else f"error: {why}; nothing ran."
        )
        report = self._dispatcher.calls_report()
        if report is not None:
            text = f"{text}\n{report}"
        return ToolCallOutput(content=text, is_error=True, audit=self._audit())


async def _first_of(waiting: Awaitable[Any], future: asyncio.Future[Any]) -> None:
    """Until ``waiting`` is done or ``future`` is."""
    task = asyncio.ensure_future(waiting)
    try:
        await asyncio.wait({task, future}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        task.cancel()
