"""``asyncai mcp login|logout NAME|URL``: sign in to an HTTP MCP server (OAuth, in the browser) or
forget the sign-in. NAME is a server of the configuration (``--mcp-config``, ``--mcp-http
NAME=URL``); a URL may be given directly."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

from asyncai.cli.settings import Settings, UsageError, add_mcp_options, server_specs, sign_in_mode

if TYPE_CHECKING:
    from asyncai.tools import HttpServerSpec


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("mcp", help="sign in to an HTTP MCP server, or sign out")
    parser.add_argument(
        "mcp_action", choices=("login", "logout"), help="sign in (browser) or forget the sign-in"
    )
    parser.add_argument("mcp_target", metavar="NAME|URL", help="a configured server's name, or its URL")
    add_mcp_options(parser)


def _target(settings: Settings) -> HttpServerSpec:
    from asyncai.tools import HttpServerSpec, http_spec  # the specs: once the command runs

    target = settings.text("mcp_target") or ""
    specs = server_specs(settings)
    for spec in specs:
        if target in (spec.name, getattr(spec, "url", None)):
            if not isinstance(spec, HttpServerSpec):
                raise UsageError(f"server {spec.name} runs over stdio: only HTTP servers sign in")
            return spec
    if target.startswith(("http://", "https://")):
        return http_spec(target)
    known = ", ".join(spec.name for spec in specs) or "none configured"
    raise UsageError(f"no MCP server named {target!r} (known: {known}); give its name or its URL")


async def run(settings: Settings, out: TextIO = sys.stdout) -> int:
    from asyncai.cli.wiring import mcp_executor  # the event loop's world: only to run

    spec = _target(settings)
    from asyncai.tools.mcp.oauth import SignIn

    if settings.text("mcp_action") == "logout":
        forgot = SignIn(spec.name, spec.url).forget()
        print(f"signed out of {spec.name}" if forgot else f"{spec.name}: not signed in", file=out)
        return 0
    async with mcp_executor(settings, sign_in_mode(settings, True), specs=[spec]) as servers:
        connection = servers.server(spec.name)
        if connection.signed_in_now:
            print(f"signed in to {spec.name}", file=out)
        elif connection.signed_in_before:
            print(f"{spec.name}: already signed in (asyncai mcp logout {spec.name} to sign out)", file=out)
        else:
            print(f"{spec.name}: the server did not ask for sign-in", file=out)
    return 0
