"""``asyncai serve-mcp``: code mode for any MCP client, over stdio or Streamable HTTP."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import TYPE_CHECKING

from asyncai.cli.settings import (
    DEFAULT_STATE_TTL,
    Settings,
    UsageError,
    add_code_options,
    add_mcp_options,
    read_text_file,
    server_requests,
)

if TYPE_CHECKING:
    from asyncai.serve import HttpOptions
    from asyncai.serve.shared import SharedSessions

TOKEN_ENV = "ASYNCAI_MCP_TOKEN"


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "serve-mcp",
        help="serve the MCP servers through code mode to any MCP client",
        description="An MCP server offering run_code over the configured MCP servers (stdio by default).",
    )
    add_mcp_options(parser)
    add_code_options(parser)
    group = parser.add_argument_group("serving")
    group.add_argument("--http", metavar="HOST:PORT", help="serve Streamable HTTP at http://HOST:PORT/mcp")
    group.add_argument(
        "--token-file",
        metavar="PATH",
        help=f"bearer tokens HTTP clients may send, one per line: a caller each (or env {TOKEN_ENV})",
    )
    group.add_argument(
        "--no-auth", action="store_true", default=None, help="no token (only on a loopback address)"
    )
    group.add_argument(
        "--allow-remote", action="store_true", default=None, help="allow --http on a non-loopback address"
    )
    group.add_argument(
        "--expose-direct", action="store_true", default=None, help="offer the wrapped tools next to run_code"
    )
    group.add_argument(
        "--share-saved-skills",
        action="store_true",
        default=None,
        help="over HTTP with tokens, let every caller list and load the skills any caller's model saved "
        "(by default each caller has its own)",
    )
    group.add_argument(
        "--session-idle", type=float, metavar="SECONDS", help="close an idle client session's REPL (1800)"
    )
    group.add_argument(
        "--approval-wait",
        type=float,
        metavar="SECONDS",
        help="how long a snippet waits for the answer about a mutating call under --mutations ask (600)",
    )
    shared = parser.add_argument_group("several instances behind a load balancer (--http)")
    shared.add_argument(
        "--state-store",
        metavar="URL",
        help="share client sessions and their REPLs with every instance using redis://HOST:PORT/DB",
    )
    shared.add_argument(
        "--state-ttl",
        type=float,
        metavar="SECONDS",
        help="a shared session, and a REPL handle, expires this long after its last run (86400)",
    )
    shared.add_argument(
        "--lease-wait",
        type=float,
        metavar="SECONDS",
        help="how long a run waits while another instance runs the same session (10)",
    )


def http_options(settings: Settings) -> HttpOptions | None:
    from asyncai.serve import HttpOptions

    address = settings.text("http")
    if address is None:
        return None
    host, colon, port_text = address.rpartition(":")
    if not colon or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise UsageError(f"--http takes HOST:PORT (e.g. 127.0.0.1:8765), not {address!r}")
    no_auth = settings.switch("no_auth")
    if no_auth and settings.text("token_file") is not None:
        raise UsageError("--no-auth and --token-file contradict each other: give one")
    # A typed --no-auth wins over a token in the environment, which the shell may carry anyway.
    tokens = () if no_auth else _tokens(settings)
    if not tokens and not no_auth:
        raise UsageError(
            f"serve-mcp --http needs a bearer token: --token-file PATH or {TOKEN_ENV} "
            "(or --no-auth on a loopback address)"
        )
    return HttpOptions(
        host=host, port=int(port_text), tokens=tokens, allow_remote=settings.switch("allow_remote")
    )


def _tokens(settings: Settings) -> tuple[str, ...]:
    """The bearer tokens: one per line of ``--token-file`` (a caller each), or ``ASYNCAI_MCP_TOKEN``."""
    path = settings.text("token_file")
    text = read_text_file(path, "--token-file") if path is not None else os.environ.get(TOKEN_ENV)
    if text is None:
        return ()
    where = f"--token-file {path}" if path is not None else TOKEN_ENV
    tokens = tuple(line.strip() for line in text.splitlines() if line.strip())
    if not tokens:
        raise UsageError(f"{where} holds no token")
    if any(char.isspace() for token in tokens for char in token):
        raise UsageError(f"{where} must hold one token per line: no spaces inside a token")
    return tokens


def shared_store_url(settings: Settings, http: bool) -> str | None:
    """The Redis URL sessions are shared through, if any. Only a typed ``--state-store`` counts:
    one in the config file is the agent's (where to keep resumed sessions' REPLs)."""
    from asyncai.state.stores import REDIS_SCHEMES

    location = settings.text("state_store") if "state_store" in settings.flags else None
    if location is None:
        if "lease_wait" in settings.flags:  # --state-ttl also sets when REPL handles expire
            raise UsageError("--lease-wait is for sessions shared with --state-store")
        return None
    if not location.startswith(REDIS_SCHEMES):
        raise UsageError(
            "serve-mcp shares sessions through Redis only: "
            f"--state-store redis://HOST:PORT/DB, not {location!r}"
        )
    if not http:
        raise UsageError("--state-store shares HTTP sessions between instances: it needs --http")
    return location


async def run(settings: Settings) -> int:
    # What serving needs, the MCP server side (mcp.server, starlette, uvicorn) with it, loads only
    # when serve-mcp runs.
    from asyncai.cli.wiring import code_mode_executor
    from asyncai.code_mode.catalog.description import CLIENT_CATALOG_BUDGET
    from asyncai.serve import BindError, CodeModeServer, check_bind, listen, serve_http, serve_stdio
    from asyncai.serve.approval import APPROVAL_TIMEOUT
    from asyncai.serve.client_asking import ServeClients
    from asyncai.serve.http import MCP_PATH
    from asyncai.transcripts.session import asyncai_version

    options = http_options(settings)
    store_url = shared_store_url(settings, http=options is not None)
    sock = None
    if options is not None:
        try:
            for warning in check_bind(options):
                print(f"asyncai: warning: {warning}", file=sys.stderr)
            sock = listen(options)
        except BindError as exc:
            raise UsageError(str(exc)) from None
    try:
        async with contextlib.AsyncExitStack() as closing:
            shared = await _shared_sessions(settings, store_url, closing) if store_url else None
            store = shared.store if shared is not None else None
            # What a wrapped server asks goes on to the client whose snippet made the call.
            clients = ServeClients()
            requests = server_requests(settings, person=clients)
            requests.sampler = clients
            # Callers told apart by their tokens keep their saved skills apart, unless told to share.
            per_caller = bool(options is not None and options.tokens) and not settings.switch(
                "share_saved_skills"
            )
            executor = await closing.enter_async_context(
                code_mode_executor(
                    settings,
                    state_store=store,
                    requests=requests,
                    catalog_budget=CLIENT_CATALOG_BUDGET,
                    skills_per_caller=per_caller,
                )
            )
            server = CodeModeServer(
                executor,
                clients=clients,
                handle_ttl=settings.number("state_ttl", DEFAULT_STATE_TTL),
                expose_direct=settings.switch("expose_direct"),
                idle_timeout=settings.number("session_idle", 1800.0),
                approval_timeout=settings.number("approval_wait", APPROVAL_TIMEOUT),
                version=asyncai_version(),
                shared=shared,
            )
            if options is None or sock is None:
                await serve_stdio(server)
                return 0
            host, port = sock.getsockname()[:2]
            shown = f"[{host}]" if ":" in host else host
            print(
                f"asyncai serve-mcp: listening on http://{shown}:{port}{MCP_PATH}",
                file=sys.stderr,
                flush=True,
            )
            await serve_http(server, options, sock)
    finally:
        if sock is not None:
            sock.close()
    return 0


async def _shared_sessions(
    settings: Settings, url: str, closing: contextlib.AsyncExitStack
) -> SharedSessions:
    """The Redis store at ``url``, checked now (unreachable: a one-line error), closed last."""
    from asyncai.serve.shared import DEFAULT_LEASE_WAIT, SharedSessions
    from asyncai.state.stores import RedisStore, StateStoreError

    ttl = settings.number("state_ttl", DEFAULT_STATE_TTL)
    try:
        store = RedisStore(url, ttl)
    except ValueError as exc:
        raise UsageError(f"--state-store {url}: {exc}") from None
    closing.push_async_callback(store.aclose)
    try:
        await store.check()
    except StateStoreError as exc:
        raise UsageError(str(exc)) from None
    return SharedSessions(store, lease_wait=settings.number("lease_wait", DEFAULT_LEASE_WAIT))
