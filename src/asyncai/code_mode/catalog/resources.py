"""``list_resources`` and ``read_resource``: MCP resources from inside a snippet.

They are catalog functions like the tools (awaited, stubs in the description, names no tool can
take; the first argument by position or keyword), but the executor's resource methods answer
them: they are not nested tool calls, so they count against no call budget and are not in the
audit.
"""

from __future__ import annotations

from typing import Any, Final

from asyncai.code_mode.engine.crossing import Payload
from asyncai.log import dumps_compact
from asyncai.tools.types import ResourceError, ToolDefinition, ToolSource

_RESOURCE_ITEM: Final = {
    "type": "object",
    "properties": {
        "uri": {"type": "string"},
        "name": {"type": "string"},
        "server": {"type": "string"},
        "title": {"type": "string"},
        "description": {"type": "string"},
        "mime_type": {"type": "string"},
        "size": {"type": "integer"},
    },
}

LIST_RESOURCES: Final = ToolDefinition(
    name="list_resources",
    description=(
        "The resources the MCP servers offer (files, documents, schemas), or those of one server. "
        "title, description, mime_type and size are there when the server gave them."
    ),
    input_schema={
        "type": "object",
        "properties": {"server": {"type": "string", "description": "only this server's resources"}},
    },
    output_schema={"type": "array", "items": _RESOURCE_ITEM},
    read_only=True,
    positional=1,
)

READ_RESOURCE: Final = ToolDefinition(
    name="read_resource",
    description=(
        "The contents of one resource, by the uri from list_resources or from a resource_link in a "
        'tool result: "text" for a text resource, "data" (base64) for a binary one. A resource with '
        "several parts gives a list of such dicts."
    ),
    input_schema={"type": "object", "properties": {"uri": {"type": "string"}}, "required": ["uri"]},
    output_schema={
        "type": "object",
        "properties": {
            "uri": {"type": "string"},
            "mime_type": {"type": ["string", "null"]},
            "text": {"type": "string"},
            "data": {"type": "string"},
        },
    },
    read_only=True,
    positional=1,
)

RESOURCE_FUNCTIONS: Final = {tool.name: tool for tool in (LIST_RESOURCES, READ_RESOURCE)}


async def call_resource_function(
    inner: ToolSource, definition: ToolDefinition, arguments: dict[str, Any]
) -> Payload:
    """Answer ``list_resources`` or ``read_resource``; a failure raises ``RuntimeError`` in the snippet."""
    try:
        if definition is LIST_RESOURCES:
            value: Any = await inner.list_resources(arguments.get("server"))
        else:
            parts = await inner.read_resource(str(arguments["uri"]))
            value = parts[0] if len(parts) == 1 else parts
    except ResourceError as exc:
        raise RuntimeError(str(exc)) from None
    return Payload("json", dumps_compact(value))
