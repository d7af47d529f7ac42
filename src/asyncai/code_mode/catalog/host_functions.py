"""The catalog functions asyncai answers itself rather than a server: the resource functions
(issue 8) and tool discovery, ``search_tools`` and ``describe_tool``.

They are called like the tools, awaited (their first argument by position or keyword), and their
names are reserved, but they are not nested tool calls: no call budget, no audit, no mutation gate.
"""

from __future__ import annotations

from typing import Final

from asyncai.code_mode.catalog.resources import RESOURCE_FUNCTIONS
from asyncai.tools.types import ToolDefinition

SEARCH_TOOLS: Final = ToolDefinition(
    name="search_tools",
    description=(
        "The catalog functions that best match a plain-language query (BM25 over names, descriptions "
        "and parameter names), best first. name is the Python name to call. When more functions "
        'matched than limit, the last match has a "more" key saying so ("showing 10 of 143 ...").'
    ),
    input_schema={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": 'what the tool does, e.g. "delete a kv namespace"'},
            "limit": {"type": "integer", "description": "at most this many matches (10)"},
        },
        "required": ["query"],
    },
    output_schema={
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "summary": {"type": "string"},
                "signature": {"type": "string"},
                "more": {"type": "string", "description": "on the last match only: how many were left out"},
            },
            "required": ["name", "summary", "signature"],
        },
    },
    read_only=True,
    positional=1,
)

DESCRIBE_TOOL: Final = ToolDefinition(
    name="describe_tool",
    description=(
        "The full stub of one catalog function, exactly as a full catalog shows it: signature, "
        "docstring, Returns: sketch. An unknown name raises NameError listing the closest names."
    ),
    input_schema={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    output_schema={"type": "string"},
    read_only=True,
    positional=1,
)

FINDER_FUNCTIONS: Final = {tool.name: tool for tool in (SEARCH_TOOLS, DESCRIBE_TOOL)}
HOST_FUNCTIONS: Final = {**RESOURCE_FUNCTIONS, **FINDER_FUNCTIONS}
