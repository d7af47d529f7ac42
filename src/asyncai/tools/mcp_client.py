"""``McpToolExecutor``: sessions to several MCP servers, kept open for the executor's life.

Each server connection lives in its own asyncio task, which owns the transport's context
managers (anyio cancel scopes must be entered and left in one task) and waits until the executor
closes. Calls go straight to the shared ``ClientSession`` from any task, without a lock, so
gathered calls run concurrently. A dead server fails its own calls only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections import deque
from collections.abc import AsyncIterator, Iterable
from typing import Any, TextIO

import httpx2
import mcp.types as mt
from mcp import ClientSession, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from ..log import log_event
from . import stdio_patch
from .results import call_output, tool_definition
from .specs import HttpServerSpec, ServerSpec, StdioServerSpec, unique_names
from .types import DuplicateTool, ToolCallOutput, ToolDefinition, ToolExecutor, ToolRoute

DEFAULT_TOOL_TIMEOUT = 120.0
DEFAULT_CONNECT_TIMEOUT = 60.0
_STDERR_HEAD_LINES = 5

stdio_patch.apply()


class ServerStartError(Exception):
    """An MCP server could not be started or initialised; the message is one line."""


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _describe(exc: BaseException) -> str:
    leaves = [leaf for leaf in _leaves(exc) if not isinstance(leaf, asyncio.CancelledError)] or [exc]
    leaf = leaves[0]
    if isinstance(leaf, OSError) and leaf.strerror:
        return leaf.strerror
    text = str(leaf).strip().splitlines()
    return text[0] if text else type(leaf).__name__


class _StderrPump:
    """Reads a child's stderr on a thread: every line goes to the log, the first few are kept."""

    def __init__(self, server: str) -> None:
        self.server = server
        self.head: deque[str] = deque(maxlen=_STDERR_HEAD_LINES)
        read_fd, write_fd = os.pipe()
        self.writer: TextIO = os.fdopen(write_fd, "w")
        self._reader = os.fdopen(read_fd, "rb", buffering=0)
        self._thread = threading.Thread(target=self._pump, name=f"mcp-stderr-{server}", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        with self._reader:
            for raw in self._reader:
                line = raw.decode(errors="replace").rstrip()
                if not line:
                    continue
                if len(self.head) < _STDERR_HEAD_LINES:
                    self.head.append(line)
                log_event("mcp.server_stderr", logging.INFO, server=self.server, line=line)

    def close_writer(self) -> None:
        if not self.writer.closed:
            self.writer.close()

    def wait(self, timeout: float) -> None:
        self.close_writer()
        self._thread.join(timeout)


class McpConnection:
    """One MCP server: its session, its tools, and whether it is still alive."""

    def __init__(self, spec: ServerSpec, tool_timeout: float) -> None:
        self.spec = spec
        self.tool_timeout = tool_timeout
        self.tools: list[ToolDefinition] = []
        self.dead_reason: str | None = None
        self._session: ClientSession | None = None
        self._ready: asyncio.Future[None] | None = None
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stderr: _StderrPump | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    async def start(self, timeout: float = DEFAULT_CONNECT_TIMEOUT) -> None:
        self._ready = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._serve(), name=f"mcp-{self.name}")
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), timeout)
        except TimeoutError:
            await self.close()
            raise ServerStartError(
                await self._start_error(f"no answer to initialize within {timeout:g}s")
            ) from None

    async def _start_error(self, reason: str) -> str:
        """The one-line start failure, with the head of the server's stderr once its pump has ended."""
        kind = "command" if isinstance(self.spec, StdioServerSpec) else "url"
        message = f"cannot start MCP server '{self.name}' ({kind}: {self.spec.display}): {reason}"
        if self._stderr is not None:
            await asyncio.to_thread(self._stderr.wait, 2.0)
            if self._stderr.head:
                message += " | stderr: " + " / ".join(self._stderr.head)
        return message

    @contextlib.asynccontextmanager
    async def _open_session(self) -> AsyncIterator[ClientSession]:
        spec = self.spec
        if isinstance(spec, StdioServerSpec):
            self._stderr = _StderrPump(self.name)
            # The SDK alone passes only HOME, PATH and a few more; a server sees the user's environment.
            env = {**os.environ, **spec.env}
            params = StdioServerParameters(command=spec.command, args=list(spec.args), env=env)
            async with stdio_client(params, errlog=self._stderr.writer) as (read, write):
                self._stderr.close_writer()
                async with ClientSession(read, write) as session:
                    yield session
        else:
            assert isinstance(spec, HttpServerSpec)
            timeout = httpx2.Timeout(30.0, read=max(self.tool_timeout + 30.0, 300.0))
            async with (
                httpx2.AsyncClient(headers=spec.headers, timeout=timeout) as http,
                # The SDK caps one SSE event at 1 MiB; tool output is unbounded (ADR decision 3).
                streamable_http_client(spec.url, http_client=http, max_sse_event_size=None) as (read, write),
                ClientSession(read, write) as session,
            ):
                yield session

    async def _serve(self) -> None:
        assert self._ready is not None
        try:
            async with self._open_session() as session:
                await session.initialize()
                self.tools = await self._list_tools(session)
                self._session = session
                self._ready.set_result(None)
                await self._closing.wait()
        except BaseException as exc:  # the task owns the transport: every failure ends here
            if not self._ready.done() and self._closing.is_set():
                self._ready.cancel()  # start() gave up waiting and reports the failure itself
            elif not self._ready.done():
                self._ready.set_exception(ServerStartError(await self._start_error(_describe(exc))))
            elif not self._closing.is_set():
                self._mark_dead(_describe(exc))
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self._session = None
            if self._stderr is not None:
                self._stderr.close_writer()

    @staticmethod
    async def _list_tools(session: ClientSession) -> list[ToolDefinition]:
        tools: list[ToolDefinition] = []
        cursor: str | None = None
        while True:
            page = await session.list_tools(
                params=mt.PaginatedRequestParams(cursor=cursor) if cursor else None
            )
            tools.extend(tool_definition(t) for t in page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    def _mark_dead(self, reason: str) -> None:
        if self.dead_reason is None:
            self.dead_reason = reason
            log_event("mcp.server_died", logging.ERROR, server=self.name, reason=reason)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolCallOutput:
        limit = self.tool_timeout
        session = self._session
        if session is None or self.dead_reason is not None:
            return ToolCallOutput.error(
                f"tool error: MCP server '{self.name}' is not running ({self.dead_reason})"
            )
        try:
            result = await session.call_tool(name, arguments, read_timeout_seconds=limit)
        except MCPError as exc:
            if exc.code == mt.REQUEST_TIMEOUT:
                return ToolCallOutput.error(f"tool {name} timed out after {limit:g}s")
            if exc.code == mt.CONNECTION_CLOSED:
                self._mark_dead(exc.message)
            return ToolCallOutput.error(f"tool error: {name} on server '{self.name}': {exc.message}")
        except Exception as exc:  # transport or output-schema validation failures
            return ToolCallOutput.error(f"tool error: {name} on server '{self.name}': {_describe(exc)}")
        return call_output(result)

    async def close(self) -> None:
        self._closing.set()
        if self._task is not None:
            if self._ready is not None and not self._ready.done():
                self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task


class McpToolExecutor(ToolExecutor):
    """Routes each tool name to exactly one server (ADR A2); the first server to declare a name wins.

    Use as ``async with McpToolExecutor(specs) as executor: ...``.
    """

    def __init__(
        self,
        specs: Iterable[ServerSpec],
        tool_timeout: float = DEFAULT_TOOL_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    ) -> None:
        self.connections = [McpConnection(spec, tool_timeout) for spec in unique_names(list(specs))]
        self.connect_timeout = connect_timeout
        self.routes: dict[str, ToolRoute] = {}
        self.duplicates: list[DuplicateTool] = []
        self._by_server = {c.name: c for c in self.connections}

    async def __aenter__(self) -> McpToolExecutor:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def connect(self) -> None:
        """Start every server concurrently; on any failure close them all and raise the first error."""
        results = await asyncio.gather(
            *(c.start(self.connect_timeout) for c in self.connections), return_exceptions=True
        )
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            await self.aclose()
            first = errors[0]
            raise first if isinstance(first, ServerStartError) else ServerStartError(_describe(first))
        self._build_routes()

    def _build_routes(self) -> None:
        for connection in self.connections:
            for tool in connection.tools:
                kept = self.routes.get(tool.name)
                if kept is None:
                    self.routes[tool.name] = ToolRoute(tool=tool, server=connection.name)
                    continue
                self.duplicates.append(DuplicateTool(tool.name, kept.server, connection.name))
                log_event(
                    "mcp.duplicate_tool",
                    logging.WARNING,
                    tool=tool.name,
                    kept_server=kept.server,
                    dropped_server=connection.name,
                )

    def tools(self) -> list[ToolDefinition]:
        return [route.tool for route in self.routes.values()]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolCallOutput:
        route = self.routes.get(name)
        if route is None:
            return ToolCallOutput.error(f"tool error: unknown tool {name!r}")
        return await self._by_server[route.server].call_tool(name, arguments)

    async def aclose(self) -> None:
        await asyncio.gather(*(c.close() for c in self.connections))
