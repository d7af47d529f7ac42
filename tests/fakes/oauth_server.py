"""A real MCP server on loopback Streamable HTTP behind OAuth: the ``mcp`` SDK's own authorization
server routes (metadata, ``/authorize``, ``/token``, ``/register``, protected-resource metadata)
over an in-memory provider that approves every authorization at once.

``GET /authorize`` redirects straight back to the client's ``redirect_uri`` with a code and the
state, so a browser stand-in that follows redirects completes a sign-in. The SDK's handlers check
PKCE, redirect URIs, client secrets and the RFC 8707 resource; this provider issues access and
refresh tokens (refresh rotates both), and records what it saw so tests can assert on it:
registrations, authorizations, token grants, and the bearer tokens presented to ``/mcp``.

Control hooks instead of waiting: ``expire_access_tokens()`` makes every access token issued so far
expired, ``preregister()`` adds a client as an administrator would. In-process (``oauth_server()``,
served by uvicorn in a thread), or ``python -m tests.fakes.oauth_server --port 0`` prints its URL.
"""

from __future__ import annotations

import argparse
import contextlib
import secrets
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp.types import ToolAnnotations
from pydantic import AnyHttpUrl, AnyUrl
from starlette.types import ASGIApp, Receive, Scope, Send

from tests.fakes.loopback import listening_socket, serving, url_of

SERVER_NAME = "oauth-fake"


@dataclass(frozen=True)
class Authorization:
    """One ``/authorize`` the provider approved."""

    client_id: str
    redirect_uri: str
    state: str | None
    resource: str | None


@dataclass(frozen=True)
class TokenGrant:
    """One token request that reached the provider (the SDK checked the client, PKCE, the code)."""

    grant_type: str
    client_id: str


class ApprovingProvider(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    """Clients, codes and tokens in dicts; every authorization approved at once."""

    def __init__(self, access_lifetime: int = 3600) -> None:
        self.access_lifetime = access_lifetime
        """Seconds an access token lives: its ``expires_in``, and when the server stops taking it."""
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.expired: set[str] = set()
        self.registrations: list[OAuthClientInformationFull] = []
        self.authorizations: list[Authorization] = []
        self.grants: list[TokenGrant] = []
        self.issued_access: list[str] = []
        self.issued_refresh: list[str] = []

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info
        self.registrations.append(client_info)

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        assert client.client_id is not None
        self.authorizations.append(
            Authorization(client.client_id, str(params.redirect_uri), params.state, params.resource)
        )
        code = secrets.token_urlsafe(32)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = f"at-{secrets.token_urlsafe(24)}", f"rt-{secrets.token_urlsafe(24)}"
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + self.access_lifetime,
            resource=resource,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        self.issued_access.append(access)
        self.issued_refresh.append(refresh)
        return OAuthToken(
            access_token=access,
            expires_in=self.access_lifetime,
            scope=" ".join(scopes) or None,
            refresh_token=refresh,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[authorization_code.code]  # single use
        self.grants.append(TokenGrant("authorization_code", authorization_code.client_id))
        return self._issue(
            authorization_code.client_id, authorization_code.scopes, authorization_code.resource
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        del self.refresh[refresh_token.token]  # rotated: the old one is spent
        self.grants.append(TokenGrant("refresh_token", refresh_token.client_id))
        return self._issue(refresh_token.client_id, scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or token in self.expired:
            return None
        if found.expires_at is not None and found.expires_at <= time.time():
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


@dataclass
class OAuthFake:
    """What a test holds: the URLs, the provider's records, and the control hooks."""

    base_url: str
    provider: ApprovingProvider
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    """(method, path, lower-cased headers) of every HTTP request, in arrival order."""

    @property
    def mcp_url(self) -> str:
        return f"{self.base_url}/mcp"

    @property
    def registrations(self) -> list[OAuthClientInformationFull]:
        return self.provider.registrations

    @property
    def authorizations(self) -> list[Authorization]:
        return self.provider.authorizations

    @property
    def grants(self) -> list[TokenGrant]:
        return self.provider.grants

    @property
    def grant_types(self) -> list[str]:
        return [grant.grant_type for grant in self.provider.grants]

    @property
    def issued_access_tokens(self) -> list[str]:
        return list(self.provider.issued_access)

    @property
    def issued_refresh_tokens(self) -> list[str]:
        return list(self.provider.issued_refresh)

    @property
    def client_secrets(self) -> list[str]:
        """Every client secret the server knows: registered ones and pre-registered ones."""
        return [c.client_secret for c in self.provider.clients.values() if c.client_secret]

    def bearer_tokens(self) -> list[str]:
        """The bearer tokens presented to ``/mcp``, in order (a token once per request)."""
        found = []
        for _, path, headers in self.requests:
            value = headers.get("authorization", "")
            if path.startswith("/mcp") and value.lower().startswith("bearer "):
                found.append(value[len("bearer ") :])
        return found

    def expire_access_tokens(self) -> None:
        """Every access token issued so far is refused from now on (as if its lifetime had passed)."""
        self.provider.expired.update(self.provider.issued_access)

    def preregister(
        self,
        client_id: str,
        client_secret: str,
        redirect_uris: list[str],
        auth_method: str = "client_secret_basic",
    ) -> None:
        """A client an administrator registered beforehand (no dynamic registration)."""
        self.provider.clients[client_id] = OAuthClientInformationFull(
            client_id=client_id,
            client_secret=client_secret,
            redirect_uris=[AnyUrl(uri) for uri in redirect_uris],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method=auth_method,
        )


def _build(base_url: str, provider: ApprovingProvider) -> MCPServer:
    server = MCPServer(
        SERVER_NAME,
        version="0.0.1",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(base_url),
            resource_server_url=AnyHttpUrl(f"{base_url}/mcp"),
            validate_token_resource=True,
            client_registration_options=ClientRegistrationOptions(enabled=True),
        ),
    )

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def whoami() -> dict[str, Any]:
        """Who the server thinks is calling: the OAuth client the bearer token was issued to."""
        token = get_access_token()
        return {"server": SERVER_NAME, "client_id": token.client_id if token is not None else None}

    return server


def _recording(app: ASGIApp, fake: OAuthFake) -> ASGIApp:
    async def record(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            fake.requests.append((scope["method"], scope["path"], headers))
        await app(scope, receive, send)

    return record


def _serve(sock: socket.socket, access_lifetime: int) -> tuple[OAuthFake, ASGIApp]:
    base_url = url_of(sock)
    provider = ApprovingProvider(access_lifetime)
    fake = OAuthFake(base_url, provider)
    return fake, _recording(_build(base_url, provider).streamable_http_app(), fake)


@contextlib.contextmanager
def oauth_server(access_lifetime: int = 3600) -> Iterator[OAuthFake]:
    """Serve in a thread until the block ends; the socket listens before the block starts, so a
    client may connect at once (uvicorn accepts once it is up)."""
    sock = listening_socket()
    fake, app = _serve(sock, access_lifetime)
    with serving(app, sock):
        yield fake


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--access-lifetime", type=int, default=3600, metavar="SECONDS")
    args = parser.parse_args()
    sock = listening_socket(args.port)
    fake, app = _serve(sock, args.access_lifetime)
    print(fake.mcp_url, flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="on")).run([sock])


if __name__ == "__main__":
    main()
