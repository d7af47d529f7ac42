"""``CodeModeServer``: the MCP server side of ``asyncai serve-mcp``.

The client sees ``run_code`` from the same ``CodeMode`` the agent uses (not a copy), its description
within the ``--catalog-budget`` a client shows; ``--expose-direct`` adds the wrapped tools unchanged.
Each client session has its own REPL (stdio: the connection; HTTP: the ``Mcp-Session-Id``); a
stateless caller (the 2026-07-28 protocol over HTTP has no session) names its REPL by a handle
(``serve.handles``) passed as ``run_code``'s ``repl``.

A result says the same twice, since a client hands its model one or the other: its text blocks (the
snippet's value alone, then the variables note when it changed) and its structured content (the
value as JSON, the note). The audit of the nested calls goes in ``_meta``, which clients keep from
their models.

A 2026-07-28 client that declares the tasks extension may get a slow ``run_code`` as a task
(``serve.tasks``); a request with a progress token hears of each nested call that finishes
(``serve.progress``).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import mcp.types as mt
from mcp import MCPError
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.extension import Extension, RequestHandler, compose_tool_call_handler
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.server.stdio import stdio_server

from asyncai.activity import Activity
from asyncai.code_mode import CodeMode
from asyncai.code_mode.catalog.description import client_instructions, is_short
from asyncai.code_mode.catalog.stubs import RUN_CODE
from asyncai.code_mode.engine.pausing import PausedSnippet
from asyncai.code_mode.engine.scope import ReplScope
from asyncai.code_mode.scopes import ReplScopes
from asyncai.log import log_event
from asyncai.serve.approval import (
    ALLOW_SCHEMA,
    APPROVAL_TIMEOUT,
    ElicitationApprover,
    can_elicit,
    decision,
    question,
)
from asyncai.serve.client_asking import ServeClients
from asyncai.serve.handles import SCOPE_PREFIX, HandleCheck, ReplHandles, caller_identity
from asyncai.serve.live import LiveRun, LiveRuns, looks_like_live_id
from asyncai.serve.pauses import PausedSnippets, RequestStateSealing
from asyncai.serve.progress import RunProgress, notifying
from asyncai.serve.shared import SessionBusy, SharedSessions, state_key
from asyncai.serve.skills import serve_skills
from asyncai.serve.tasks import TaskRunner, TasksExtension
from asyncai.tools.mcp.results import mcp_result, mcp_tool
from asyncai.tools.types import ToolCallOutput

STDIO_SESSION = "stdio"
HTTP_PREFIX = "http:"
AUDIT_CALLS_SHOWN = 20
"""Nested calls listed in a result's audit; the rest are counted."""
AUDIT_META_KEY = "asyncai/audit"
"""Where a ``run_code`` result's audit of its nested calls goes: its ``_meta``, which clients keep
from their models (Claude Code hands its model the structured content, never ``_meta``)."""
RUN_CODE_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "value": {
            "description": "what the program returned, as JSON (a str as it is); over the result limit, "
            "a note saying where the value is kept"
        },
        "output": {"type": "string", "description": "what the program printed"},
        "error": {"type": "string", "description": "why the program failed: its traceback and a hint"},
        "notice": {"type": "string", "description": "what changed in the REPL before this program ran"},
        "variables": {"type": "string", "description": "the variables the REPL holds, when that changed"},
        "repl": {"type": "string", "description": "the REPL handle to pass back as repl"},
    },
}


def audit_content(calls: list[dict[str, Any]], shown: int = AUDIT_CALLS_SHOWN) -> dict[str, Any]:
    """A snippet's nested calls for the result's ``_meta``: the first ``shown``, counts of all."""
    counts = {
        "total": len(calls),
        "failed": sum(bool(call.get("is_error")) and not call.get("refused") for call in calls),
        "mutating": sum(bool(call.get("mutating")) for call in calls),
        "refused": sum(bool(call.get("refused")) for call in calls),
    }
    content: dict[str, Any] = {"nested_calls": calls[:shown], "nested_call_counts": counts}
    if len(calls) > shown:
        content["nested_calls_left_out"] = len(calls) - shown
    return content


REPL_ARGUMENT = "repl"
REPL_PROPERTY: dict[str, Any] = {
    "type": "string",
    "description": "the REPL handle an earlier run_code result gave, to keep its variables; "
    "without it, a new, empty REPL",
}
DEFAULT_HANDLE_TTL = 24 * 3600.0
"""A REPL handle expires this long after its last use (``--state-ttl``)."""
DEFAULT_IDLE_TIMEOUT = 30 * 60.0
"""A session's REPL is closed after this long without a call (the SDK's HTTP session default)."""
INSTRUCTIONS = (
    "run_code runs Python that calls the wrapped MCP tools as async functions: fetch, filter and "
    "return only what the answer needs, in one call."
)
"""The instructions beside a description that holds every rule; the short form's are the rules."""


