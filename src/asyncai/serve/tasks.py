"""The MCP tasks extension (SEP-2663, ``io.modelcontextprotocol/tasks``) for ``run_code``.

A client that declares the extension (in a 2026-07-28 request's client capabilities) may get a
task instead of a result: serve-mcp starts the snippet and, if it has not ended within
``TASK_GRACE``, answers with a ``CreateTaskResult``; the client polls ``tasks/get`` (the result is
inlined once done) and may ``tasks/cancel`` it. A cancel interrupts the snippet as a client's cancel
of a call does (its nested calls fail inside it) and the REPL keeps what was bound before.

``TaskRegistry`` holds the rules (who sees which task, the status transitions, expiry) without any
I/O; ``TaskRunner`` runs the work in asyncio tasks; ``TasksExtension`` is the wire side, an SDK
``Extension`` (its methods and its ``tools/call`` interceptor). Tasks live in this process only.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import mcp.types as mt
from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import require_client_extension
from mcp.shared.inbound import MCP_NAME_HEADER, decode_header_value
from mcp_types import HEADER_MISMATCH, INTERNAL_ERROR, INVALID_PARAMS, ErrorData, TaskStatus
from mcp_types import methods as wire
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from asyncai.log import log_event
from asyncai.serve.progress import RunProgress

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TASK_GRACE = 0.5
"""A run that ends within this many seconds is answered directly (most snippets do), so only a
slow one costs the client polls."""
DEFAULT_TASK_TTL = 3600.0
"""A finished task (its result) is kept this many seconds after it ended; a working one is kept."""
POLL_INTERVAL_MS = 500
"""How often a client is asked to poll ``tasks/get``: the grace again, in milliseconds."""
TERMINAL: frozenset[TaskStatus] = frozenset({"completed", "failed", "cancelled"})
TASK_ID_PREFIX = "task-"
FAILED = "internal error while running the task"


# -- the rules, without I/O ---------------------------------------------------------------------


@dataclass
class TaskRecord:
    task_id: str
    owner: str
    """``caller_identity`` of whoever created it: nobody else may see it."""
    created: float
    updated: float
    ttl: float
    status: TaskStatus = "working"
    status_message: str | None = None
    result: dict[str, Any] | None = None
    """The wire form of the ``tools/call`` result (``completed``)."""
    error: ErrorData | None = None
    """Why the run failed inside serve-mcp (``failed``); a snippet's own error is a result."""

    def expired(self, now: float) -> bool:
        return self.status in TERMINAL and now > self.updated + self.ttl


class TaskRegistry:
    """The tasks of this process: created for an owner, seen only by it, finished once, and
    forgotten ``ttl`` seconds after they finished (expired ones are dropped as new ones come)."""

    def __init__(self, ttl: float = DEFAULT_TASK_TTL, clock: Callable[[], float] = time.time) -> None:
        self.ttl = ttl
        self.clock = clock
        """Wall-clock seconds: the wire's timestamps are dates."""
        self._tasks: dict[str, TaskRecord] = {}

    def __len__(self) -> int:
        return len(self._tasks)

    def create(self, owner: str) -> TaskRecord:
        now = self.clock()
        for task_id in [key for key, record in self._tasks.items() if record.expired(now)]:
            del self._tasks[task_id]
        record = TaskRecord(TASK_ID_PREFIX + secrets.token_urlsafe(18), owner, now, now, self.ttl)
        self._tasks[record.task_id] = record
        return record

    def get(self, task_id: str, owner: str) -> TaskRecord | None:
        """The owner's task; ``None`` for one that is unknown, expired or someone else's (all
        look the same to the caller, so a task id says nothing of other callers' tasks)."""
        record = self._tasks.get(task_id)
        if record is None or not secrets.compare_digest(record.owner, owner):
            return None
        if record.expired(self.clock()):
            del self._tasks[task_id]
            return None
        return record

    def status(self, task_id: str) -> TaskStatus | None:
        record = self._tasks.get(task_id)
        return record.status if record is not None else None

    def note(self, task_id: str, message: str) -> None:
        """A working task's progress, for its status message."""
        record = self._tasks.get(task_id)
        if record is not None and record.status == "working":
            record.status_message, record.updated = message, self.clock()

    def finish(
        self,
        task_id: str,
        status: TaskStatus,
        *,
        result: dict[str, Any] | None = None,
        error: ErrorData | None = None,
    ) -> bool:
        """Move a working task to ``status``; False (nothing changes) once it has ended: the first
        end wins, so a task cancelled while its snippet winds down stays cancelled."""
        record = self._tasks.get(task_id)
        if record is None or record.status in TERMINAL:
            return False
        record.status, record.updated = status, self.clock()
        record.result, record.error = result, error
        return True


