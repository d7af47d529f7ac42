"""The host side of nested tool calls: argument validation, budgets, timeouts, the mutation gate,
logging and the audit. One ``SnippetDispatcher`` serves one snippet."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import math
import time
from collections.abc import Awaitable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from opentelemetry.trace import Span

from asyncai.activity import QUIET, Activity, NestedCall
from asyncai.approvals.gate import Approval, ApprovalRequest, MutationGate
from asyncai.code_mode.catalog.entries import (
    OS_DENIED,
    CatalogEntry,
    Finder,
    call_mistakes,
    missing_key,
    os_denied_text,
)
from asyncai.code_mode.catalog.observed import ObservedShapes
from asyncai.code_mode.catalog.resources import RESOURCE_FUNCTIONS, call_resource_function
from asyncai.code_mode.catalog.skills import SKILL_FUNCTIONS, call_skill_function
from asyncai.code_mode.engine.clock import WallClock
from asyncai.code_mode.engine.crossing import Payload, tool_payload
from asyncai.code_mode.engine.pausing import HeldCall
from asyncai.code_mode.engine.read import LiteralCall
from asyncai.code_mode.engine.speculation import Speculations
from asyncai.code_mode.limits import CodeModeLimits
from asyncai.humanize import count, seconds
from asyncai.log import (
    AUDIT_PREVIEW_CHARS,
    TEXT_PREVIEW_CHARS,
    decoded_or_preview,
    json_preview,
    log_event,
    logger,
)
from asyncai.skills.skillset import SkillSet
from asyncai.telemetry.spans import DEFAULT_TRACING, Tracing, end_nested, nested_call
from asyncai.tools.types import ToolCallOutput, ToolDefinition, ToolSource

SETTLE_TIMEOUT = 5.0
INTERRUPTED_CALL = "interrupted: the run was stopped (Ctrl-C or a cancel) while this call was in flight"
BUDGET_GRACE_SECONDS = 1.0
"""How long a snippet may go on after its round-trip budget is spent (enough to end normally)."""
T = TypeVar("T")


def validate_arguments(
    py_name: str, entry: CatalogEntry, args: Any, kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    """Keyword arguments in Python names (and the positional ones the entry takes) -> MCP
    arguments; ``TypeError`` like Python's own, so the model meets the wording it knows. A keyword
    given ``None`` counts as left out."""
    if args and len(args) <= entry.tool.positional:
        leading = dict(zip(entry.parameters, args, strict=False))
        if not leading.keys() & kwargs.keys():
            args, kwargs = (), {**leading, **kwargs}
    arguments = {}
    for name, value in kwargs.items():
        schema_name = entry.parameters.get(name)
        if schema_name is None:
            break
        if value is not None:
            arguments[schema_name] = value
    else:  # every keyword known: the common case, without building any message
        if not args and all(kwargs.get(name) is not None for name in entry.required):
            for name, schema in entry.nested.items():  # a dict built in a variable: unseen by the type check
                mistake = missing_key(kwargs.get(name), schema, name)
                if mistake is not None:
                    raise TypeError(f"{py_name}(): {mistake}")
            return arguments
    given = [name for name, value in kwargs.items() if value is not None or name not in entry.parameters]
    mistakes = call_mistakes(py_name, entry, [_short_repr(arg) for arg in args or ()], given)
    raise TypeError(mistakes[0] if mistakes else f"{py_name}() was called wrongly")


def _short_repr(value: Any) -> str:
    text = repr(value) if isinstance(value, str | int | float | bool | None) else "..."
    return text if len(text) <= 80 else text[:77] + "..."


SLEEPS = frozenset({"system.sleep", "system.async_sleep"})


def _sleep(seconds: Any = 0.0, *_: Any) -> Awaitable[None]:
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not math.isfinite(seconds):
        raise ValueError(f"sleep length must be a finite number, not {seconds!r}")
    return asyncio.sleep(max(float(seconds), 0.0))


def refuse_os(**_: Any) -> None:
    """An ``os=`` handler: every filesystem or environment call is refused."""
    raise PermissionError(OS_DENIED)


@dataclass
class SnippetDispatcher:
    """Runs the nested calls of one snippet against the inner executor."""

    catalog: Mapping[str, CatalogEntry]
    inner: ToolSource
    limits: CodeModeLimits
    gate: MutationGate = field(default_factory=MutationGate)
    finder: Finder | None = None
    """Answers ``search_tools`` and ``describe_tool``."""
    clock: WallClock | None = None
    """The snippet's wall clock, paused while the gate waits for a person."""
    activity: Activity = QUIET
    """Told of each nested call as it starts and ends (a live display)."""
    shapes: ObservedShapes | None = None
    """Learns the shapes of results from tools that declare no output schema."""
    calls: list[NestedCall] = field(default_factory=list)
    suspensions: int = 0
    exhausted: str | None = None
    """Set once the suspension budget is spent: the snippet then ends as an error, caught or not."""
    interrupted: bool = False
    """The run was stopped from outside: tool calls fail in the snippet (``interrupt``)."""
    speculations: Speculations | None = None
    """Read-only calls launched while the snippet streamed, which its own calls may claim."""
    tracing: Tracing = DEFAULT_TRACING
    span: Span | None = None
    """The snippet's span: each nested call's span is its child (``telemetry.spans``)."""
    mutations_held: asyncio.Future[Approval] | None = None
    """While set, a mutating call waits for it before the gate (a snippet still streaming:
    ``SnippetRun``); a refusal raises ``PermissionError`` at the call."""
    skills: SkillSet | None = None
    loaded_skills: dict[str, list[str] | str] = field(default_factory=dict)
    """What ``load_skill`` returns for each skill this snippet loads: the signatures its files
    defined, or why they could not be (``skill_feed`` fed them before the snippet)."""
    functions: Mapping[str, str] = field(default_factory=dict)
    """The source of each function the REPL knows, this snippet's own included (``save_skill``)."""
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    _os_denied: str | None = field(default=None, repr=False)

    def _count_suspension(self) -> None:
        self.suspensions += 1
        if self.suspensions > self.limits.max_suspensions:
            if self.exhausted is None and self.clock is not None:
                # A snippet that catches the error must not run on until the wall clock.
                self.clock.expire_within(BUDGET_GRACE_SECONDS)
            self.exhausted = (
                f"RuntimeError: suspension limit exceeded: more than {count(self.limits.max_suspensions)} "
                "tool or OS calls in one run_code"
            )
            raise RuntimeError(self.exhausted.removeprefix("RuntimeError: "))

    async def call(self, py_name: str, args: Any, kwargs: Mapping[str, Any]) -> tuple[str, Any]:
        """The sandbox's ``_asyncai_tool``: returns ``(mode, text)`` (``crossing.Payload``) or raises
        into the sandbox. Once the run is interrupted, every call in flight or made later fails in
        the snippet with a ``RuntimeError``, so the snippet ends and its REPL stays."""
        return await self._interruptible(self._call(py_name, args, kwargs))

    async def _interruptible(self, call: Awaitable[T]) -> T:
        if self.interrupted:
            if isinstance(call, Coroutine):
                call.close()
            raise RuntimeError(INTERRUPTED_CALL)
        try:
            return await call
        except asyncio.CancelledError:
            if self.interrupted:  # a cancel must not reach pydantic-monty: it would lose the REPL
                raise RuntimeError(INTERRUPTED_CALL) from None
            raise

    def interrupt(self) -> None:
        """The run was stopped (Ctrl-C, a client's cancel): the calls in flight fail in the snippet."""
        self.interrupted = True
        self.cancel_in_flight()

    async def _call(self, py_name: str, args: Any, kwargs: Mapping[str, Any]) -> tuple[str, Any]:
        self._count_suspension()
        entry = self.catalog.get(py_name)
        if entry is None:
            raise NameError(f"name '{py_name}' is not defined")
        arguments = validate_arguments(py_name, entry, args, kwargs)
        if entry.host_function:
            return (await _host_function(self, entry, py_name, arguments)).as_host_reply()
        return await self._run_tool(entry, py_name, arguments)

    def held_call(self, call_id: int, py_name: Any, args: Any, kwargs: Any) -> HeldCall | None:
        """The call as a ``HeldCall`` when it must wait for a person's decision (a paused run
        under ``ask``); ``None`` when it runs, or fails, as any other call does."""
        if self.gate.open or self.gate.policy != "ask" or not isinstance(py_name, str):
            return None
        entry = self.catalog.get(py_name)
        if entry is None or entry.host_function or not entry.tool.mutating or not isinstance(kwargs, dict):
            return None
        try:
            arguments = validate_arguments(py_name, entry, args, kwargs)
            json.dumps(arguments)  # what is held is stored with the paused snippet
        except (TypeError, ValueError):
            return None
        return HeldCall(call_id, py_name, entry.tool.name, arguments)

    async def run_held(self, call: HeldCall, approval: Approval) -> tuple[str, Any]:
        """A held call, once a person decided: it runs, or raises ``PermissionError``."""

        async def run() -> tuple[str, Any]:
            self._count_suspension()
            entry = self.catalog.get(call.function)
            if entry is None:  # the wrapped server dropped the tool while the snippet waited
                raise NameError(f"name '{call.function}' is not defined")
            return await self._run_tool(entry, call.function, call.arguments, approval)

        return await self._interruptible(run())

    async def _run_tool(
        self, entry: CatalogEntry, py_name: str, arguments: dict[str, Any], approval: Approval | None = None
    ) -> tuple[str, Any]:
        if len(self.calls) >= self.limits.max_calls:
            raise _budget_spent(self.limits)
        record = NestedCall(
            tool=entry.tool.name, arguments=arguments, mutating=entry.tool.mutating, function=py_name
        )
        self.calls.append(record)
        tool = entry.tool
        with nested_call(
            self.tracing, self.span, tool.name, tool.server, arguments, mutating=record.mutating
        ) as span:
            try:
                return await self._run_recorded(entry, py_name, arguments, record, approval)
            finally:
                end_nested(span, result_bytes=record.bytes, is_error=record.is_error, refused=record.refused)

    async def _run_recorded(
        self,
        entry: CatalogEntry,
        py_name: str,
        arguments: dict[str, Any],
        record: NestedCall,
        approval: Approval | None,
    ) -> tuple[str, Any]:
        self.activity.call_started(record)
        started = time.monotonic()
        level = logging.WARNING if record.mutating else logging.INFO
        mutating = {"mutating": True} if record.mutating else {}
        # Without --verbose only mutating calls are logged, always: short previews, never the result.
        verbose = logger.isEnabledFor(logging.INFO)
        limit = TEXT_PREVIEW_CHARS if verbose else AUDIT_PREVIEW_CHARS
        if record.mutating and self.mutations_held is not None:
            held = await self._held(self.mutations_held)
            if not held.allowed:
                approval = held
        if record.mutating and (not self.gate.open or approval is not None):
            if approval is None:
                approval = await self._approval(ApprovalRequest(record.tool, py_name, arguments))
            if not approval.allowed:
                record.refused = record.is_error = True
                self.activity.call_finished(record, time.monotonic() - started)
                _log_refusal(record, json_preview(arguments, limit), approval.reason)
                raise PermissionError(f"{py_name}() was not run: {approval.reason}")
        logged = logger.isEnabledFor(level)  # the previews cost more than an instant tool call
        if logged:
            log_event(
                "mcp.tool_call",
                level,
                via="code_mode",
                tool=record.tool,
                arguments=json_preview(arguments, limit),
                **mutating,
            )
        if record.mutating and self.speculations is not None:
            self.speculations.invalidate()
        content = ""
        payload: Payload | None = None
        try:
            launched = self.speculations.claim(record.tool, arguments) if self.speculations else None
            output = await self._tracked(launched or self.inner.call_tool(record.tool, arguments))
            record.answered = True
            record.is_error = output.is_error
            if output.is_error:
                content = output.content
            else:
                payload = tool_payload(output, entry.tool.output_schema)
                content = payload.text
                if self.shapes is not None and entry.tool.output_schema is None:
                    self.shapes.observe(entry.tool, content)
        except TimeoutError:
            record.is_error = record.answered = True  # it did not answer in time: it may still run
            raise RuntimeError(
                f"tool {record.tool} timed out after {seconds(self.limits.tool_timeout)}"
            ) from None
        except asyncio.CancelledError:
            record.is_error, content = True, "cancelled"
            raise
        except Exception as exc:  # an executor bug must still reach the snippet as a catchable error
            record.is_error = True
            raise RuntimeError(f"tool error: {type(exc).__name__}: {exc}") from None
        finally:
            record.bytes = len(content) if content.isascii() else len(content.encode())
            self.activity.call_finished(record, time.monotonic() - started)
            # Every call gets its result line, so a mutating call is never logged half.
            if logged:
                shown = {"content": decoded_or_preview(content)} if verbose else {}
                log_event(
                    "mcp.tool_result",
                    level,
                    via="code_mode",
                    tool=record.tool,
                    is_error=record.is_error,
                    bytes=record.bytes,
                    **shown,
                    **mutating,
                )
        if payload is None:
            raise RuntimeError(content)
        return payload.as_host_reply()

    async def _held(self, decided: asyncio.Future[Approval]) -> Approval:
        """Wait, off the wall clock, until the snippet's whole source is known and checked."""
        pause = self.clock.paused() if self.clock is not None else contextlib.nullcontext()
        async with pause:
            return await asyncio.shield(decided)

    async def _approval(self, request: ApprovalRequest) -> Approval:
        """The gate's decision; the wall clock stops while a person decides. A failing approver
        refuses rather than runs."""
        pause = self.clock.paused() if self.clock is not None else contextlib.nullcontext()
        async with pause:
            try:
                return await self.gate.decide(request)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                return Approval(False, f"the approval could not be asked ({type(exc).__name__}: {exc})")

    async def _tracked(self, call: Awaitable[T]) -> T:
        """``call`` under the per-call timeout, cancellable by ``cancel_in_flight``."""
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            # asyncio.timeout, not wait_for: wait_for wraps the call in a task of its own, which
            # costs each sequential nested call two more event-loop iterations.
            async with asyncio.timeout(self.limits.tool_timeout):
                return await call
        finally:
            if task is not None:
                self._tasks.discard(task)

    def deny_os(self, **kwargs: Any) -> Any:
        """The sandbox's ``os=`` handler for snippets: counted, then refused. A sleep reaches it
        only in a snippet driven snapshot by snapshot (``engine.pausing``; ``feed_run`` sleeps by
        itself), and sleeps there as it would (the wall clock bounds it)."""
        if kwargs.get("name") in SLEEPS and kwargs.get("is_async"):
            return _sleep(*kwargs.get("args", ()))
        self._count_suspension()
        if self._os_denied is None:  # made once per snippet: a loop of refused calls pays once
            self._os_denied = os_denied_text(self.catalog)
        raise PermissionError(self._os_denied)

    def cancel_in_flight(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    async def settle(self, timeout: float = SETTLE_TIMEOUT) -> None:
        """Cancel the calls the snippet left running (it failed while a gathered call was still in
        flight) and wait for them to end, so the audit says how each one ended."""
        tasks = [task for task in self._tasks if task is not asyncio.current_task()]
        if not tasks:
            return
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks, timeout=timeout)

    def speculate(self, calls: Iterable[LiteralCall]) -> None:
        """Launch ``calls`` (``speculation.literal_calls``) that make valid arguments."""
        if self.speculations is None:
            return
        for found in calls:
            entry = self.catalog[found.function]
            try:
                arguments = validate_arguments(found.function, entry, (), found.keywords)
            except TypeError:
                continue  # the snippet's own call will say what is wrong
            call = functools.partial(self._speculative_call, entry.tool, arguments)
            self.speculations.launch(entry.tool.name, arguments, call)

    async def _speculative_call(self, tool: ToolDefinition, arguments: dict[str, Any]) -> ToolCallOutput:
        with nested_call(
            self.tracing, self.span, tool.name, tool.server, arguments, mutating=False, speculative=True
        ) as span:
            output = await self.inner.call_tool(tool.name, arguments)
            size = len(output.content.encode())
            end_nested(span, result_bytes=size, is_error=output.is_error, refused=False)
            return output

    def audit(self) -> dict[str, Any]:
        audit: dict[str, Any] = {"nested_calls": [call.audit() for call in self.calls]}
        if self.speculations is not None and self.speculations.launched:
            audit["speculative_calls"] = self.speculations.report()
        return audit

    def calls_report(self) -> str | None:
        return calls_report(self.calls)


