"""MCP wire types to the tool layer's types: annotations by the spec's defaults, content blocks."""

from __future__ import annotations

import mcp.types as mt

from asyncai.tools.mcp.results import call_output, tool_definition

SCHEMA = {"type": "object"}


def test_a_tool_without_annotations_is_mutating_and_destructive_by_the_spec_defaults() -> None:
    bare = tool_definition(mt.Tool(name="t", input_schema=SCHEMA))
    assert bare.mutating and bare.destructive and not bare.read_only
    writer = tool_definition(
        mt.Tool(name="w", input_schema=SCHEMA, annotations=mt.ToolAnnotations(read_only_hint=False))
    )
    assert writer.destructive, "destructiveHint defaults to true"
    additive = mt.ToolAnnotations(read_only_hint=False, destructive_hint=False)
    assert not tool_definition(mt.Tool(name="a", input_schema=SCHEMA, annotations=additive)).destructive
    reader = tool_definition(
        mt.Tool(name="r", input_schema=SCHEMA, annotations=mt.ToolAnnotations(read_only_hint=True))
    )
    assert not reader.mutating and not reader.destructive


def test_task_only_tools_are_marked() -> None:
    execution = mt.ToolExecution(task_support="required")
    assert tool_definition(mt.Tool(name="t", input_schema=SCHEMA, execution=execution)).task_required
    optional = mt.ToolExecution(task_support="optional")
    assert not tool_definition(mt.Tool(name="t", input_schema=SCHEMA, execution=optional)).task_required


def test_content_blocks_keep_every_kind() -> None:
    result = mt.CallToolResult(
        content=[
            mt.TextContent(type="text", text="hello"),
            mt.ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png"),
            mt.AudioContent(type="audio", data="UklGRg==", mime_type="audio/wav"),
            mt.EmbeddedResource(
                type="resource",
                resource=mt.BlobResourceContents(uri="file:///a.bin", blob="AAEC", mime_type=None),
            ),
            mt.ResourceLink(type="resource_link", uri="file:///b.txt", name="b", mime_type="text/plain"),
        ]
    )
    output = call_output(result)
    assert output.blocks == [
        "hello",
        {"type": "image", "mime_type": "image/png", "data": "iVBORw0KGgo="},
        {"type": "audio", "mime_type": "audio/wav", "data": "UklGRg=="},
        {"type": "resource", "uri": "file:///a.bin", "mime_type": None, "data": "AAEC"},
        {"type": "resource_link", "uri": "file:///b.txt", "name": "b", "mime_type": "text/plain"},
    ]
    assert output.content.splitlines()[0] == "hello"
    assert "[image content: image/png, 12 base64 chars]" in output.content
