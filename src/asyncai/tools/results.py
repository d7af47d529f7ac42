"""Pure conversions between MCP wire types and the tool layer's types."""

from __future__ import annotations

from typing import Any

import mcp.types as mt

from ..log import dumps_compact
from .types import ToolCallOutput, ToolDefinition


def tool_definition(tool: mt.Tool) -> ToolDefinition:
    annotations = tool.annotations
    return ToolDefinition(
        name=tool.name,
        description=tool.description or "",
        input_schema=dict(tool.input_schema or {"type": "object"}),
        output_schema=dict(tool.output_schema) if tool.output_schema else None,
        read_only=bool(annotations and annotations.read_only_hint),
        destructive=bool(annotations and annotations.destructive_hint),
    )


def _content_text(block: Any) -> str:
    if isinstance(block, mt.TextContent):
        return block.text
    if isinstance(block, mt.ImageContent | mt.AudioContent):
        return f"[{block.type} content: {block.mime_type}, {len(block.data)} base64 chars]"
    if isinstance(block, mt.ResourceLink):
        return f"[resource link: {block.uri}]"
    if isinstance(block, mt.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, mt.TextResourceContents):
            return resource.text
        return f"[embedded resource: {resource.uri}, {resource.mime_type or 'binary'}]"
    return f"[{getattr(block, 'type', 'unknown')} content]"


def call_output(result: mt.CallToolResult) -> ToolCallOutput:
    """An MCP ``CallToolResult`` as a ``ToolCallOutput``; nothing is truncated.

    The text is the concatenated text content; a result with only structured content gets that
    structured content as compact JSON text.
    """
    texts = [_content_text(block) for block in result.content]
    structured = result.structured_content
    if texts:
        content = "\n".join(texts)
    elif structured is not None:
        content = dumps_compact(structured)
    else:
        content = ""
    return ToolCallOutput(content=content, is_error=bool(result.is_error), structured=structured)
