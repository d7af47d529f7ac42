"""``CodeModeServer``: the MCP server side of ``asyncai serve-mcp``.

The client sees ``run_code`` with the description and catalog the agent's model sees (the same
``CodeMode``, not a copy); ``--expose-direct`` adds the wrapped tools unchanged. Each
client session has its own REPL (stdio: the connection; HTTP: the ``Mcp-Session-Id``); a
stateless request (the 2026-07-28 protocol over HTTP has no session) gets a fresh one. The
result's first content block is the snippet's value alone; the variables note (which in the agent
rides on the next user message) follows as a second block when it changed. The structured content
carries both and a bounded audit of the nested calls.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from typing import Any

import mcp.types as mt
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.session import ServerSession
from mcp.server.stdio import stdio_server

from asyncai.code_mode import CodeMode
from asyncai.code_mode.catalog.stubs import RUN_CODE
from asyncai.code_mode.scopes import ReplScopes
from asyncai.log import log_event
from asyncai.serve.approval import ElicitationApprover
from asyncai.serve.client_asking import ServeClients
from asyncai.serve.shared import SessionBusy, SharedSessions, state_key
from asyncai.tools.mcp.results import mcp_result, mcp_tool
from asyncai.tools.types import ToolCallOutput

STDIO_SESSION = "stdio"
HTTP_PREFIX = "http:"
AUDIT_CALLS_SHOWN = 20
"""Nested calls listed in a result's structured content; the rest are counted (a client may show
structured content to its model, which pays for it in context)."""
RUN_CODE_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "result": {"type": "string", "description": "what the snippet returned: the first content block"},
        "variables": {
            "type": "string",
            "description": "the variables the REPL holds, when that changed: the second content block",
        },
        "nested_calls": {
            "type": "array",
            "description": f"the first {AUDIT_CALLS_SHOWN} MCP calls the snippet made: tool, arguments, "
            "is_error, bytes, mutating",
            "items": {"type": "object"},
        },
        "nested_call_counts": {
            "type": "object",
            "description": "every call the snippet made, counted: total, failed, mutating, refused",
        },
        "nested_calls_left_out": {"type": "integer", "description": "calls not listed in nested_calls"},
    },
    "required": ["result", "nested_calls", "nested_call_counts"],
}


def audit_content(calls: list[dict[str, Any]], shown: int = AUDIT_CALLS_SHOWN) -> dict[str, Any]:
    """A snippet's nested calls for structured content: the first ``shown``, counts of all."""
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


DEFAULT_IDLE_TIMEOUT = 30 * 60.0
"""A session's REPL is closed after this long without a call (the SDK's HTTP session default)."""
INSTRUCTIONS = (
    "run_code runs Python that calls the wrapped MCP tools as async functions: fetch, filter and "
    "return only what the answer needs, in one call."
)


def session_key(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """Whose REPL a request uses: the stdio connection, an HTTP ``Mcp-Session-Id``, or nobody's."""
    request = ctx.request
    if request is None:
        return STDIO_SESSION
    headers = getattr(request, "headers", None)
    session_id = headers.get("mcp-session-id") if headers is not None else None
    return f"{HTTP_PREFIX}{session_id}" if session_id else None


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
    ) -> None:
        self.executor = executor
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
        self.server: Server[Any] = Server(
            "asyncai",
            version=version,
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    def initialization_options(self) -> Any:
        return self.server.create_initialization_options(NotificationOptions(tools_changed=True))

    def tools(self) -> list[mt.Tool]:
        [run_code] = self.executor.tools()
        tool = mcp_tool(run_code)
        tools = [tool.model_copy(update={"output_schema": RUN_CODE_OUTPUT_SCHEMA})]
        if self.expose_direct:
            tools += [mcp_tool(definition) for definition in self.executor.inner.tools()]
        return tools

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListToolsResult:
        self._remember(ctx)
        return mt.ListToolsResult(tools=self.tools())

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
    ) -> mt.CallToolResult:
        arguments = dict(params.arguments or {})
        if params.name == RUN_CODE:
            return await self._run_code(ctx, arguments)
        if self.expose_direct and params.name in {tool.name for tool in self.executor.inner.tools()}:
            return mcp_result(await self.executor.inner.call_tool(params.name, arguments))
        names = ", ".join(tool.name for tool in self.tools())
        return mcp_result(ToolCallOutput.error(f"error: unknown tool {params.name!r}; the tools are {names}"))

    async def _run_code(
        self, ctx: ServerRequestContext[Any, Any], arguments: dict[str, Any]
    ) -> mt.CallToolResult:
        with self.clients.serving(ctx.session, ctx.request_id):
            return await self._run_code_for(ctx, arguments)

    async def _run_code_for(
        self, ctx: ServerRequestContext[Any, Any], arguments: dict[str, Any]
    ) -> mt.CallToolResult:
        approver = ElicitationApprover(ctx.session, ctx.request_id)
        key = self._remember(ctx)
        if self.shared is not None and key is not None and key.startswith(HTTP_PREFIX):
            output, note = await self._run_shared(key, arguments, approver)
        else:
            async with self.scopes.use(key) as use:
                output = await use.scope.call_tool(RUN_CODE, arguments, approver=approver)
            note = self.scopes.note_if_changed(key, use.scope.context_note()) if key is not None else None
        audit = (output.audit or {}).get("nested_calls", [])
        log_event("serve.run_code", session=key, is_error=output.is_error, nested_calls=len(audit))
        # The value on its own first, so a program can parse it; the note, when it changed, after.
        blocks = [mt.TextContent(type="text", text=output.content)]
        structured: dict[str, Any] = {"result": output.content}
        if note:
            blocks.append(mt.TextContent(type="text", text=note))
            structured["variables"] = note
        return mt.CallToolResult(
            content=list(blocks),
            structured_content={**structured, **audit_content(audit)},
            is_error=output.is_error,
        )

    async def _run_shared(
        self, key: str, arguments: dict[str, Any], approver: ElicitationApprover
    ) -> tuple[ToolCallOutput, str | None]:
        """A run of a session shared through Redis (``serve.shared``): runs of the session on this
        instance queue here; then, under the session's lease, take up the REPL another instance
        saved since, run, and save it for the next instance."""
        assert self.shared is not None
        session_id = key.removeprefix(HTTP_PREFIX)
        queue = self._session_runs.get(session_id)
        if queue is None:
            queue = self._session_runs[session_id] = asyncio.Lock()
        async with queue:
            try:
                async with self.shared.lease(session_id) as lease:
                    saved_as = state_key(session_id) if lease.held else None
                    usable = lambda: not lease.lost  # noqa: E731 (read when the run ends)
                    async with self.scopes.use(key, saved_as=saved_as, shared=True, may_save=usable) as use:
                        output = await use.scope.call_tool(RUN_CODE, arguments, approver=approver)
                    if saved_as is not None and not lease.lost:
                        await self.shared.touch(session_id)
            except SessionBusy as exc:
                return ToolCallOutput.error(f"error: {exc}"), None
        return output, self.scopes.note_if_changed(key, use.scope.context_note())


async def serve_stdio(server: CodeModeServer) -> None:
    """Serve one client on stdin/stdout until it disconnects (stdout carries only the protocol)."""
    async with stdio_server() as (read, write):
        log_event("serve.ready", logging.INFO, transport="stdio", tools=[t.name for t in server.tools()])
        await server.server.run(read, write, server.initialization_options())