async def _host_function(
    dispatcher: SnippetDispatcher, entry: CatalogEntry, py_name: str, arguments: dict[str, Any]
) -> Payload:
    """A function asyncai answers itself: resources, tool search, skills."""
    tool = entry.tool
    if tool.name in RESOURCE_FUNCTIONS:
        return await dispatcher._tracked(call_resource_function(dispatcher.inner, tool, arguments))
    if tool.name in SKILL_FUNCTIONS and dispatcher.skills is not None:
        if tool.mutating and not dispatcher.gate.open:  # save_skill writes: the gate decides
            approval = await dispatcher._approval(ApprovalRequest(tool.name, py_name, arguments))
            if not approval.allowed:
                raise PermissionError(f"{py_name}() was not run: {approval.reason}")
        answer = call_skill_function(
            dispatcher.skills, tool, arguments, dispatcher.loaded_skills, dispatcher.functions
        )
        return await dispatcher._tracked(answer)
    if dispatcher.finder is not None:
        return dispatcher.finder.answer(tool, arguments)
    raise NameError(f"name '{py_name}' is not defined")


def _budget_spent(limits: CodeModeLimits) -> RuntimeError:
    return RuntimeError(f"nested tool call budget exceeded: at most {count(limits.max_calls)} per run_code")


def _log_refusal(record: NestedCall, arguments: str, reason: str) -> None:
    log_event(
        "mcp.tool_refused",
        logging.WARNING,
        via="code_mode",
        tool=record.tool,
        arguments=arguments,
        reason=reason,
        mutating=True,
    )


