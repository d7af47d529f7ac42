"""Where MCP servers come from: ``--mcp-stdio`` command strings, ``--mcp-http`` URLs and
``--mcp-config`` files as Claude Code and Claude Desktop write them, all turned into ``ServerSpec``
values."""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from asyncai.log import log_event
from asyncai.wording import setting

_LAUNCHERS = {"npx", "uvx", "pipx", "python", "python3", "node", "bunx", "env", "sh", "bash"}
_NAMED = re.compile(r"([A-Za-z0-9_.-]+)=(.*)", re.DOTALL)
"""``NAME=COMMAND`` or ``NAME=URL`` on the command line (``--mcp-stdio time=mcp-server-time``)."""
_VARIABLE = re.compile(r"\$\{([^}]+)\}")
"""``${VAR}`` and ``${VAR:-default}``, the forms Claude Code expands (same pattern, no nesting)."""

HttpTransport = Literal["streamable-http", "sse"]
_HTTP_TYPES: dict[str, HttpTransport] = {
    "http": "streamable-http",
    "streamable-http": "streamable-http",
    "streamable_http": "streamable-http",
    "streamableHttp": "streamable-http",
    "sse": "sse",
}


class ConfigError(Exception):
    """A server configuration that cannot be used; the message is one line for the user."""


_GRANT_TYPES = ("authorization_code", "client_credentials")


@dataclass(frozen=True)
class OAuthSettings:
    """A server's ``"oauth"`` config entry: a client registered beforehand, or nothing (the server's
    authorization server then registers one, or reads ``client_metadata_url``)."""

    client_id: str | None = None
    client_secret: str | None = None
    client_metadata_url: str | None = None
    """An HTTPS URL naming this client (a client ID metadata document), used when the server supports it."""
    callback_port: int | None = None
    """A fixed loopback port, for a client registered with one redirect URI; else a random one."""
    scope: str | None = None
    grant_type: Literal["authorization_code", "client_credentials"] = "authorization_code"

    @classmethod
    def from_entry(cls, value: Any, where: str) -> OAuthSettings:
        """Parse ``{"clientId", "clientSecret", "clientMetadataUrl", "callbackPort", "scope",
        "grantType"}``; ``ValueError`` with a one-line message naming ``where``."""
        if not isinstance(value, dict):
            raise ValueError(f'{where}: "oauth" must be an object')
        known = {"clientId", "clientSecret", "clientMetadataUrl", "callbackPort", "scope", "grantType"}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(
                f'{where}: unknown "oauth" key {unknown[0]!r} (known: {", ".join(sorted(known))})'
            )
        strings = {key: value.get(key) for key in known - {"callbackPort"}}
        for key, text in strings.items():
            if text is not None and not isinstance(text, str):
                raise ValueError(f'{where}: "oauth.{key}" must be a string')
        port = value.get("callbackPort")
        if port is not None and (not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536):
            raise ValueError(f'{where}: "oauth.callbackPort" must be a port number')
        grant = strings["grantType"] or "authorization_code"
        if grant not in _GRANT_TYPES:
            raise ValueError(
                f'{where}: "oauth.grantType" must be "authorization_code" or "client_credentials"'
            )
        if grant == "client_credentials" and not (strings["clientId"] and strings["clientSecret"]):
            raise ValueError(
                f'{where}: "oauth.grantType": "client_credentials" needs "clientId" and "clientSecret"'
            )
        metadata_url = strings["clientMetadataUrl"]
        if metadata_url is not None and not metadata_url.startswith("https://"):
            raise ValueError(f'{where}: "oauth.clientMetadataUrl" must be an https:// URL')
        return cls(
            client_id=strings["clientId"],
            client_secret=strings["clientSecret"],
            client_metadata_url=metadata_url,
            callback_port=port,
            scope=strings["scope"],
            grant_type="client_credentials" if grant == "client_credentials" else "authorization_code",
        )


@dataclass(frozen=True)
class StdioServerSpec:
    name: str
    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)

    @property
    def display(self) -> str:
        return shlex.join([self.command, *self.args])


@dataclass(frozen=True)
class HttpServerSpec:
    name: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    transport: HttpTransport = "streamable-http"
    """``streamable-http`` (the default) or ``sse``, the legacy HTTP+SSE transport."""
    oauth: OAuthSettings | None = None
    """A client registered beforehand (the config's ``"oauth"``); without it, sign-in registers one."""

    @property
    def display(self) -> str:
        return self.url if self.transport == "streamable-http" else f"{self.url} (sse)"


ServerSpec = StdioServerSpec | HttpServerSpec


def _name_from_command(argv: list[str]) -> str:
    for token in argv:
        base = os.path.basename(token)
        if token.startswith("-") or base in _LAUNCHERS or _NAMED.fullmatch(token):
            continue  # options, launchers and the FOO=1 of ``env FOO=1 server``
        return base.removesuffix(".py").removesuffix(".js") or "server"
    return os.path.basename(argv[0]) or "server"