PAUSE_GONE = (
    "this approval has expired or was answered already: nothing of the paused snippet ran after its "
    "pause; run it again if it is still wanted"
)
LIVE_GONE = (
    "these answers are for a snippet this instance does not run: it finished and its result was "
    "collected, its question expired, or it runs on another serve-mcp instance"
)
PAUSE_NOT_STORED = "the snippet paused for an approval, but the pause could not be stored; run it again"
ScopeRun = Callable[[ReplScope], Awaitable[ToolCallOutput | PausedSnippet]]
"""What a request does with its REPL: run a snippet, or resume a paused one."""


def session_key(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """Whose REPL a request uses: the stdio connection, an HTTP ``Mcp-Session-Id``, or nobody's."""
    request = ctx.request
    if request is None:
        return STDIO_SESSION
    headers = getattr(request, "headers", None)
    session_id = headers.get("mcp-session-id") if headers is not None else None
    return f"{HTTP_PREFIX}{session_id}" if session_id else None


class _Server(Server[Any]):
    """The lowlevel server, announcing ``tools.listChanged`` on every transport: the SDK's HTTP
    session manager asks for the options without any, and the notices are sent on HTTP too."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


class CodeModeServer:
    """The lowlevel MCP ``Server`` over one code-mode executor; see the module docstring."""

    def __init__(
        self,
        executor: CodeMode,
        *,
        expose_direct: bool = False,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        version: str = "",
        shared: SharedSessions | None = None,
        clients: ServeClients | None = None,
        handle_ttl: float = DEFAULT_HANDLE_TTL,
        approval_timeout: float = APPROVAL_TIMEOUT,
    ) -> None:
        self.approval_timeout = approval_timeout
        """How long a question about a mutating call waits: asked in the request, or paused."""
        self.executor = executor
        self.handles = ReplHandles(handle_ttl, shared)
        """The REPL handles minted for stateless (2026-07-28) callers."""
        self.pauses = PausedSnippets(approval_timeout, shared)
        """Snippets paused for an approval (``input_required``), until the client's retry."""
        self.live = LiveRuns(approval_timeout)
        """Stateless callers' runs that wait on a question a wrapped server asked (``serve.live``)."""
        self.clients = clients or ServeClients()
        """Where a wrapped server's questions go: the client whose snippet asked."""
        self.shared = shared
        """Where HTTP sessions are shared with other instances (``None``: this process only)."""
        self._session_runs: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        """Runs of one shared session on this instance, one after the other (each then takes the
        Redis lease, whose wait is bounded)."""
        self.expose_direct = expose_direct
        self.scopes = ReplScopes(executor, idle_timeout=idle_timeout)
        """One REPL per client session, closed after ``idle_timeout`` without a call."""
        self._clients: dict[str, ServerSession] = {}
        """The session of each client with a REPL key, for ``tools/list_changed``."""
        executor.on_tools_changed(self._tools_changed)
        self.tasks = TaskRunner()
        """The ``run_code`` calls that became tasks (``serve.tasks``)."""
        limits = executor.limits
        instructions = (
            client_instructions(limits.max_result_chars)
            if is_short(limits.catalog_budget, limits.max_result_chars)
            else INSTRUCTIONS
        )
        self.server: Server[Any] = _Server(
            "asyncai", version=version, instructions=instructions, on_list_tools=self._list_tools
        )
        apply_extension(
            self.server, TasksExtension(self.tasks, [RUN_CODE], self._run_task, _caller), self._call_tool
        )
        if executor.skills is not None:
            serve_skills(self.server, executor.skills, _caller)
        # The request state of a paused snippet is sealed, bound to its caller, and checked on retry.
        self.server.middleware.append(RequestStateSealing(self.pauses, _caller))

    def initialization_options(self) -> Any:
        return self.server.create_initialization_options()

    def tools(self, handles: bool = False) -> list[mt.Tool]:
        """The tools a client lists; with ``handles`` (a stateless caller) ``run_code`` takes ``repl``."""
        [run_code] = self.executor.tools()
        tool = mcp_tool(run_code)
        update: dict[str, Any] = {"output_schema": RUN_CODE_OUTPUT_SCHEMA}
        if handles:
            schema = dict(tool.input_schema)
            schema["properties"] = {**schema.get("properties", {}), REPL_ARGUMENT: REPL_PROPERTY}
            update["input_schema"] = schema
        tools = [tool.model_copy(update=update)]
        if self.expose_direct:
            tools += [mcp_tool(definition) for definition in self.executor.inner.tools()]
        return tools

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListToolsResult:
        key = self._remember(ctx)
        return mt.ListToolsResult(tools=self.tools(handles=key is None))

    def _remember(self, ctx: ServerRequestContext[Any, Any]) -> str | None:
        key = session_key(ctx)
        if key is not None:
            self._clients[key] = ctx.session
        return key

    async def release_session(self, key: str) -> None:
        """A client session ended: its REPL and worker go now."""
        self._clients.pop(key, None)
        await self.scopes.release(key)
        log_event("serve.session_released", session=key)

    async def _tools_changed(self) -> None:
        """A wrapped server's tools changed: every client with a session re-reads the list."""
        for key, session in list(self._clients.items()):
            try:
                await session.send_tool_list_changed()
            except Exception as exc:  # a client that went away
                log_event("serve.list_changed_failed", session=key, error=f"{type(exc).__name__}: {exc}")
                self._clients.pop(key, None)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: mt.CallToolRequestParams
    ) -> mt.CallToolResult | mt.InputRequiredResult:
        arguments = dict(params.arguments or {})
        if params.name == RUN_CODE:
            progress = RunProgress()
            if ctx.session.can_send_request:  # questions go to the client as requests of their own
                with self.clients.serving(ctx.session, ctx.request_id):
                    async with notifying(progress, ctx):
                        return await self._run_code_for(ctx, arguments, progress)
            return await self._stateless_run_code(ctx, arguments, params, progress)
        if self.expose_direct and params.name in {tool.name for tool in self.executor.inner.tools()}:
            return mcp_result(await self.executor.inner.call_tool(params.name, arguments))
        names = ", ".join(tool.name for tool in self.tools())
        # The spec's answer to a tool that does not exist is a protocol error, not a tool result.
        raise MCPError(mt.INVALID_PARAMS, f"unknown tool {params.name!r}; the tools are {names}")

    async def _run_task(
        self, ctx: ServerRequestContext[Any, Any], params: mt.CallToolRequestParams, progress: RunProgress
    ) -> mt.CallToolResult:
        """A ``run_code`` that may become a task: the same run, its progress shared with the task.
        A task has no request to carry a question back, so it neither pauses nor waits on one."""
        with self.clients.serving(ctx.session, ctx.request_id):
            async with notifying(progress, ctx):
                result = await self._run_code_for(ctx, dict(params.arguments or {}), progress, pausing=False)
        assert isinstance(result, mt.CallToolResult)  # only a pausing run asks for input
        return result

    async def _stateless_run_code(
        self,
        ctx: ServerRequestContext[Any, Any],
        arguments: dict[str, Any],
        params: mt.CallToolRequestParams,
        progress: RunProgress,
    ) -> mt.CallToolResult | mt.InputRequiredResult:
        """``run_code`` on a connection that cannot carry a question: a retry's request state names
        a running snippet that waits for answers (``serve.live``) or a paused one; a new run is
        started as live, so a question a wrapped server asks can come back as ``input_required``."""
        owner = _caller(ctx)
        state, responses = params.request_state, params.input_responses or {}
        if state is not None and looks_like_live_id(state):
            live = self.live.get(state, owner)
            if live is None:
                return _error(LIVE_GONE)
            live.answer(responses)
            return await self.live.follow(live)

        async def serving(live: LiveRun) -> mt.CallToolResult | mt.InputRequiredResult:
            with self.clients.serving(ctx.session, ctx.request_id, live=live):
                async with notifying(progress, ctx):
                    if state is not None:
                        return await self._resume(ctx, state, responses, progress)
                    return await self._run_code_for(ctx, arguments, progress)

        return await self.live.follow(self.live.start(owner, serving))

    def _pausing(self, ctx: ServerRequestContext[Any, Any]) -> bool:
        """Whether a mutating call that needs approval pauses the snippet (``input_required``)
        rather than asking: under ``ask``, when the connection cannot carry a question (the
        stateless protocol) but the client can put one to its user."""
        session = ctx.session
        return self.executor.mutations == "ask" and not session.can_send_request and can_elicit(session)

    async def _run_code_for(
        self,
        ctx: ServerRequestContext[Any, Any],
        arguments: dict[str, Any],
        activity: Activity | None = None,
        *,
        pausing: bool = True,
    ) -> mt.CallToolResult | mt.InputRequiredResult:
        approver = ElicitationApprover(ctx.session, ctx.request_id, self.approval_timeout)
        key = self._remember(ctx)
        given = arguments.pop(REPL_ARGUMENT, None)
        handle: str | None = None
        handle_note: str | None = None
        owner = _caller(ctx)
        if key is None:  # no session (2026-07-28 over HTTP): the REPL is the handle's
            handle, handle_note, refusal = await self._handle_for(given, owner)
            if refusal is not None:
                return run_code_result(ToolCallOutput.error(refusal))
            assert handle is not None
            key = SCOPE_PREFIX + handle
        if pausing and self._pausing(ctx):

            async def run(scope: ReplScope) -> ToolCallOutput | PausedSnippet:
                abandoned = scope.paused_as
                outcome = await scope.run_pausing(arguments, activity=activity)
                if abandoned is not None:  # the model went on without answering: its pause goes
                    await self.pauses.discard(abandoned)
                return outcome

        else:

            async def run(scope: ReplScope) -> ToolCallOutput | PausedSnippet:
                return await scope.call_tool(RUN_CODE, arguments, approver=approver, activity=activity)

        output, note = await self._run_in(key, run, owner)
        return await self._answer(key, owner, output, note, handle, handle_note)

    async def _resume(
        self,
        ctx: ServerRequestContext[Any, Any],
        pause_id: str,
        responses: mt.InputResponses,
        activity: Activity | None = None,
    ) -> mt.CallToolResult | mt.InputRequiredResult:
        """Go on with the paused snippet the (sealed, verified) request state names: its held calls
        run if the person allowed them, on whichever instance this retry reached."""
        owner = _caller(ctx)
        paused = await self.pauses.take(pause_id)
        if paused is None or not secrets.compare_digest(paused.owner, owner):
            return _error(PAUSE_GONE)
        approvals = {}
        for call in paused.held:
            answer = responses.get(_answer_key(call.call_id))
            if isinstance(answer, mt.ElicitResult):
                approvals[call.call_id] = decision(answer)
        log_event("serve.resumed", pause=paused.id, allowed=sum(a.allowed for a in approvals.values()))
        key = paused.repl
        handle = key.removeprefix(SCOPE_PREFIX) if key.startswith(SCOPE_PREFIX) else None
        output, note = await self._run_in(
            key, lambda scope: scope.resume(paused, approvals, activity=activity), owner
        )
        return await self._answer(key, owner, output, note, handle, None)

    async def _answer(
        self,
        key: str,
        owner: str,
        output: ToolCallOutput | PausedSnippet,
        note: str | None,
        handle: str | None,
        handle_note: str | None,
    ) -> mt.CallToolResult | mt.InputRequiredResult:
        """The result of a run: the snippet's, or the question a paused snippet waits on."""
        if handle is not None:
            await self.handles.touch(handle, owner)
        if isinstance(output, PausedSnippet):
            paused = replace(output, owner=owner, repl=key)
            if not await self.pauses.save(paused):
                return _error(PAUSE_NOT_STORED)
            log_event("serve.paused", session=key, pause=paused.id, held=len(paused.held))
            return mt.InputRequiredResult(
                input_requests={
                    _answer_key(call.call_id): mt.ElicitRequest(
                        params=mt.ElicitRequestFormParams(
                            message=question(call.request()), requested_schema=ALLOW_SCHEMA
                        )
                    )
                    for call in paused.held
                },
                request_state=paused.id,
            )
        calls = len((output.audit or {}).get("nested_calls", []))
        log_event("serve.run_code", session=key, is_error=output.is_error, nested_calls=calls)
        return run_code_result(output, note, handle, handle_note)

    async def _handle_for(self, given: Any, owner: str) -> tuple[str | None, str | None, str | None]:
        """``(handle, note, refusal)``: the caller's handle, or a new one (with a note saying why
        when one was given); a refusal for someone else's handle or a ``repl`` that is no string."""
        if given is not None and not isinstance(given, str):
            return (
                None,
                None,
                f"error: repl must be a string (a handle run_code gave), not {type(given).__name__}",
            )
        if given:
            check = await self.handles.check(given, owner)
            if check is HandleCheck.MINE:
                return given, None, None
            if check is HandleCheck.FOREIGN:
                log_event("serve.handle_refused", logging.WARNING, handle=given)
                return (
                    None,
                    None,
                    (
                        f"error: the REPL {given} belongs to another caller; pass a handle run_code gave "
                        "you, or none for a new REPL"
                    ),
                )
            note = f"The REPL {given} is unknown or expired: this run used a new, empty one."
            return await self.handles.mint(owner), note, None
        return await self.handles.mint(owner), None, None

    async def _run_in(
        self, key: str, run: ScopeRun, owner: str
    ) -> tuple[ToolCallOutput | PausedSnippet, str | None]:
        """``run`` on the REPL ``key`` names (made for ``owner`` when new: its view of the skills),
        and the variables note if it changed."""
        if self.shared is not None and key.startswith((HTTP_PREFIX, SCOPE_PREFIX)):
            return await self._run_shared(key, run, owner)
        async with self.scopes.use(key, caller=owner) as use:
            output = await run(use.scope)
        return output, self.scopes.note_if_changed(key, use.scope.context_note())

    async def _run_shared(
        self, key: str, run: ScopeRun, owner: str
    ) -> tuple[ToolCallOutput | PausedSnippet, str | None]:
        """A run of a REPL shared through Redis (``serve.shared``), a session's or a handle's: runs
        of it on this instance queue here; then, under its lease, take up the REPL another
        instance saved since, run, and save it for the next instance."""
        assert self.shared is not None
        shared_id = key.removeprefix(HTTP_PREFIX)
        queue = self._session_runs.get(shared_id)
        if queue is None:
            queue = self._session_runs[shared_id] = asyncio.Lock()
        async with queue:
            try:
                async with self.shared.lease(shared_id) as lease:
                    saved_as = state_key(shared_id) if lease.held else None
                    usable = lambda: not lease.lost  # noqa: E731 (read when the run ends)
                    async with self.scopes.use(
                        key, saved_as=saved_as, shared=True, may_save=usable, caller=owner
                    ) as use:
                        output = await run(use.scope)
                    if saved_as is not None and not lease.lost and key.startswith(HTTP_PREFIX):
                        await self.shared.touch(shared_id)
            except SessionBusy as exc:
                return ToolCallOutput.error(f"error: {exc}"), None
        return output, self.scopes.note_if_changed(key, use.scope.context_note())