REPORT_CALLS = 20
"""Calls listed in a partial-call report; mutating ones are always listed."""


def calls_report(calls: list[NestedCall]) -> str | None:
    """What an aborted snippet's nested calls did, so the model does not repeat a write blindly.

    Every mutating call is listed; other calls up to ``REPORT_CALLS`` in all, the rest counted."""
    if not calls:
        return None
    mutating = sum(call.mutating for call in calls)
    room = max(REPORT_CALLS - mutating, 0)
    shown: list[NestedCall] = []
    for call in calls:
        if call.mutating or room > 0:
            shown.append(call)
            room -= not call.mutating
    lines = [f"Nested calls this snippet started before it was stopped ({len(calls)}):"]
    for call in shown:
        text = ApprovalRequest(call.tool, call.function or call.tool, call.arguments).call_text()
        outcome = call.outcome()
        line = f"- {outcome}: {text}"
        if call.mutating and outcome == "finished":
            line += " (mutating: its change was applied)"
        elif call.mutating and outcome in ("cut off", "failed"):
            line += " (mutating: its change may have been applied)"
        lines.append(line)
    listed = {id(call) for call in shown}
    hidden = [call.outcome() for call in calls if id(call) not in listed]
    if hidden:
        counts = ", ".join(f"{hidden.count(o)} {o}" for o in ("finished", "failed", "cut off") if o in hidden)
        lines.append(f"- ... and {len(hidden)} more read-only calls ({counts})")
    if mutating:
        lines.append("Check what the mutating calls changed before running them again.")
    return "\n".join(lines)
