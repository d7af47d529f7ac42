"""MCP servers on loopback Streamable HTTP that speak exactly one protocol era.

``era_server("2026-07-28")`` serves only the stateless 2026-07-28 protocol: the SDK's ``MCPServer``
on stateless Streamable HTTP, with ``server/discover`` and ``subscriptions/listen``, answering the
``initialize`` handshake with -32022 (unsupported protocol version, naming only 2026-07-28).

``era_server("2025-11-25")`` serves only the 2025 handshake era: ``server/discover`` is an unknown
method (-32601), as on any server older than 2026-07-28, and a request stamped with the
2026-07-28 envelope is refused.

Both have the same tools: ``whoami`` (the server's name and the protocol version the call was
served under), ``echo`` and ``add_tool`` (registers a tool returning its own name, then announces
the change the era's way: ``notifications/tools/list_changed`` on the call's own response stream
under 2025, a ``tools`` event on the ``subscriptions/listen`` streams under 2026).

Every request is recorded (method, protocol version, the client's ``clientInfo`` as the SDK server
sees it), and so is every refusal. ``listening`` is set once a ``subscriptions/listen`` stream has
subscribed (events published from then on reach it); ``add_before_listen`` changes the tool list
just before the first listen stream subscribes.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus, ServerEvent, ToolsListChanged
from mcp.types import ToolAnnotations, ToolListChangedNotification
from mcp_types import INVALID_REQUEST, METHOD_NOT_FOUND, UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tests.fakes.loopback import listening_socket, serving, url_of

Era = Literal["2026-07-28", "2025-11-25"]
MODERN: Era = "2026-07-28"
HANDSHAKE: Era = "2025-11-25"
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False)


@dataclass(frozen=True)
class Seen:
    """One request as the server's middleware saw it."""

    method: str
    protocol_version: str
    client_name: str | None
    """``clientInfo.name``: from ``initialize`` (2025), else the session's client params (under
    2026-07-28 the SDK builds them from the request's ``_meta`` envelope)."""
    client_version: str | None


@dataclass
class EraServer:
    era: Era
    base_url: str
    seen: list[Seen] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    """Methods refused because they belong to the other era."""
    listening: threading.Event = field(default_factory=threading.Event)
    """A ``subscriptions/listen`` stream subscribed to change events (2026-07-28)."""
    add_before_listen: str | None = None
    """A tool to add (and announce, to nobody yet) when the first ``subscriptions/listen`` request
    arrives, before it subscribes: a change in the window between a client's first ``tools/list``
    and its listen stream."""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"{self.base_url}/mcp"

    def record(self, seen: Seen) -> None:
        with self._lock:
            self.seen.append(seen)

    def refuse(self, method: str) -> None:
        with self._lock:
            self.refused.append(method)

    def requests(self, method: str) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.method == method]


class _WatchedBus(InMemorySubscriptionBus):
    """The SDK's in-process bus, telling the test when a listen stream subscribes (the stream
    buffers events from then on, so a change published afterwards cannot be lost)."""

    def __init__(self, subscribed: threading.Event) -> None:
        super().__init__()
        self._subscribed = subscribed

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        unsubscribe = super().subscribe(listener)
        self._subscribed.set()
        return unsubscribe


def _client_info(ctx: ServerRequestContext[Any, Any]) -> tuple[str | None, str | None]:
    if ctx.method == "initialize":
        info = (ctx.params or {}).get("clientInfo")
        return (info.get("name"), info.get("version")) if isinstance(info, dict) else (None, None)
    params = ctx.session.client_params
    return (params.client_info.name, params.client_info.version) if params is not None else (None, None)


class _EraGate:
    """Server middleware: record every request, refuse the other era's."""

    def __init__(self, record: EraServer, change_tools: Callable[[str], Awaitable[None]]) -> None:
        self.record = record
        self.change_tools = change_tools

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        record = self.record
        record.record(Seen(ctx.method, ctx.protocol_version, *_client_info(ctx)))
        modern_request = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS and ctx.method != "initialize"
        if record.era == MODERN:
            if ctx.method == "initialize":
                record.refuse(ctx.method)
                requested = (ctx.params or {}).get("protocolVersion")
                raise MCPError(
                    UNSUPPORTED_PROTOCOL_VERSION,
                    "this server speaks only the 2026-07-28 protocol",
                    {"supported": [MODERN], "requested": requested},
                )
            if not modern_request:
                record.refuse(ctx.method)
                raise MCPError(INVALID_REQUEST, "this server speaks only the 2026-07-28 protocol")
        else:
            if ctx.method == "server/discover":
                record.refuse(ctx.method)
                raise MCPError(METHOD_NOT_FOUND, "Method not found", ctx.method)
            if modern_request:
                record.refuse(ctx.method)
                raise MCPError(INVALID_REQUEST, "this server speaks only the 2025-11-25 handshake protocol")
        if ctx.method == "subscriptions/listen" and record.add_before_listen is not None:
            name, record.add_before_listen = record.add_before_listen, None
            await self.change_tools(name)
        return await call_next(ctx)


def _build(server_name: str, record: EraServer) -> MCPServer:
    bus = _WatchedBus(record.listening)

    def add(tool_name: str) -> None:
        def added() -> str:
            return tool_name

        server.add_tool(
            added,
            name=tool_name,
            description=f"Added at run time; returns {tool_name!r}.",
            annotations=READ_ONLY,
        )

    async def add_and_publish(tool_name: str) -> None:
        add(tool_name)
        await bus.publish(ToolsListChanged())

    server = MCPServer(
        server_name,
        version="0.0.1",
        subscriptions=bus,
        middleware=[_EraGate(record, add_and_publish)],
    )

    @server.tool(annotations=READ_ONLY)
    def whoami(ctx: Context) -> dict[str, Any]:
        """The server's name and the protocol version this call was served under."""
        return {"server": server_name, "protocol_version": ctx.protocol_version}

    @server.tool(annotations=READ_ONLY)
    def echo(text: str) -> str:
        """Return the text."""
        return text

    @server.tool(annotations=READ_ONLY)
    async def add_tool(name: str, ctx: Context) -> str:
        """Add a read-only tool ``name`` that returns its own name, and announce the new tool list."""
        add(name)
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await ctx.notify_tools_changed()  # to every subscriptions/listen stream
        else:
            # On this call's own response stream: open for sure, unlike the standalone GET stream.
            await ctx.session.send_notification(
                ToolListChangedNotification(), related_request_id=ctx.request_context.request_id
            )
        return f"added {name}"

    return server


@contextlib.contextmanager
def era_server(era: Era, name: str | None = None) -> Iterator[EraServer]:
    """Serve until the block ends; the socket is bound and listening before it starts."""
    sock = listening_socket()
    record = EraServer(era, url_of(sock))
    server = _build(name or f"era-{era}", record)
    app = server.streamable_http_app(stateless_http=era == MODERN)
    with serving(app, sock):
        yield record
