"""Pure conversions between MCP wire types and the tool layer's types."""

from __future__ import annotations

from typing import Any

import mcp.types as mt
from pydantic import BaseModel

from asyncai.log import dumps_compact
from asyncai.tools.types import ToolCallOutput, ToolDefinition


def tool_definition(tool: mt.Tool, server: str = "") -> ToolDefinition:
    """The MCP spec's defaults apply to missing hints: not read-only, and (when not read-only)
    destructive."""
    annotations = tool.annotations
    read_only = bool(annotations and annotations.read_only_hint)
    destructive_hint = annotations.destructive_hint if annotations else None
    return ToolDefinition(
        name=tool.name,
        description=tool.description or "",
        input_schema=dict(tool.input_schema or {"type": "object"}),
        output_schema=dict(tool.output_schema) if tool.output_schema else None,
        read_only=read_only,
        destructive=not read_only and destructive_hint is not False,
        task_required=bool(tool.execution and tool.execution.task_support == "required"),
        server=server,
    )


def resource_contents(contents: mt.TextResourceContents | mt.BlobResourceContents) -> dict[str, Any]:
    """One part of a resource: ``{"uri", "mime_type", "text"}`` or ``{"uri", "mime_type", "data"}``."""
    part: dict[str, Any] = {"uri": str(contents.uri), "mime_type": contents.mime_type}
    if isinstance(contents, mt.TextResourceContents):
        part["text"] = contents.text
    else:
        part["data"] = contents.blob
    return part


def _block_value(block: Any) -> str | dict[str, Any]:
    """A content block as the sandbox sees it: text as ``str``, everything else as a dict."""
    if isinstance(block, mt.TextContent):
        return block.text
    if isinstance(block, mt.ImageContent | mt.AudioContent):
        return {"type": block.type, "mime_type": block.mime_type, "data": block.data}
    if isinstance(block, mt.EmbeddedResource):
        return {"type": "resource", **resource_contents(block.resource)}
    if isinstance(block, mt.ResourceLink):
        link: dict[str, Any] = {"type": "resource_link", "uri": str(block.uri), "name": block.name}
        for key in ("title", "description", "mime_type", "size"):
            if (value := getattr(block, key, None)) is not None:
                link[key] = value
        return link
    return block.model_dump(mode="json", exclude_none=True) if isinstance(block, BaseModel) else {}


def _block_text(value: str | dict[str, Any]) -> str:
    """A block as text for a model that reads tool results directly; binary data is summarised."""
    if isinstance(value, str):
        return value
    if "text" in value:
        return str(value["text"])
    if "data" in value:
        return f"[{value.get('type')} content: {value.get('mime_type')}, {len(value['data'])} base64 chars]"
    return f"[{value.get('type')}: {value.get('uri', '')}]"


def call_output(result: mt.CallToolResult) -> ToolCallOutput:
    """An MCP ``CallToolResult`` as a ``ToolCallOutput``; nothing is truncated.

    ``content`` is the blocks' text joined by newlines; a result with only structured content gets
    that structured content as compact JSON text.
    """
    blocks = [_block_value(block) for block in result.content]
    structured = result.structured_content
    if blocks:
        content = "\n".join(_block_text(block) for block in blocks)
    elif structured is not None:
        content = dumps_compact(structured)
    else:
        content = ""
    return ToolCallOutput(
        content=content, is_error=bool(result.is_error), structured=structured, blocks=blocks
    )


def mcp_tool(tool: ToolDefinition) -> mt.Tool:
    """A tool definition as an MCP ``Tool`` again (serve-mcp's ``--expose-direct``)."""
    return mt.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.input_schema,
        output_schema=tool.output_schema,
        annotations=mt.ToolAnnotations(read_only_hint=tool.read_only, destructive_hint=tool.destructive),
    )


def _mcp_block(value: str | dict[str, Any]) -> mt.ContentBlock:
    if isinstance(value, str):
        return mt.TextContent(type="text", text=value)
    kind = value.get("type")
    if kind == "image":
        return mt.ImageContent(type="image", data=value["data"], mime_type=value["mime_type"])
    if kind == "audio":
        return mt.AudioContent(type="audio", data=value["data"], mime_type=value["mime_type"])
    if kind == "resource":
        contents: mt.TextResourceContents | mt.BlobResourceContents
        if "text" in value:
            contents = mt.TextResourceContents(
                uri=value["uri"], mime_type=value.get("mime_type"), text=value["text"]
            )
        else:
            contents = mt.BlobResourceContents(
                uri=value["uri"], mime_type=value.get("mime_type"), blob=value["data"]
            )
        return mt.EmbeddedResource(type="resource", resource=contents)
    if kind == "resource_link":
        fields = {k: value[k] for k in ("title", "description", "mime_type", "size") if k in value}
        return mt.ResourceLink(type="resource_link", uri=value["uri"], name=value.get("name", ""), **fields)
    return mt.TextContent(type="text", text=_block_text(value))


def mcp_result(output: ToolCallOutput) -> mt.CallToolResult:
    """A ``ToolCallOutput`` as an MCP ``CallToolResult``: the blocks the server sent when known."""
    blocks = output.blocks if output.blocks is not None else [output.content]
    return mt.CallToolResult(
        content=[_mcp_block(block) for block in blocks],
        structured_content=output.structured,
        is_error=output.is_error,
    )
