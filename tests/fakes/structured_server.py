"""An MCP server (the SDK's low-level ``Server``) that answers any JSON value as structured content.

``python tests/fakes/structured_server.py``. Every tool takes ``text`` (JSON) and answers its value:
``echo_object`` as the structured content itself (the value must be an object) with no output
schema; ``echo_wrapped`` as ``{"result": value}`` under the ``mcp`` SDK's wrapper schema
(``<name>Output``); ``echo_marked`` as ``{"result": value}`` under FastMCP's
``x-fastmcp-wrap-result`` marker. Each also sends the JSON text block the MCP spec asks for.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

_INPUT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
_READ_ONLY = types.ToolAnnotations(read_only_hint=True)
_WRAPPER = {"type": "object", "properties": {"result": {}}, "required": ["result"]}

TOOLS = [
    types.Tool(
        name="echo_object",
        description="The JSON object in text, as structured content.",
        input_schema=_INPUT,
        annotations=_READ_ONLY,
    ),
    types.Tool(
        name="echo_wrapped",
        description="Any JSON value in text, wrapped as the mcp SDK wraps a non-object result.",
        input_schema=_INPUT,
        output_schema={**_WRAPPER, "title": "echo_wrappedOutput"},
        annotations=_READ_ONLY,
    ),
    types.Tool(
        name="echo_marked",
        description="Any JSON value in text, wrapped as FastMCP wraps a non-object result.",
        input_schema=_INPUT,
        output_schema={**_WRAPPER, "x-fastmcp-wrap-result": True},
        annotations=_READ_ONLY,
    ),
]


async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    value = json.loads(str(arguments.get("text", "null")))
    structured = value if params.name == "echo_object" else {"result": value}
    if not isinstance(structured, dict):
        return types.CallToolResult(
            content=[types.TextContent(type="text", text="echo_object answers objects only")], is_error=True
        )
    text = json.dumps(structured, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured
    )


server: Server[Any] = Server("structured", version="0.0.1", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
