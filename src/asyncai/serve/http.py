"""serve-mcp over Streamable HTTP: loopback by default, a bearer token on every request, the
``Origin`` and ``Host`` headers checked (DNS-rebinding protection, as the MCP spec requires), and
each client session's REPL released when the session ends."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import logging
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import uvicorn
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..log import log_event
from .server import CodeModeServer

MCP_PATH = "/mcp"
LOOPBACK_NAMES = ("localhost",)


class BindError(Exception):
    """An address serve-mcp must not listen on as configured; the message is one line."""


@dataclass(frozen=True)
class HttpOptions:
    host: str
    port: int
    token: str | None
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
    if options.token is None and not is_loopback(options.host):
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
    """ASGI middleware: every request carries ``Authorization: Bearer <token>`` or gets a 401."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
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


class _ReleasingSessionManager(StreamableHTTPSessionManager):
    """Releases a client session's REPL as soon as the SDK discards the session (DELETE, idle, crash)."""

    def __init__(self, server: CodeModeServer, **kwargs: Any) -> None:
        super().__init__(app=server.server, **kwargs)
        self.code_mode = server

    async def _discard_session(self, session_id: str, transport: StreamableHTTPServerTransport) -> None:
        # The SDK discards a session from several places; the REPL goes with the first.
        known = session_id in self._server_instances
        await super()._discard_session(session_id, transport)
        if known:
            with anyio.CancelScope(shield=True):
                await self.code_mode.release_session(f"http:{session_id}")


def http_app(server: CodeModeServer, options: HttpOptions) -> Starlette:
    manager = _ReleasingSessionManager(
        server,
        security_settings=security_settings(options),
        session_idle_timeout=server.scopes.idle_timeout,
    )
    endpoint: ASGIApp = StreamableHTTPASGIApp(manager)
    if options.token is not None:
        endpoint = BearerToken(endpoint, options.token)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return Starlette(routes=[Route(MCP_PATH, endpoint=endpoint)], lifespan=lifespan)


class _Uvicorn(uvicorn.Server):
    """uvicorn without its own signal handlers: asyncai's shutdown (``cli/shutdown.py``) cancels."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def listen(options: HttpOptions) -> socket.socket:
    """The listening socket, bound now so the real port is known (``--http 127.0.0.1:0``)."""
    family = socket.AF_INET6 if ":" in options.host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
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
