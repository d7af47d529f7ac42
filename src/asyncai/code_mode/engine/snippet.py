"""``SnippetRun``: one ``run_code`` snippet through the engine's stages, ``read``, ``plan``, ``run``
and ``finish``, whether it arrived whole or is still streaming. A whole snippet is a stream that
arrived at once: both go down the same path."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from asyncai.activity import Activity
from asyncai.approvals.gate import Approval, Approver, MutationGate
from asyncai.code_mode.engine.contract import RunCodeText
from asyncai.code_mode.engine.finish import (
    ABANDONED_PAUSE,
    CUT_OFF,
    NEEDS_CODE,
    Written,
    error_result,
    stopped_text,
    tool_output,
    wall_clock_text,
)
from asyncai.code_mode.engine.pausing import PausedSnippet
from asyncai.code_mode.engine.plan import (
    Statement,
    complete_statements,
    finished_refusal,
    refusal,
    runs_early,
    type_check_wanted,
    wants_restart,
)
from asyncai.code_mode.engine.read import (
    SnippetScan,
    function_sources,
    literal_calls,
    literal_calls_in,
    scan_snippet,
    scan_snippet_off_loop,
)
from asyncai.code_mode.engine.run import PrintCapture, Runner, StateLost
from asyncai.code_mode.engine.setup import Repl
from asyncai.code_mode.engine.speculation import Speculations, arrived_lines
from asyncai.log import log_event
from asyncai.telemetry.spans import end_snippet, ended_by, start_snippet
from asyncai.tools.types import ToolCallOutput

Result = RunCodeText | PausedSnippet


@dataclass(frozen=True)
class _Stopped:
    """The rest of a streamed snippet does not run, for this reason."""

    why: str


class SnippetRun:
    """One snippet of a scope, from its first character to its result.

    ``ReplScope.call_tool`` gives it the whole call at once (``whole``); ``ReplScope.eager`` gives
    it the code as the model writes it (``update``), then the whole call (``finish``) or its end
    (``abandon``). While it streams, each complete top-level statement that ``plan.runs_early``
    allows runs as soon as the next one has begun; feeding stops at the first it does not allow,
    and the rest (always at least the last statement, whose value is the snippet's) runs once the
    whole call is there and passed its checks (a mutating call reached before then waits for
    that). A snippet that ran nothing early runs whole. One dispatcher, one print capture and one
    wall clock serve the whole snippet; the time spent waiting for the model does not count. The
    scope is held from the start.
    """

    def __init__(
        self,
        scope: Repl,
        approver: Approver | None,
        activity: Activity | None,
        *,
        streamed: bool = False,
        pausing: bool = False,
    ) -> None:
        self.scope = scope
        self.limits = scope.limits
        self.pausing = pausing
        self.ran: list[str] = []
        """The first line of each statement that ran early, in order."""
        self._prefix = ""
        self._fed_lines = 0
        self._spent = 0.0
        """Wall-clock seconds the statements that ran early took."""
        self._running = False
        self._changed = asyncio.Event()
        loop = asyncio.get_running_loop()
        self._arguments: asyncio.Future[dict[str, Any] | None] = loop.create_future()
        self._release: asyncio.Future[Approval] = loop.create_future()
        """What a mutating call reached before the end waits for: allowed once the whole snippet
        passed its checks, refused otherwise."""
        setup = scope.setup
        asking = None if pausing else approver or setup.approver
        self.dispatcher = setup.dispatcher(MutationGate(setup.mutations, asking), activity, scope.skills)
        self.runner = Runner(scope, self.dispatcher, PrintCapture(self.limits.max_print_bytes))
        if streamed:
            self.dispatcher.mutations_held = self._release
            self.dispatcher.speculations = Speculations() if setup.speculate else None
        self._scanned_lines = 0
        self._whole: SnippetScan | None = None
        """The finished snippet's scan, once ``finish`` brought it."""
        self._audit: dict[str, Any] | None = None
        self._span = start_snippet(setup.tracing)  # a streamed run: the stream is its first part
        self.dispatcher.span = self._span
        self._task = asyncio.ensure_future(self._traced(self._work)) if streamed else None

    async def whole(self, arguments: dict[str, Any]) -> ToolCallOutput | PausedSnippet:
        """The snippet that arrived whole: run it."""
        self._prefix = arguments["code"]
        self._arguments.set_result(arguments)
        return await self._traced(self._work)

    async def resumed(
        self, paused: PausedSnippet, approvals: Mapping[int, Approval]
    ) -> ToolCallOutput | PausedSnippet:
        """Go on with a paused snippet of this scope (``ReplScope.resume``)."""
        self.dispatcher.calls = list(paused.calls)
        self.dispatcher.suspensions = paused.suspensions
        return await self._traced(lambda: self._resume(paused, approvals))

    def update(self, code: str) -> None:
        """The ``code`` argument as streamed so far."""
        if code != self._prefix:
            self._prefix = code
            self._changed.set()
            self._speculate_lines()

    async def finish(self, arguments: dict[str, Any]) -> ToolCallOutput:
        """The call is complete: run the rest of the snippet (if it passes) and return its result."""
        refused, self._whole = finished_refusal(arguments, self._fed(), self.scope.setup.catalog)
        if not self._release.done():
            self._release.set_result(Approval(True) if refused is None else Approval(False, refused))
        if not self._arguments.done():
            self._arguments.set_result(arguments)
        return await self._streamed()

    async def abandon(self) -> str | None:
        """The call never completed (a cut stream, unusable arguments): nothing more runs. A report
        of the statements that ran early, if any did."""
        if not self._release.done():
            self._release.set_result(Approval(False, CUT_OFF))
        if not self._arguments.done():
            self._arguments.set_result(None)
        output = await self._streamed()
        return output.content if self.ran else None

    async def _streamed(self) -> ToolCallOutput:
        output = await self._task if self._task is not None else None
        assert isinstance(output, ToolCallOutput)  # a streamed run, which does not pause
        return output

    def started(self) -> bool:
        """Whether a statement has begun to run (and may have left something behind)."""
        return self._fed_lines > 0 or self._running

    def _fed(self) -> str:
        return "".join(self._prefix.splitlines(keepends=True)[: self._fed_lines])

    async def _traced(
        self, work: Callable[[], Awaitable[ToolCallOutput | PausedSnippet]]
    ) -> ToolCallOutput | PausedSnippet:
        """``work`` under the snippet's span, which ends with what it did."""
        output: ToolCallOutput | PausedSnippet | None = None
        error: str | None = None
        try:
            output = await work()
            return output
        except BaseException as exc:
            error = ended_by(exc)
            raise
        finally:
            arguments = self._arguments.result() if self._arguments.done() else None
            code = arguments.get("code") if arguments is not None else self._prefix
            end_snippet(
                self._span,
                self.scope.setup.tracing,
                code=code if isinstance(code, str) else None,
                output=output if isinstance(output, ToolCallOutput) else None,
                audit=self._audit,
                paused=isinstance(output, PausedSnippet),
                error=error,
            )

    async def _work(self) -> ToolCallOutput | PausedSnippet:
        async with self.scope.in_use():
            failed = await self._early()
            arguments = self._arguments.result()
            try:
                result = await self._rest(arguments, failed)
            finally:
                if self.dispatcher.speculations is not None:
                    await self.dispatcher.speculations.cancel_rest()
            return await self._output(result, arguments)

    async def _resume(
        self, paused: PausedSnippet, approvals: Mapping[int, Approval]
    ) -> ToolCallOutput | PausedSnippet:
        scope = self.scope
        async with scope.in_use():
            if scope.paused_as != paused.id or not scope.parked:
                return ToolCallOutput.error(ABANDONED_PAUSE)
            scope.paused_as = None
            try:
                worker, parked = await scope.worker_for_resume()
            except StateLost as exc:
                result: Result = RunCodeText(f"error: could not start the sandbox: {exc}", is_error=True)
            else:
                result = await self.runner.resume(worker, paused, parked, approvals)
            if not isinstance(result, PausedSnippet):
                scope.restarted = False
            return await self._output(result, None)

    async def _output(
        self, result: Result | _Stopped, arguments: dict[str, Any] | None
    ) -> ToolCallOutput | PausedSnippet:
        """The finish: what ran becomes ``run_code``'s output, with the audit of its calls."""
        await self.dispatcher.settle()
        audit = self.dispatcher.audit()
        if self.ran:
            audit["eager_statements"] = len(self.ran)
        self._audit = audit
        if isinstance(result, PausedSnippet):
            return result
        if isinstance(result, _Stopped):
            text = stopped_text(result.why, self.ran, self.dispatcher.calls_report())
            return ToolCallOutput(content=text, is_error=True, audit=audit)
        told = None if arguments is None else self.scope.notice(bool(arguments.get("restart")))
        return tool_output(result, audit, told)

    async def _early(self) -> RunCodeText | None:
        """While the snippet streams: run each complete statement that may run early. The result of
        one that raised (the snippet ends there, as it would have anyway)."""
        scope, catalog = self.scope, self.scope.setup.catalog
        loop = asyncio.get_running_loop()
        bound: set[str] = set()
        failed: RunCodeText | None = None
        feeding = True
        while not self._arguments.done():
            for statement in complete_statements(self._prefix, self._fed_lines) if feeding else ():
                scan = scan_snippet(statement.source, catalog.keys())
                # A name the REPL holds may shadow a helper or a built-in: not the function it was.
                rebound = bound.union(scope.known.bound)
                if not runs_early(statement, catalog, rebound) or refusal(scan, catalog) is not None:
                    feeding = False
                    break
                started = loop.time()
                self._running = True
                result = await self._statement(statement, scan)
                self._running = False
                self._spent += loop.time() - started
                self._fed_lines = statement.start_line - 1 + statement.source.count("\n")
                self.ran.append(statement.source.splitlines()[0])
                bound.update(scan.bound)
                log_event("code_mode.eager_statement", line=statement.start_line, is_error=result.is_error)
                if result.is_error:
                    failed, feeding = result, False
                    break
            await _first_of(self._changed.wait(), self._arguments)
            self._changed.clear()
        if self.ran:
            await self.dispatcher.settle()
        return failed

    async def _statement(self, statement: Statement, scan: SnippetScan) -> RunCodeText:
        """One statement run early: its lines numbered as in the snippet, keeping no value (the
        probe riding on its feed must not read ``_``)."""
        numbered = "\n" * (statement.start_line - 1) + statement.source
        check = type_check_wanted(numbered, scan, self.scope.setup.catalog, self.scope.checked_snippets)
        started = asyncio.get_running_loop().time() - self._spent
        unvalued = dataclasses.replace(scan, value_at=None, assigned=None)
        functions = function_sources(statement.source, scan.tree) if scan.defined else ()
        written = Written(scan.bound, False, functions=functions)
        outcome = await self.runner.run(numbered, unvalued, check, written, started, False)
        assert isinstance(outcome, RunCodeText)  # a feed that does not pause
        return outcome

    async def _rest(self, arguments: dict[str, Any] | None, failed: RunCodeText | None) -> Result | _Stopped:
        """Once the call is complete: the rest of the snippet, or why it does not run."""
        if arguments is None:
            return _Stopped(CUT_OFF)
        code = arguments.get("code")
        if not self.ran:  # nothing ran early: the whole snippet runs as it would have
            if not isinstance(code, str):
                return RunCodeText(NEEDS_CODE, is_error=True)
            if wants_restart(arguments):
                await self.scope.reset()
            self.dispatcher.mutations_held = None
            return await self._run(code)
        decision = self._release.result()
        if not decision.allowed:
            return _Stopped(decision.reason)
        if failed is not None:
            self._note_as_whole()
            return failed
        assert isinstance(code, str)  # the release allowed it
        # Blank lines in place of what ran: the rest keeps its line numbers in tracebacks.
        tail = "\n" * self._fed_lines + code[len(self._fed()) :]
        bound = self._whole.bound if self._whole is not None else None
        rest = await self._run(tail, bound=bound)
        log_event("code_mode.eager", statements=len(self.ran), calls=len(self.dispatcher.calls))
        return rest

    def _note_as_whole(self) -> None:
        """A statement that ran early raised, so the snippet ended there. As after a whole snippet
        that raised (``Runner._failed``), the names the whole snippet binds come first in the note,
        in its order; only those the probe after the failure found, so no probe runs again."""
        if self._whole is not None and self.runner.raised:  # not refused, nor the REPL reset
            self.scope.known.bring_forward(self._whole.bound)

    async def _run(self, code: str, *, bound: tuple[str, ...] | None = None) -> Result:
        """Read, plan and run ``code``: all of the snippet, or what is left once statements ran early
        (``bound`` is then what the whole snippet binds, in its order, so the note reads as if it had
        run in one piece)."""
        scope, setup = self.scope, self.scope.setup
        loop = asyncio.get_running_loop()
        started = loop.time() - self._spent
        try:  # the scan counts against the wall clock: a huge snippet is scanned off the loop
            remaining = max(self.limits.wall_timeout - self._spent, 0.0)
            scan = await scan_snippet_off_loop(code, setup.catalog.keys(), remaining)
        except TimeoutError:
            return error_result(wall_clock_text(self.limits, ran=False, chars=len(code)), self.limits)
        refused = refusal(scan, setup.catalog)
        if refused is not None:
            return refused
        if bound is not None:  # the probe looks at every name the whole snippet binds
            scan = dataclasses.replace(scan, bound=bound)
        check = type_check_wanted(code, scan, setup.catalog, scope.checked_snippets)
        if not check:  # a snippet the check may stop calls nothing before it: "no tool was called"
            self._speculate_whole(scan)
        functions = function_sources(code, scan.tree) if scan.defined else ()
        written = Written(scan.bound, scan.value_at is not None, scan.value_at, scan.assigned, functions)
        self.dispatcher.functions = {**scope.known.functions, **dict(functions)}  # what save_skill can keep
        return await self.runner.run(code, scan, check, written, started, self.pausing)

    def _speculate_whole(self, scan: SnippetScan) -> None:
        """A snippet that arrived whole: its literal read-only calls start now, while the worker is
        readied and fed (a streamed snippet's started once their line arrived)."""
        setup = self.scope.setup
        if setup.speculate and self.dispatcher.speculations is None and scan.nodes is not None:
            self.dispatcher.speculations = Speculations()
            self.dispatcher.speculate(literal_calls_in(scan.nodes, setup.catalog, setup.speculates))

    def _speculate_lines(self) -> None:
        """Launch the literal read-only calls of the lines that arrived since the last look."""
        if self.dispatcher.speculations is None or self._arguments.done():
            return
        lines, self._scanned_lines = arrived_lines(self._prefix, self._scanned_lines)
        setup = self.scope.setup
        for line in lines:
            self.dispatcher.speculate(literal_calls(line, setup.catalog, setup.speculates))


async def _first_of(waiting: Awaitable[Any], future: asyncio.Future[Any]) -> None:
    """Until ``waiting`` is done or ``future`` is."""
    task = asyncio.ensure_future(waiting)
    try:
        await asyncio.wait({task, future}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        task.cancel()
