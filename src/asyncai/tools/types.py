"""The tool layer's data types and the ``ToolSource`` interface every executor implements."""

from __future__ import annotations

import abc
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ToolDefinition:
    """A tool as a model or the code-mode catalog sees it (MCP ``tools/list`` entry)."""

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    read_only: bool = False
    destructive: bool = False
    task_required: bool = False
    """The server only runs this tool as an MCP task (``execution.taskSupport: "required"``)."""
    server: str = ""
    """The MCP server that offers it (empty outside an MCP executor)."""
    observed_output_schema: dict[str, Any] | None = None
    """For a tool without an output schema: the shape its results had (``catalog/observed.py``)."""
    callables: tuple[str, ...] = ()
    """For a tool that runs code (``run_code``): the functions that code can call, by their Python
    names, so a backend can run a model's call to one of them as a snippet."""
    importable: tuple[str, ...] = ()
    """For a tool that runs code: the modules that code can import, so a backend can drop a
    snippet's unused import of any other."""
    positional: int = 0
    """How many leading parameters a snippet may pass by position: asyncai's own functions take
    their first so (``skill("report")``); a tool's arguments are named, so it takes none."""

    @property
    def mutating(self) -> bool:
        """A call may change the world: annotated destructive, or not read-only. A tool
        without annotations is not read-only by the MCP spec's defaults, so it is mutating."""
        return self.destructive or not self.read_only


@dataclass
class ToolCallOutput:
    """What one tool call produced.

    ``content`` is the text a model that sees tool results directly gets; ``structured`` is the
    MCP ``structuredContent`` when there was one; ``blocks`` are the MCP content blocks, a text
    block as its ``str`` and any other block as a dict (``{"type": "image", "mime_type", "data"}``,
    ``{"type": "resource", "uri", "mime_type", "text" | "data"}``, ``{"type": "resource_link",
    "uri", ...}``), or ``None`` when the executor has only ``content``; ``audit`` is metadata for
    session records that the model never sees (code mode puts its nested calls there).
    """

    content: str
    is_error: bool = False
    structured: dict[str, Any] | None = None
    audit: dict[str, Any] | None = None
    blocks: list[str | dict[str, Any]] | None = None

    @classmethod
    def error(cls, message: str) -> ToolCallOutput:
        return cls(content=message, is_error=True)


class ServerStartError(Exception):
    """An MCP server could not be started or initialised; the message is one line."""


class ResourceError(Exception):
    """A resource that cannot be listed or read; the message is one line for the snippet."""


@dataclass(frozen=True)
class ToolRoute:
    """Which server answers a tool name (used by ``asyncai tools``)."""

    tool: ToolDefinition
    server: str


@dataclass
class DuplicateTool:
    name: str
    kept_server: str
    dropped_server: str


ToolsChangedListener = Callable[[], Awaitable[None]]


class ToolSource(abc.ABC):
    """A source of tools: it lists them, calls them, offers resources, says when its tools
    changed, and closes. MCP servers, Python functions and code mode itself are tool sources."""

    @abc.abstractmethod
    def tools(self) -> list[ToolDefinition]: ...

    @abc.abstractmethod
    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolCallOutput: ...

    def resource_servers(self) -> list[str]:
        """Names of the servers that offer MCP resources (the ``resources`` capability)."""
        return []

    async def list_resources(self, server: str | None = None) -> list[dict[str, Any]]:
        """Every resource of every server (or of ``server``), each a dict with ``uri``, ``name``,
        ``server`` and, when the server gave them, ``title``, ``description``, ``mime_type``, ``size``.
        ``ResourceError`` for an unknown server or a failed listing."""
        if server is not None:
            raise ResourceError(f"unknown server {server!r}: no MCP server offers resources")
        return []

    async def read_resource(self, uri: str) -> list[dict[str, Any]]:
        """The contents of one resource, routed to the server that listed it: one dict per part,
        ``{"uri", "mime_type", "text"}`` or ``{"uri", "mime_type", "data"}`` (base64).
        ``ResourceError`` when no server has it or the read fails."""
        raise ResourceError(f"cannot read {uri}: no MCP server offers resources")

    def on_tools_changed(self, listener: ToolsChangedListener) -> None:
        """Call ``listener`` after ``tools()`` changed (a server sent ``tools/list_changed``).
        Executors whose tools never change ignore it."""

    async def aclose(self) -> None:
        """Release what the executor holds (processes, sessions)."""