def run_code_result(
    output: ToolCallOutput, note: str | None = None, handle: str | None = None, handle_note: str | None = None
) -> mt.CallToolResult:
    """A ``run_code`` output as the client gets it. Its text blocks and its structured content say
    the same, since a client's model reads one of them: the value on its own first (a program can
    parse it) or the error, then the variables note when it changed, then the REPL handle. The audit
    goes in ``_meta``."""
    blocks = [output.content]
    if output.is_error or output.structured is None:
        structured = {"error": output.content} if output.is_error else {"value": output.content}
    else:
        structured = dict(output.structured)
    if note:
        blocks.append(note)
        structured["variables"] = note
    if handle is not None:
        told = f"REPL {handle}: pass repl={handle!r} to run_code to keep these variables"
        blocks.append(f"{handle_note} {told}" if handle_note else told)
        structured["repl"] = handle
    return mt.CallToolResult(
        content=[mt.TextContent(type="text", text=block) for block in blocks],
        structured_content=structured,
        is_error=output.is_error,
        _meta={AUDIT_META_KEY: audit_content((output.audit or {}).get("nested_calls", []))},
    )


def _error(text: str) -> mt.CallToolResult:
    return run_code_result(ToolCallOutput.error(f"error: {text}"))


def _answer_key(call_id: int) -> str:
    """The input request asking about one held call (the client answers under the same key)."""
    return f"approve-{call_id}"