# -- the wire types ------------------------------------------------------------------------------


def iso_time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TaskFields(mt.Result):
    """SEP-2663's ``Task``: the SDK's ``mcp_types.Task`` is the 2025-11-25 one (``ttl``,
    ``pollInterval``), renamed here with the unit in the name."""

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None

    @classmethod
    def fields_of(cls, record: TaskRecord) -> dict[str, Any]:
        return {
            "task_id": record.task_id,
            "status": record.status,
            "status_message": record.status_message,
            "created_at": iso_time(record.created),
            "last_updated_at": iso_time(record.updated),
            "ttl_ms": round(record.ttl * 1000),
            "poll_interval_ms": POLL_INTERVAL_MS,
        }


class CreateTaskResult(TaskFields):
    """The answer to a ``tools/call`` that became a task: flat, tagged ``resultType: "task"``."""

    result_type: Literal["task"] = "task"

    @classmethod
    def of(cls, record: TaskRecord) -> CreateTaskResult:
        return cls(**cls.fields_of(record))


class DetailedTask(TaskFields):
    """The answer to ``tasks/get``: the task, with the call's result inlined once it completed or
    the error once it failed."""

    result_type: Literal["complete"] = "complete"
    result: dict[str, Any] | None = None
    error: ErrorData | None = None

    @classmethod
    def of(cls, record: TaskRecord) -> DetailedTask:
        return cls(**cls.fields_of(record), result=record.result, error=record.error)


class TaskRequestParams(mt.RequestParams):
    task_id: str


class UpdateTaskRequestParams(TaskRequestParams):
    input_responses: dict[str, Any] | None = None
    """Answers to a task's input requests: serve-mcp asks none inside a task yet, so they are
    acknowledged and dropped (unknown keys too, as the extension asks)."""


# -- running tasks -------------------------------------------------------------------------------

Work = Callable[[RunProgress], Awaitable[mt.CallToolResult]]
"""A ``tools/call`` to run, told of its progress."""


class TaskRunner:
    """Runs a call in an asyncio task of its own: answered directly when it ends within the grace,
    else as a task in ``registry`` that records how it ended."""

    def __init__(self, registry: TaskRegistry | None = None, grace: float = TASK_GRACE) -> None:
        self.registry = registry or TaskRegistry()
        self.grace = grace
        self._running: dict[str, asyncio.Task[mt.CallToolResult]] = {}

    async def start(self, owner: str, work: Work, version: str) -> mt.CallToolResult | CreateTaskResult:
        progress = RunProgress()

        async def run() -> mt.CallToolResult:
            return await work(progress)

        # A task of its own, not the request's: it outlives the request once that is answered.
        task = asyncio.create_task(run())
        try:
            await asyncio.wait({task}, timeout=self.grace)
        except asyncio.CancelledError:  # the client gave up on the call before it became a task
            task.cancel()
            raise
        if task.done():
            return task.result()
        record = self.registry.create(owner)
        progress.answered = True  # the request is answered now; progress goes to the status
        if progress.message:
            self.registry.note(record.task_id, progress.message)
        progress.listen(lambda finished, message: self.registry.note(record.task_id, message))
        self._running[record.task_id] = task
        task.add_done_callback(lambda done: self._ended(record.task_id, done, version))
        log_event("serve.task_created", task=record.task_id)
        return CreateTaskResult.of(record)

    def _ended(self, task_id: str, task: asyncio.Task[mt.CallToolResult], version: str) -> None:
        self._running.pop(task_id, None)
        if task.cancelled():
            ended = self.registry.finish(task_id, "cancelled")
        else:
            try:
                result = wire_result(task.result(), version)
            except Exception as exc:
                reason = f"{type(exc).__name__}: {exc}"
                log_event("serve.task_failed", logging.WARNING, task=task_id, error=reason)
                # An MCPError says what the client may know; anything else only that it failed.
                internal = ErrorData(code=INTERNAL_ERROR, message=FAILED)
                error = exc.error if isinstance(exc, MCPError) else internal
                ended = self.registry.finish(task_id, "failed", error=error)
            else:
                ended = self.registry.finish(task_id, "completed", result=result)
        if ended:
            log_event("serve.task_ended", task=task_id, status=self.registry.status(task_id))

    def cancel(self, task_id: str) -> None:
        """Stop a working task: it is ``cancelled`` now, while its snippet is interrupted."""
        if self.registry.finish(task_id, "cancelled"):
            task = self._running.get(task_id)
            if task is not None:
                task.cancel()

    async def aclose(self) -> None:
        """Shutting down: the running tasks are cancelled (their snippets interrupted)."""
        for task in self._running.values():
            task.cancel()
        await self.wait()

    async def wait(self) -> None:
        """Until every task running now has ended and its record says how."""
        tasks = list(self._running.values())
        if tasks:
            await asyncio.wait(tasks)  # the records are finished first: their callbacks came first


