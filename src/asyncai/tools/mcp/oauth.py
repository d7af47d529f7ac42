"""Signing in to HTTP MCP servers, as Claude Code does, on the ``mcp`` SDK's OAuth client.

The SDK's ``OAuthClientProvider`` does the protocol: on a 401 it discovers the protected-resource
and authorization-server metadata, registers a client (or uses a client ID metadata document),
runs PKCE and refreshes tokens. This module gives it what is ours: where tokens live (one 0600
file per server URL under the user's state directory), how the person is asked (Python's
``webbrowser``, so ``BROWSER`` chooses; the URL printed when there is no browser or with
``--no-browser``), where the redirect lands (a listener on 127.0.0.1), and when nobody can be
asked (``SignInRequired``, so ``asyncai tools`` says which command signs in).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import socket
import sys
import time
import webbrowser
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl, ValidationError

from asyncai.files import state_home, write_private
from asyncai.log import log_event
from asyncai.tools.mcp.specs import OAuthSettings

SignInMode = Literal["browser", "print", "never"]
"""``browser``: open it (printing the URL when no browser opens); ``print``: print the URL only
(``--no-browser``); ``never``: nobody can answer, so a server that needs sign-in is reported."""
SIGN_IN_MODES: tuple[SignInMode, ...] = ("browser", "print", "never")

SIGN_IN_TIMEOUT = 300.0
"""How long the loopback listener waits for the browser to come back."""

_CALLBACK_PATH = "/callback"


def sign_in_failure(exc: BaseException) -> str | None:
    """The one-line reason when ``exc`` is a sign-in failure (discovery, registration, the token
    endpoint, a refresh, the browser never coming back), else ``None``."""
    if isinstance(exc, SignInRequired):
        return str(exc)
    if isinstance(exc, OAuthFlowError | SignInTimeout):
        text = str(exc).strip().splitlines()
        return f"sign-in failed: {text[0] if text else type(exc).__name__}"
    return None


class SignInTimeout(TimeoutError):
    """Nobody came back from the browser in time."""


class SignInRequired(Exception):
    """The server wants a sign-in and nobody can give it here; the message names the command."""

    def __init__(self, server: str, expired: bool = False) -> None:
        self.server = server
        what = "sign-in expired and could not be refreshed" if expired else "needs sign-in"
        super().__init__(f"{what} (asyncai mcp login {server})")


def _port_of(uri: str | None) -> int | None:
    if uri is None:
        return None
    try:
        parts = urlsplit(uri)
        return parts.port if parts.hostname == "127.0.0.1" else None
    except ValueError:
        return None


def token_path(url: str, home: Path | None = None) -> Path:
    """The file holding the sign-in for ``url``: named by a hash, so the URL's own secrets (if any)
    never become a file name."""
    digest = hashlib.sha256(url.encode()).hexdigest()[:32]
    return (home or state_home()) / "oauth" / f"{digest}.json"


class TokenFile:
    """The SDK's ``TokenStorage`` as one JSON file per server URL: tokens, when they expire, and the
    client the authorization server registered. A client registered for another redirect URI (an
    earlier run's random port) is forgotten, so the flow registers again rather than fail.

    The file is written only with tokens: a client registered during a sign-in is kept in memory
    until its tokens arrive, so a sign-in cut short leaves no file (it would later read as a sign-in
    that expired, where there never was one)."""

    def __init__(
        self, url: str, path: Path, redirect_uri: str, configured: OAuthClientInformationFull | None
    ) -> None:
        self.url = url
        self.path = path
        self.redirect_uri = redirect_uri
        self.configured = configured
        self._registered: dict[str, Any] | None = None
        """The client registered in this sign-in, saved with its tokens."""

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) and data.get("url") == self.url else {}

    def _write(self, data: dict[str, Any]) -> None:
        try:
            write_private(self.path, json.dumps({**data, "url": self.url}))
        except OSError as exc:  # the sign-in still holds for this run
            log_event("oauth.not_saved", logging.WARNING, path=str(self.path), error=exc.strerror or str(exc))

    @property
    def expires_at(self) -> float | None:
        expires = self._read().get("expires_at")
        return float(expires) if isinstance(expires, int | float) else None

    async def get_tokens(self) -> OAuthToken | None:
        try:
            return OAuthToken.model_validate(self._read()["tokens"])
        except (KeyError, ValidationError):
            return None

    @property
    def signed_in(self) -> bool:
        """Whether the file holds a sign-in's tokens (a file of an interrupted sign-in does not)."""
        return isinstance(self._read().get("tokens"), dict)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        data = self._read()
        if self._registered is not None:
            data["client"] = self._registered
        data["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        data["expires_at"] = time.time() + tokens.expires_in if tokens.expires_in is not None else None
        self._write(data)

    def registered_redirect(self) -> str | None:
        """The redirect URI of the client registered last, if any."""
        client = self._read().get("client")
        uris = client.get("redirect_uris") if isinstance(client, dict) else None
        return str(uris[0]) if isinstance(uris, list) and uris else None

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self.configured is not None:
            return self.configured
        try:
            stored = self._registered if self._registered is not None else self._read()["client"]
            client = OAuthClientInformationFull.model_validate(stored)
        except (KeyError, ValidationError):
            return None
        registered = {str(uri) for uri in client.redirect_uris or ()}
        return client if self.redirect_uri in registered else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self.configured is not None:
            return  # the config file holds it
        self._registered = client_info.model_dump(mode="json", exclude_none=True)

    def forget(self) -> bool:
        """Delete the sign-in (``asyncai mcp logout``); whether there was one."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True


class LoopbackRedirect:
    """Where the browser comes back: ``http://127.0.0.1:PORT/callback``. The port is reserved when
    this is made (the redirect URI must be known to register a client) and served only while a
    sign-in waits."""

    def __init__(self, port: int | None = None) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", port or 0))
        self.uri = f"http://127.0.0.1:{self._socket.getsockname()[1]}{_CALLBACK_PATH}"
        self._server: asyncio.Server | None = None
        self._result: asyncio.Future[AuthorizationCodeResult] | None = None

    async def listen(self) -> None:
        self._result = asyncio.get_running_loop().create_future()
        if self._server is None:
            self._server = await asyncio.start_server(self._answer, sock=self._socket)

    async def wait(self, timeout: float = SIGN_IN_TIMEOUT) -> AuthorizationCodeResult:
        assert self._result is not None, "listen() first"
        try:
            return await asyncio.wait_for(asyncio.shield(self._result), timeout)
        except TimeoutError:
            raise SignInTimeout(f"no sign-in came back within {timeout:.0f} s") from None

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = (await asyncio.wait_for(reader.readline(), 10.0)).decode("latin-1")
            parts = request_line.split()
            target = urlsplit(parts[1]) if len(parts) >= 2 else None
            query = parse_qs(target.query) if target is not None else {}
            if (
                target is None
                or target.path != _CALLBACK_PATH
                or ("code" not in query and "error" not in query)
            ):
                status, body = "404 Not Found", "Not the sign-in callback."
            elif "error" in query:
                status, body = (
                    "400 Bad Request",
                    f"Sign-in failed: {query['error'][0]}. You can close this tab.",
                )
                self._settle(error=query.get("error_description", query["error"])[0])
            else:
                status, body = "200 OK", "Signed in. You can close this tab and return to asyncai."
                self._settle(
                    AuthorizationCodeResult(
                        code=query["code"][0],
                        state=query.get("state", [None])[0],
                        iss=query.get("iss", [None])[0],
                    )
                )
            payload = body.encode()
            head = (
                f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
            )
            writer.write(head.encode() + payload)
            await writer.drain()
        except (OSError, TimeoutError, UnicodeError):
            pass  # a stray or broken request to the listener changes nothing
        finally:
            writer.close()

    def _settle(self, result: AuthorizationCodeResult | None = None, error: str | None = None) -> None:
        if self._result is None or self._result.done():
            return
        if result is not None:
            self._result.set_result(result)
        else:
            self._result.set_exception(RuntimeError(f"the authorization server refused: {error}"))

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        self._socket.close()


Announce = Callable[[str], None]


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class SignIn:
    """One HTTP server's sign-in: the ``httpx2.Auth`` to attach (``attached``), and whether the
    flow needed a person where there was none (``required``), for the start error."""

    def __init__(
        self,
        server: str,
        url: str,
        settings: OAuthSettings | None = None,
        mode: SignInMode = "never",
        home: Path | None = None,
        announce: Announce = _to_stderr,
    ) -> None:
        self.server = server
        self.url = url
        self.settings = settings or OAuthSettings()
        self.mode = mode
        self.announce = announce
        self.path = token_path(url, home)
        self.attached = False
        """``auth()`` gave a provider: it answers a 401 itself."""
        self.required = False
        """The flow needed a person and there was none (mode ``never``)."""
        self._redirect: LoopbackRedirect | None = None
        self._had_tokens = False
        self.completed = False
        """A sign-in in the browser finished in this run."""

    def _signed_in_before(self) -> bool:
        return TokenFile(self.url, self.path, "", None).signed_in

    def auth(self) -> httpx2.Auth | None:
        """What the HTTP client authenticates with, or ``None`` when there is nothing to do yet
        (never asked to sign in, no stored sign-in: a 401 is then reported by ``note_response``)."""
        settings = self.settings
        if settings.grant_type == "client_credentials":
            # It loads PyJWT (about 60 ms): only for the servers that use this grant.
            from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider

            assert settings.client_id and settings.client_secret
            self.attached = True
            storage = TokenFile(self.url, self.path, "", None)
            return ClientCredentialsOAuthProvider(
                server_url=self.url,
                storage=storage,
                client_id=settings.client_id,
                client_secret=settings.client_secret,
                scope=settings.scope,
            )
        if self.mode == "never" and not self._signed_in_before():
            return None
        self.attached = True
        self._had_tokens = self._signed_in_before()
        # The registered client names its redirect URI: reuse its port, so the client (needed to
        # refresh) stays valid; a port taken since means registering again.
        port = settings.callback_port or _port_of(
            TokenFile(self.url, self.path, "", None).registered_redirect()
        )
        if self.mode == "never":
            redirect_uri = f"http://127.0.0.1:{port or 0}{_CALLBACK_PATH}"
        else:
            try:
                self._redirect = LoopbackRedirect(port)
            except OSError:
                if settings.callback_port:
                    raise
                self._redirect = LoopbackRedirect()
            redirect_uri = self._redirect.uri
        configured = None
        if settings.client_id:
            configured = OAuthClientInformationFull(
                client_id=settings.client_id,
                client_secret=settings.client_secret,
                redirect_uris=[AnyUrl(redirect_uri)],
                token_endpoint_auth_method="client_secret_basic" if settings.client_secret else "none",
            )
        storage = TokenFile(self.url, self.path, redirect_uri, configured)
        provider = OAuthClientProvider(
            server_url=self.url,
            client_metadata=OAuthClientMetadata(
                client_name="asyncai",
                redirect_uris=[AnyUrl(redirect_uri)],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                scope=settings.scope,
            ),
            storage=storage,
            redirect_handler=self._open,
            callback_handler=self._come_back,
            client_metadata_url=settings.client_metadata_url,
        )
        # The SDK counts a loaded token as fresh; the file knows when it expires, so it is refreshed.
        provider.context.token_expiry_time = storage.expires_at
        return provider

    async def _open(self, authorization_url: str) -> None:
        if self.mode == "never" or self._redirect is None:
            self.required = True
            raise SignInRequired(self.server, expired=self._had_tokens)
        await self._redirect.listen()
        if self.mode == "print":
            self.announce(
                f"asyncai: to sign in to {self.server}, open this URL in a browser:\n{authorization_url}"
            )
            return
        self.announce(
            f"asyncai: signing in to {self.server} in your browser (or visit):\n{authorization_url}"
        )
        # webbrowser may run BROWSER and wait for it: off the loop, which must answer the redirect.
        await asyncio.to_thread(webbrowser.open, authorization_url)

    async def _come_back(self) -> AuthorizationCodeResult:
        assert self._redirect is not None
        result = await self._redirect.wait()
        self.completed = True
        log_event("oauth.signed_in", logging.INFO, server=self.server)
        return result

    @property
    def signed_in_before(self) -> bool:
        return self._had_tokens

    def problem(self) -> str:
        """Why the server could not be used, naming the command that fixes it."""
        return str(SignInRequired(self.server, expired=self._had_tokens))

    def forget(self) -> bool:
        return TokenFile(self.url, self.path, "", None).forget()

    async def aclose(self) -> None:
        if self._redirect is not None:
            with contextlib.suppress(OSError):
                await self._redirect.aclose()