def _authorization(ctx: ServerRequestContext[Any, Any]) -> str | None:
    headers = getattr(ctx.request, "headers", None)
    value = headers.get("authorization") if headers is not None else None
    return value if isinstance(value, str) else None


def _caller(ctx: ServerRequestContext[Any, Any]) -> str:
    """Who is calling (``serve.handles.caller_identity`` of the request's token)."""
    return caller_identity(_authorization(ctx))


def apply_extension(server: Server[Any], extension: Extension, call_tool: RequestHandler) -> None:
    """What ``MCPServer`` does with an SDK ``Extension``, for the lowlevel ``Server`` (which takes
    none itself): its methods served, its settings advertised under ``capabilities.extensions``,
    its interceptor around ``tools/call``."""
    for method in extension.methods():
        server.add_request_handler(method.method, method.params_type, method.handler)
    server.extensions[extension.identifier] = extension.settings()
    server.add_request_handler(
        "tools/call", mt.CallToolRequestParams, compose_tool_call_handler([extension], call_tool)
    )


async def serve_stdio(server: CodeModeServer) -> None:
    """Serve one client on stdin/stdout until it disconnects (stdout carries only the protocol)."""
    async with stdio_server() as (read, write):
        log_event("serve.ready", logging.INFO, transport="stdio", tools=[t.name for t in server.tools()])
        try:
            await server.server.run(read, write, server.initialization_options())
        finally:
            await server.tasks.aclose()