def wire_result(result: mt.CallToolResult, version: str) -> dict[str, Any]:
    """The result as a ``tools/call`` at ``version`` would have sent it."""
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return wire.serialize_server_result("tools/call", version, dumped)


# -- the extension -------------------------------------------------------------------------------

Run = Callable[
    [ServerRequestContext[Any, Any], mt.CallToolRequestParams, RunProgress], Awaitable[mt.CallToolResult]
]


class TasksExtension(Extension):
    """``tasks/get``, ``tasks/update``, ``tasks/cancel``, and ``tools/call`` of the tools in
    ``tools`` as tasks, for requests that declared the extension. ``run`` runs such a call;
    ``owner`` says who is calling."""

    identifier = TASKS_EXTENSION

    def __init__(
        self,
        runner: TaskRunner,
        tools: Sequence[str],
        run: Run,
        owner: Callable[[ServerRequestContext[Any, Any]], str],
    ) -> None:
        self.runner = runner
        self.task_tools = frozenset(tools)
        self.run = run
        self.owner = owner

    def methods(self) -> Sequence[MethodBinding]:
        return (
            MethodBinding("tasks/get", TaskRequestParams, self._get),
            MethodBinding("tasks/update", UpdateTaskRequestParams, self._update),
            MethodBinding("tasks/cancel", TaskRequestParams, self._cancel),
        )

    async def intercept_tool_call(
        self, params: mt.CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        # A legacy ``task`` param decides nothing: the tool and the client's capabilities do.
        if params.name not in self.task_tools or not task_mode(ctx):
            return await call_next(ctx)
        return await self.runner.start(
            self.owner(ctx), lambda progress: self.run(ctx, params, progress), ctx.protocol_version
        )

    def _record(self, ctx: ServerRequestContext[Any, Any], params: TaskRequestParams) -> TaskRecord:
        check_name_header(ctx, params.task_id)
        require_client_extension(ctx, TASKS_EXTENSION)
        record = self.runner.registry.get(params.task_id, self.owner(ctx))
        if record is None:
            raise MCPError(
                INVALID_PARAMS, f"unknown task {params.task_id!r} (never created for you, or expired)"
            )
        return record

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: TaskRequestParams) -> DetailedTask:
        return DetailedTask.of(self._record(ctx, params))

    async def _update(
        self, ctx: ServerRequestContext[Any, Any], params: UpdateTaskRequestParams
    ) -> mt.EmptyResult:
        self._record(ctx, params)
        return mt.EmptyResult()

    async def _cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskRequestParams) -> mt.EmptyResult:
        record = self._record(ctx, params)
        self.runner.cancel(record.task_id)  # an ended task: the same acknowledgement, nothing changes
        return mt.EmptyResult()


def task_mode(ctx: ServerRequestContext[Any, Any]) -> bool:
    """The request may be answered with a task: it declared the extension, and speaks 2026-07-28
    (the flat ``CreateTaskResult`` is 2026 vocabulary; the SDK refuses it on a 2025 session)."""
    wanted = mt.ClientCapabilities(extensions={TASKS_EXTENSION: {}})
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS and ctx.session.check_client_capability(wanted)


def check_name_header(ctx: ServerRequestContext[Any, Any], task_id: str) -> None:
    """Over HTTP, a ``tasks/*`` request names its task in ``Mcp-Name`` too (SEP-2663's routing
    header), as the SDK checks ``tools/call``'s tool name."""
    headers = getattr(ctx.request, "headers", None)
    if headers is None or ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return
    if decode_header_value(headers.get(MCP_NAME_HEADER)) != task_id:
        raise MCPError(HEADER_MISMATCH, "the Mcp-Name header must be the request's taskId")
