"""Where MCP servers come from: ``--mcp-stdio`` command strings, ``--mcp-http`` URLs and
``--mcp-config`` files as Claude Code and Claude Desktop write them, all turned into ``ServerSpec``
values."""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from asyncai.arguments import check_choice, check_instance, refusal, string_map, strings
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


class ConfigError(ValueError):
    """A server configuration that cannot be used; the message is one line for the user."""


_GRANT_TYPES = ("authorization_code", "client_credentials")
_OAUTH_KEYS = {
    "client_id": "clientId",
    "client_secret": "clientSecret",
    "client_metadata_url": "clientMetadataUrl",
    "callback_port": "callbackPort",
    "scope": "scope",
    "grant_type": "grantType",
}
"""``OAuthSettings`` fields and the config-file keys they are read from."""


def _config_key(field: str) -> str:
    return f'"{_OAUTH_KEYS[field]}"'


def _check_oauth(values: Mapping[str, Any], name: Callable[[str], str], short: Callable[[str], str]) -> None:
    """The rules of an OAuth entry, whether written in a config file or passed to ``OAuthSettings``:
    ``name`` says a field in full (leading a message), ``short`` inside one."""
    for key in _OAUTH_KEYS.keys() - {"callback_port"}:
        if values.get(key) is not None and not isinstance(values[key], str):
            raise TypeError(f"{name(key)} must be a string")
    port = values.get("callback_port")
    if port is not None and (not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536):
        raise ValueError(f"{name('callback_port')} must be a port number")
    grant = values.get("grant_type")
    if grant not in _GRANT_TYPES:
        raise ValueError(f'{name("grant_type")} must be "authorization_code" or "client_credentials"')
    if grant == "client_credentials" and not (values.get("client_id") and values.get("client_secret")):
        needs = f"{short('client_id')} and {short('client_secret')}"
        raise ValueError(f'{name("grant_type")}: "client_credentials" needs {needs}')
    metadata_url = values.get("client_metadata_url")
    if metadata_url is not None and not metadata_url.startswith("https://"):
        raise ValueError(f"{name('client_metadata_url')} must be an https:// URL")


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

    def __post_init__(self) -> None:
        _check_oauth(self.__dict__, lambda key: f"OAuthSettings: {key}", lambda key: key)

    @classmethod
    def from_entry(cls, value: Any, where: str) -> OAuthSettings:
        """Parse ``{"clientId", "clientSecret", "clientMetadataUrl", "callbackPort", "scope",
        "grantType"}``; ``ValueError`` with a one-line message naming ``where``."""
        if not isinstance(value, dict):
            raise ValueError(f'{where}: "oauth" must be an object')
        known = set(_OAUTH_KEYS.values())
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(
                f'{where}: unknown "oauth" key {unknown[0]!r} (known: {", ".join(sorted(known))})'
            )
        values: dict[str, Any] = {field: value.get(key) for field, key in _OAUTH_KEYS.items()}
        values["grant_type"] = values["grant_type"] or "authorization_code"
        try:
            _check_oauth(values, lambda f: f'{where}: "oauth.{_OAUTH_KEYS[f]}"', _config_key)
        except TypeError as exc:  # a config file has values, not types: every problem is a ValueError
            raise ValueError(str(exc)) from None
        return cls(**values)


@dataclass(frozen=True)
class StdioServerSpec:
    name: str
    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        owner = "StdioServerSpec"
        check_instance(self.name, str, owner, "name", "a string")
        program = "the program to run (a non-empty string)"
        check_instance(self.command, str, owner, "command", program)
        if not self.command:
            raise ValueError(refusal(owner, "command", program, self.command))
        # Frozen: the checked (and normalised) values go in the way the dataclass put them there.
        object.__setattr__(self, "args", strings(self.args, owner, "args"))
        object.__setattr__(self, "env", string_map(self.env, owner, "env"))

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

    def __post_init__(self) -> None:
        owner = "HttpServerSpec"
        check_instance(self.name, str, owner, "name", "a string")
        check_instance(self.url, str, owner, "url", "an http:// or https:// URL")
        object.__setattr__(self, "headers", string_map(self.headers, owner, "headers"))
        check_choice(self.transport, ("streamable-http", "sse"), owner, "transport")
        check_instance(self.oauth, OAuthSettings | None, owner, "oauth", "an asyncai.OAuthSettings or None")

    @property
    def display(self) -> str:
        return self.url if self.transport == "streamable-http" else f"{self.url} (sse)"


ServerSpec = StdioServerSpec | HttpServerSpec


def server_specs(value: object, owner: str, parameter: str) -> list[ServerSpec]:
    """``value`` as a list of server specs; ``TypeError`` naming ``parameter`` when it is not one."""
    accepts = "a list of server specs (asyncai.stdio_spec(...), asyncai.http_spec(...))"
    if isinstance(value, StdioServerSpec | HttpServerSpec):
        raise TypeError(refusal(owner, parameter, accepts, value, "put the one spec in a list"))
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise TypeError(refusal(owner, parameter, accepts, value))
    specs = list(value)
    for index, spec in enumerate(specs):
        if not isinstance(spec, StdioServerSpec | HttpServerSpec):
            hint = "make one with asyncai.stdio_spec or asyncai.http_spec" if isinstance(spec, str) else None
            raise TypeError(refusal(owner, f"{parameter}[{index}]", "a server spec", spec, hint))
    return specs


def _name_from_command(argv: list[str]) -> str:
    for token in argv:
        base = os.path.basename(token)
        if token.startswith("-") or base in _LAUNCHERS or _NAMED.fullmatch(token):
            continue  # options, launchers and the FOO=1 of ``env FOO=1 server``
        return base.removesuffix(".py").removesuffix(".js") or "server"
    return os.path.basename(argv[0]) or "server"


BUNDLED_SERVERS = frozenset(
    {"asyncai-mcp-simple", "socialweb-computer-kcp-readonly", "socialweb-computer-kcp-readwrite"}
)
"""The MCP servers asyncai installs beside its own command (``[project.scripts]``)."""


def launch_command(command: str) -> str:
    """The program to start for ``command``: a bundled server is the script beside the running
    Python (its environment's ``bin``), found ahead of ``PATH`` and without it (a service unit, a
    client's MCP config); any other command as given."""
    if command in BUNDLED_SERVERS:
        beside = Path(sys.executable).with_name(command)
        if beside.is_file():
            return str(beside)
    return command


def stdio_spec(command_line: str, name: str | None = None) -> StdioServerSpec:
    """``"npx -y @modelcontextprotocol/server-everything stdio"`` -> a stdio spec.

    A first token ``NAME=COMMAND`` names the server (``time=mcp-server-time --local-timezone UTC``);
    without it the name comes from the command. ``env FOO=1 server`` is a plain command: its first
    token has no ``=``.
    """
    check_instance(command_line, str, "stdio_spec", "command_line", "a command line (a str)")
    check_instance(name, str | None, "stdio_spec", "name", "a string or None")
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
    check_instance(url, str, "http_spec", "url", "an http:// or https:// URL (a str)")
    check_instance(name, str | None, "http_spec", "name", "a string or None")
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
    check_instance(path, str | os.PathLike, "specs_from_config", "path", "a file path (str or Path)")
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