def stdio_spec(command_line: str, name: str | None = None) -> StdioServerSpec:
    """``"npx -y @modelcontextprotocol/server-everything stdio"`` -> a stdio spec.

    A first token ``NAME=COMMAND`` names the server (``time=mcp-server-time --local-timezone UTC``);
    without it the name comes from the command. ``env FOO=1 server`` is a plain command: its first
    token has no ``=``.
    """
    try:
        argv = shlex.split(command_line)
    except ValueError as exc:
        raise ConfigError(f"bad {setting('command_line')} {command_line!r}: {exc}") from None
    named = _NAMED.fullmatch(argv[0]) if argv and name is None else None
    if named and (named.group(2) or len(argv) > 1):  # "time=mcp-server-time" or "time= mcp-server-time"
        name = named.group(1)
        argv = [named.group(2), *argv[1:]] if named.group(2) else argv[1:]
    if not argv:
        raise ConfigError(f"empty {setting('command_line')}")
    return StdioServerSpec(name=name or _name_from_command(argv), command=argv[0], args=tuple(argv[1:]))


def http_spec(url: str, name: str | None = None) -> HttpServerSpec:
    """``--mcp-http URL`` or ``--mcp-http NAME=URL`` -> a Streamable HTTP spec."""
    named = _NAMED.fullmatch(url.strip()) if name is None else None
    if named and named.group(2).strip():
        name, url = named.group(1), named.group(2).strip()
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"bad {setting('url')} {url!r}: expected http:// or https://")
    return HttpServerSpec(name=name or url, url=url)


def expand_variables(value: str, environ: Mapping[str, str], missing: list[str]) -> str:
    """``${VAR}`` and ``${VAR:-default}`` in ``value``, as Claude Code expands them.

    A set variable wins (even when empty); an unset one takes its default; an unset one without a
    default stays as written and its name is appended to ``missing``. Values are not expanded again.
    """

    def substitute(match: re.Match[str]) -> str:
        name, separator, default = match.group(1).partition(":-")
        if name in environ:
            return environ[name]
        if separator:
            return default
        missing.append(name)
        return match.group(0)

    return _VARIABLE.sub(substitute, value)


def _string_map(value: Any, what: str, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f'{where}: "{what}" must be an object')
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in value.items()}


def _spec_from_entry(name: str, entry: Any, source: Path) -> ServerSpec:
    where = f"{source}: mcpServers.{name}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be an object")
    missing: list[str] = []

    def expand(text: str) -> str:
        return expand_variables(text, os.environ, missing)

    kind = entry.get("type") or entry.get("transport")
    if kind is not None and kind != "stdio" and kind not in _HTTP_TYPES:
        raise ConfigError(f'{where}: server type {kind!r} is not supported (use "stdio", "http" or "sse")')
    spec: ServerSpec
    if "url" in entry or kind in _HTTP_TYPES:
        url = entry.get("url")
        if not isinstance(url, str):
            raise ConfigError(f'{where} needs a "url" string')
        headers = _string_map(entry.get("headers"), "headers", where)
        oauth = None
        if entry.get("oauth") is not None:
            raw = (
                {k: expand(v) if isinstance(v, str) else v for k, v in entry["oauth"].items()}
                if isinstance(entry["oauth"], dict)
                else entry["oauth"]
            )
            try:
                oauth = OAuthSettings.from_entry(raw, where)
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        spec = HttpServerSpec(
            name=name,
            url=expand(url),
            headers={key: expand(value) for key, value in headers.items()},
            transport=_HTTP_TYPES.get(str(kind), "streamable-http"),
            oauth=oauth,
        )
    else:
        command = entry.get("command")
        if not isinstance(command, str) or not command:
            raise ConfigError(f'{where} needs a "command" string or a "url"')
        args = entry.get("args") or []
        if not isinstance(args, list):
            raise ConfigError(f'{where}: "args" must be a list')
        env = _string_map(entry.get("env"), "env", where)
        spec = StdioServerSpec(
            name=name,
            command=expand(command),
            args=tuple(expand(str(a)) for a in args),
            env={key: expand(value) for key, value in env.items()},
        )
    for variable in dict.fromkeys(missing):
        log_event(
            "mcp.config_variable_unset",
            logging.WARNING,
            server=name,
            variable=variable,
            file=str(source),
            note="left as written: set it, or give a default with ${VAR:-default}",
        )
    return spec


def specs_from_config(path: str | Path) -> list[ServerSpec]:
    """Read ``{"mcpServers": {"name": {"command", "args", "env"} | {"type": "http"|"sse", "url",
    "headers"}}}`` as Claude Code and Claude Desktop write it.

    Entries with ``"disabled": true`` are skipped; ``${VAR}`` and ``${VAR:-default}`` are expanded in
    ``command``, ``args``, ``env``, ``url`` and ``headers``; a UTF-8 byte order mark is accepted.
    """
    source = Path(path)
    try:
        data = json.loads(source.read_text(encoding="utf-8-sig"))
    except OSError as exc:
        raise ConfigError(f"cannot read MCP config {source}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"cannot read MCP config {source}: not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None
    except ValueError as exc:
        raise ConfigError(f"MCP config {source} is not valid JSON: {exc}") from None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise ConfigError(f'MCP config {source} has no "mcpServers" object')
    return [
        _spec_from_entry(str(name), entry, source)
        for name, entry in servers.items()
        if not (isinstance(entry, dict) and entry.get("disabled") is True)
    ]


def unique_names(specs: list[ServerSpec]) -> list[ServerSpec]:
    """Give every spec a distinct name (``name``, ``name#2``, ...) in order."""
    seen: dict[str, int] = {}
    result: list[ServerSpec] = []
    for spec in specs:
        count = seen.get(spec.name, 0) + 1
        seen[spec.name] = count
        if count > 1:
            spec = type(spec)(**{**spec.__dict__, "name": f"{spec.name}#{count}"})
        result.append(spec)
    return result
