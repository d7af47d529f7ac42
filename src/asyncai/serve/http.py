"""serve-mcp over Streamable HTTP: loopback by default, a bearer token on every request, the
``Origin`` and ``Host`` headers checked (DNS-rebinding protection, as the MCP spec requires),
each client session's REPL released when the session ends, resumable SSE streams
(``serve.events``), and, with a Redis state store, sessions any instance opened served by this one
(``serve.shared``)."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hmac
import ipaddress
import logging
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc
import uvicorn
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.runner import serve_connection
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, EventStore, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.transport_context import TransportContext
from mcp.types import InitializeRequestParams
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from asyncai.log import log_event
from asyncai.serve.events import RETRY_MS, EventBuffer, SessionEvents
from asyncai.serve.server import HTTP_PREFIX, CodeModeServer
from asyncai.serve.shared import SessionRecord

MCP_PATH = "/mcp"
LOOPBACK_NAMES = ("localhost",)


class BindError(Exception):
    """An address serve-mcp must not listen on as configured; the message is one line."""


@dataclass(frozen=True)
class HttpOptions:
    host: str
    port: int
    tokens: tuple[str, ...]
    """Bearer tokens any of which lets a client in (one per caller); none: ``--no-auth``."""
    allow_remote: bool = False


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(options: HttpOptions) -> list[str]:
    """Refuse an unsafe configuration (``BindError``); the warnings to print for a risky one."""
    if not is_loopback(options.host) and not options.allow_remote:
        raise BindError(
            f"serve-mcp --http {options.host}:{options.port} listens beyond this machine, and run_code "
            "reaches every wrapped tool: pass --allow-remote to mean it"
        )
    if not options.tokens and not is_loopback(options.host):
        raise BindError("--no-auth is only allowed on a loopback address; give a token with --token-file")
    warnings = []
    if not is_loopback(options.host):
        warnings.append(
            f"serve-mcp is listening on {options.host}:{options.port}: anyone who can reach it with the "
            "token can run code against every wrapped tool"
        )
    return warnings


def security_settings(options: HttpOptions) -> TransportSecuritySettings:
    if is_loopback(options.host):
        hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
        origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    else:
        hosts = [f"{options.host}:*"]
        origins = [f"http://{options.host}:*", f"https://{options.host}:*"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


class BearerToken:
    """ASGI middleware: every request carries ``Authorization: Bearer <token>`` with one of the
    tokens, or gets a 401."""

    def __init__(self, app: ASGIApp, tokens: tuple[str, ...]) -> None:
        self.app = app
        self.expected = [f"Bearer {token}".encode() for token in tokens]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"authorization", b"")
            # Every token is compared, so the time taken says nothing of which one nearly matched.
            if not sum(hmac.compare_digest(given, expected) for expected in self.expected):
                log_event(
                    "serve.unauthorized",
                    logging.WARNING,
                    path=scope.get("path"),
                    client=str(scope.get("client")),
                )
                response = JSONResponse(
                    {"error": "unauthorized: send Authorization: Bearer <token>"},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


_opening_session: contextvars.ContextVar[str | None] = contextvars.ContextVar("opening_session", default=None)
"""The id of the session whose opening request (``initialize``) this task serves."""


class _SessionManager(StreamableHTTPSessionManager):
    """The SDK's session manager, plus: a client session's REPL is released as soon as the SDK
    discards the session (DELETE, idle, crash); each session's SSE streams are resumable, within
    one memory bound for all (``serve.events``); and with ``shared``, sessions are registered in
    Redis and a session another instance opened is taken up (see ``serve.shared``)."""

    def __init__(self, server: CodeModeServer, **kwargs: Any) -> None:
        self.events = EventBuffer()
        super().__init__(app=server.server, retry_interval=RETRY_MS, **kwargs)
        self.code_mode = server
        self.shared = server.shared
        self._shared_ids: set[str] = set()
        """Sessions registered in Redis: Redis may say they ended elsewhere."""
        if self.shared is not None:
            server.server.middleware.append(self._register_on_initialize)

    @property
    def event_store(self) -> EventStore | None:
        """A store of its own for each transport (the SDK reads this once per transport it makes,
        ``_take_up`` too): the SDK names a stream by its request id, which each client picks."""
        return self.events.session()

    @event_store.setter
    def event_store(self, store: EventStore | None) -> None:
        assert store is None, "the stores come from self.events"  # the SDK's __init__ sets None

    async def _discard_session(self, session_id: str, transport: StreamableHTTPServerTransport) -> None:
        # The SDK discards a session from several places; the REPL goes with the first.
        known = session_id in self._server_instances
        self._shared_ids.discard(session_id)
        await super()._discard_session(session_id, transport)
        if isinstance(transport._event_store, SessionEvents):
            transport._event_store.close()  # its events go, and its resumed streams end
        if known:
            with anyio.CancelScope(shield=True):
                await self.code_mode.release_session(f"{HTTP_PREFIX}{session_id}")

    async def _serve_opening_request(
        self, http_transport: StreamableHTTPServerTransport, scope: Scope, receive: Receive, send: Send
    ) -> None:
        token = _opening_session.set(http_transport.mcp_session_id)  # the session's task inherits it
        try:
            await super()._serve_opening_request(http_transport, scope, receive, send)
        finally:
            _opening_session.reset(token)

    async def _register_on_initialize(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Server middleware: once ``initialize`` succeeded, and before its answer is sent, the
        session goes into Redis, so the client's next request may reach any instance."""
        result = await call_next(ctx)
        session_id = _opening_session.get()
        if ctx.method == "initialize" and session_id is not None and self.shared is not None:
            version = result.get("protocolVersion") if isinstance(result, dict) else None
            record = SessionRecord(str(version or ctx.protocol_version), dict(ctx.params or {}))
            if await self.shared.register(session_id, record) and session_id in self._server_instances:
                self._shared_ids.add(session_id)
        return result

    async def _handle_stateful_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        session_id = Headers(scope=scope).get(MCP_SESSION_ID_HEADER)
        if self.shared is None or session_id is None:
            await super()._handle_stateful_request(scope, receive, send)
            return
        transport = self._server_instances.get(session_id)
        if transport is None:
            await self._take_up(session_id)
        elif session_id in self._shared_ids and await self.shared.ended(session_id):
            await self._discard_session(session_id, transport)  # the SDK then answers 404
        if scope["method"] == "DELETE" and session_id in self._server_instances:
            send = self._forgetting(session_id, send)
        await super()._handle_stateful_request(scope, receive, send)

    def _forgetting(self, session_id: str, send: Send) -> Send:
        """``send`` for a DELETE: a session its client ended is gone from Redis before the answer
        goes out, so no request the client sends after it finds the session on another instance."""
        shared = self.shared
        assert shared is not None

        async def forget_then_send(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                await shared.forget(session_id)
            await send(message)

        return forget_then_send

    async def _take_up(self, session_id: str) -> None:
        """Serve a session another instance opened: a transport with its id, and a connection
        born initialized from its record (the client will not send ``initialize`` again)."""
        assert self.shared is not None and self._task_group is not None
        record = await self.shared.lookup(session_id)
        if record is None:
            return  # unknown everywhere: the SDK answers 404 and the client opens a new session
        # Held until the transport is connected: a request arriving meanwhile finds it ready.
        async with self._session_creation_lock:
            if session_id in self._server_instances:
                return
            transport = StreamableHTTPServerTransport(
                mcp_session_id=session_id,
                is_json_response_enabled=self.json_response,
                event_store=self.event_store,
                security_settings=self.security_settings,
                retry_interval=self.retry_interval,
                idle_timeout=self.session_idle_timeout,
            )
            self._server_instances[session_id] = transport
            self._shared_ids.add(session_id)
            try:
                await self._task_group.start(self._serve_taken_up, transport, record)
            except Exception as exc:  # it could not start: the request gets the SDK's 404
                log_event("serve.session_failed", logging.WARNING, session=session_id, error=str(exc))
                await self._discard_session(session_id, transport)
                return
        log_event("serve.session_taken_up", session=f"{HTTP_PREFIX}{session_id}")

    async def _serve_taken_up(
        self,
        transport: StreamableHTTPServerTransport,
        record: SessionRecord,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        session_id = transport.mcp_session_id
        assert session_id is not None
        try:
            async with transport.connect() as (read_stream, write_stream):
                dispatcher: JSONRPCDispatcher[TransportContext] = JSONRPCDispatcher(
                    read_stream, write_stream, inline_methods=frozenset({"initialize"})
                )
                connection = Connection.for_loop(
                    dispatcher, session_id=session_id, protocol_version_hint=record.protocol_version
                )
                with contextlib.suppress(ValueError):  # a record from another version: no client info
                    connection.client_params = InitializeRequestParams.model_validate(record.client_params)
                connection.initialized.set()
                task_status.started()
                with transport.idle_scope or anyio.CancelScope():
                    await serve_connection(
                        self.app, dispatcher, connection=connection, lifespan_state=self._lifespan_state
                    )
        except Exception as exc:
            log_event("serve.session_failed", logging.WARNING, session=session_id, error=str(exc))
        finally:
            await self._discard_session(session_id, transport)


def http_app(server: CodeModeServer, options: HttpOptions) -> Starlette:
    manager = _SessionManager(
        server,
        security_settings=security_settings(options),
        session_idle_timeout=server.scopes.idle_timeout,
    )
    endpoint: ASGIApp = StreamableHTTPASGIApp(manager)
    if options.tokens:
        endpoint = BearerToken(endpoint, options.tokens)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            try:
                yield
            finally:
                await server.tasks.aclose()  # their snippets end before the REPLs close

    return Starlette(routes=[Route(MCP_PATH, endpoint=endpoint)], lifespan=lifespan)


class _Uvicorn(uvicorn.Server):
    """uvicorn without its own signal handlers: asyncai's shutdown (``cli/shutdown.py``) cancels."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def listen(options: HttpOptions) -> socket.socket:
    """The listening socket, bound now so the real port is known (``--http 127.0.0.1:0``)."""
    family = socket.AF_INET6 if ":" in options.host.strip("[]") else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY on accepted connections only for such a socket,
    # and without it each answer on a kept-alive connection waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((options.host.strip("[]"), options.port))
    except OSError as exc:
        sock.close()
        raise BindError(f"cannot listen on {options.host}:{options.port}: {exc.strerror or exc}") from None
    sock.listen(128)
    return sock


async def serve_http(server: CodeModeServer, options: HttpOptions, sock: socket.socket) -> None:
    """Serve on ``sock`` until cancelled; a cancel shuts down gracefully (sessions end, REPLs close)."""
    config = uvicorn.Config(
        http_app(server, options), log_level="warning", lifespan="on", timeout_graceful_shutdown=5
    )
    uvicorn_server = _Uvicorn(config)
    task = asyncio.ensure_future(uvicorn_server.serve(sockets=[sock]))
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        uvicorn_server.should_exit = True
        await task
        raise
