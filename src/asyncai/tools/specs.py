"""Where MCP servers come from: ``--mcp-stdio`` command strings, ``--mcp-http`` URLs and
Claude-style ``--mcp-config`` files, all turned into ``ServerSpec`` values."""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_LAUNCHERS = {"npx", "uvx", "pipx", "python", "python3", "node", "bunx", "env", "sh", "bash"}


class ConfigError(Exception):
    """A server configuration that cannot be used; the message is one line for the user."""


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

    @property
    def display(self) -> str:
        return self.url


ServerSpec = StdioServerSpec | HttpServerSpec


def _name_from_command(argv: list[str]) -> str:
    for token in argv:
        base = os.path.basename(token)
        if token.startswith("-") or base in _LAUNCHERS:
            continue
        return base.removesuffix(".py").removesuffix(".js") or "server"
    return os.path.basename(argv[0]) or "server"


def stdio_spec(command_line: str, name: str | None = None) -> StdioServerSpec:
    """``"npx -y @modelcontextprotocol/server-everything stdio"`` -> a stdio spec."""
    try:
        argv = shlex.split(command_line)
    except ValueError as exc:
        raise ConfigError(f"bad --mcp-stdio command {command_line!r}: {exc}") from None
    if not argv:
        raise ConfigError("empty --mcp-stdio command")
    return StdioServerSpec(name=name or _name_from_command(argv), command=argv[0], args=tuple(argv[1:]))


def http_spec(url: str, name: str | None = None) -> HttpServerSpec:
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"bad --mcp-http URL {url!r}: expected http:// or https://")
    return HttpServerSpec(name=name or url, url=url)


def _spec_from_entry(name: str, entry: Any, source: Path) -> ServerSpec:
    if not isinstance(entry, dict):
        raise ConfigError(f"{source}: mcpServers.{name} must be an object")
    kind = entry.get("type") or entry.get("transport")
    if "url" in entry or kind in {"http", "streamable-http", "streamableHttp"}:
        url = entry.get("url")
        if not isinstance(url, str):
            raise ConfigError(f'{source}: mcpServers.{name} needs a "url" string')
        headers = entry.get("headers") or {}
        if not isinstance(headers, dict):
            raise ConfigError(f'{source}: mcpServers.{name}: "headers" must be an object')
        return HttpServerSpec(name=name, url=url, headers={str(k): str(v) for k, v in headers.items()})
    command = entry.get("command")
    if not isinstance(command, str) or not command:
        raise ConfigError(f'{source}: mcpServers.{name} needs a "command" string or a "url"')
    args = entry.get("args") or []
    env = entry.get("env") or {}
    if not isinstance(args, list) or not isinstance(env, dict):
        raise ConfigError(f'{source}: mcpServers.{name}: "args" must be a list and "env" an object')
    return StdioServerSpec(
        name=name,
        command=command,
        args=tuple(str(a) for a in args),
        env={str(k): str(v) for k, v in env.items()},
    )


def specs_from_config(path: str | Path) -> list[ServerSpec]:
    """Read ``{"mcpServers": {"name": {"command", "args", "env"} | {"type": "http", "url"}}}``."""
    source = Path(path)
    try:
        data = json.loads(source.read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read MCP config {source}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ConfigError(f"MCP config {source} is not valid JSON: {exc}") from None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise ConfigError(f'MCP config {source} has no "mcpServers" object')
    return [_spec_from_entry(str(name), entry, source) for name, entry in servers.items()]


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
