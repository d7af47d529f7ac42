"""``RoutedTools``: several tool sources as one.

Each tool name goes to exactly one source, the first to declare it; a later source declaring the
same name loses it, with a warning (a snippet must never wonder which ``search`` it called).
Resources are listed from every source that has them, and a URI is read from the first source
that listed it. MCP servers are routed this way (``McpServers``), and so are MCP servers mixed
with Python functions in one ``CodeMode``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from asyncai.arguments import refusal
from asyncai.log import log_event
from asyncai.tools.types import (
    DuplicateTool,
    ResourceError,
    ToolCallOutput,
    ToolDefinition,
    ToolRoute,
    ToolsChangedListener,
    ToolSource,
)

SOURCE = "a tool source (McpServers, FunctionTools, any asyncai.ToolSource)"


def tool_sources(value: object, owner: str, parameter: str) -> list[ToolSource]:
    """``value`` as a list of tool sources; ``TypeError`` naming ``parameter`` when it is not one."""
    if isinstance(value, ToolSource):
        return [value]
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise TypeError(refusal(owner, parameter, f"{SOURCE} or a list of them", value, _hint(value)))
    sources = list(value)
    for index, source in enumerate(sources):
        if not isinstance(source, ToolSource):
            raise TypeError(refusal(owner, f"{parameter}[{index}]", SOURCE, source, _hint(source)))
    return sources


def _hint(value: object) -> str | None:
    """What was probably meant, for the things most often passed where a tool source goes."""
    from asyncai.tools.mcp.specs import HttpServerSpec, StdioServerSpec  # no SDK import

    if isinstance(value, StdioServerSpec | HttpServerSpec | str):
        return "start MCP servers with asyncai.McpServers([spec, ...]) and pass that"
    if callable(value):
        return "Python functions go in asyncai.FunctionTools([f, ...])"
    return None


class RoutedTools(ToolSource):
    """Routes each tool name to the first of ``sources`` that declares it. Closing it closes nothing:
    the sources belong to whoever opened them."""

    def __init__(self, sources: Sequence[ToolSource] = ()) -> None:
        self.sources: list[ToolSource] = []
        self.routes: dict[str, ToolRoute] = {}
        self.duplicates: list[DuplicateTool] = []
        self._source_of: dict[str, ToolSource] = {}
        self._resource_owner: dict[str, ToolSource] = {}
        self._listeners: list[ToolsChangedListener] = []
        self.route(tool_sources(sources, type(self).__name__, "sources"))

    def route(self, sources: Sequence[ToolSource]) -> None:
        """Route over ``sources`` from now on (in this order), and hear of their tool changes."""
        self.sources = list(sources)
        for source in self.sources:
            source.on_tools_changed(self._tools_changed)
        self._build_routes()

    def _build_routes(self) -> None:
        self.routes, self.duplicates, self._source_of = {}, [], {}
        for source in self.sources:
            for tool in source.tools():
                kept = self.routes.get(tool.name)
                if kept is None:
                    self.routes[tool.name] = ToolRoute(tool=tool, server=tool.server)
                    self._source_of[tool.name] = source
                    continue
                self.duplicates.append(DuplicateTool(tool.name, kept.server, tool.server))
                log_event(
                    "mcp.duplicate_tool",
                    logging.WARNING,
                    tool=tool.name,
                    kept_server=kept.server,
                    dropped_server=tool.server,
                )

    async def _tools_changed(self) -> None:
        self._build_routes()
        for listener in self._listeners:
            await listener()

    def tools(self) -> list[ToolDefinition]:
        return [route.tool for route in self.routes.values()]

    def on_tools_changed(self, listener: ToolsChangedListener) -> None:
        self._listeners.append(listener)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolCallOutput:
        source = self._source_of.get(name)
        if source is None:
            return ToolCallOutput.error(f"tool error: unknown tool {name!r}")
        return await source.call_tool(name, arguments)

    # Resources ---------------------------------------------------------------------------------

    def resource_servers(self) -> list[str]:
        return [server for source in self.sources for server in source.resource_servers()]

    def server_names(self) -> set[str]:
        """Every server known here, with resources or not (for telling an unknown server apart)."""
        declared = {route.server for route in self.routes.values()}
        return declared | {d.dropped_server for d in self.duplicates} | set(self.resource_servers())

    def _servers_phrase(self) -> str:
        names = self.resource_servers()
        return f"servers with resources: {', '.join(names)}" if names else "no MCP server offers resources"

    def _with_resources(self) -> list[ToolSource]:
        return [source for source in self.sources if source.resource_servers()]

    async def list_resources(self, server: str | None = None) -> list[dict[str, Any]]:
        if server is not None:
            owner = next((s for s in self.sources if server in s.resource_servers()), None)
            if owner is None:
                reason = "no resources on server" if server in self.server_names() else "unknown server"
                raise ResourceError(f"{reason} {server!r} ({self._servers_phrase()})")
            return await self._list_from(owner, server)
        listings = await asyncio.gather(
            *(self._list_from(source) for source in self._with_resources()), return_exceptions=True
        )
        entries: list[dict[str, Any]] = []
        for listing in listings:
            if isinstance(listing, ResourceError):
                raise ResourceError(f"{listing} (list one server with list_resources(server=...))")
            if isinstance(listing, BaseException):
                raise listing
            entries.extend(listing)
        return entries

    async def _list_from(self, source: ToolSource, server: str | None = None) -> list[dict[str, Any]]:
        entries = await source.list_resources(server)
        self.learn_owners(source, entries)
        return entries

    def learn_owners(self, source: ToolSource, entries: list[dict[str, Any]]) -> None:
        """A URI belongs to the first source (in routing order) that listed it."""
        order = {id(s): i for i, s in enumerate(self.sources)}
        for entry in entries:
            owner = self._resource_owner.get(entry["uri"])
            if owner is None or order.get(id(owner), len(order)) > order[id(source)]:
                self._resource_owner[entry["uri"]] = source

    async def _owner(self, uri: str) -> ToolSource:
        sources = self._with_resources()
        if uri not in self._resource_owner and len(sources) > 1:
            # Listings change: ask every source again; a failing listing just teaches nothing.
            await asyncio.gather(*(self._list_from(s) for s in sources), return_exceptions=True)
        owner = self._resource_owner.get(uri)
        if owner is not None:
            return owner
        if len(sources) == 1:
            return sources[0]
        if not sources:
            raise ResourceError(f"cannot read {uri}: no MCP server offers resources")
        raise ResourceError(f"cannot read {uri}: no server lists it ({self._servers_phrase()})")

    async def read_resource(self, uri: str) -> list[dict[str, Any]]:
        return await (await self._owner(uri)).read_resource(uri)
