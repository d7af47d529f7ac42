"""What a nested tool call's result is inside the snippet, and how it crosses into the sandbox.

The value (issue 8, which amends the ADR's "text first" table):

1. A result with ``structuredContent`` has that as its value: the MCP spec makes it the canonical
   result and the text block its serialisation for old clients, and the stub's return type comes
   from the same output schema. A tool whose output schema says it wraps its result in
   ``{"result": ...}`` (FastMCP's ``x-fastmcp-wrap-result``, the ``mcp`` SDK's ``<name>Output``
   model for primitive and list returns) gives the unwrapped value, and its stub shows that type.
2. Otherwise the content blocks decide: none is ``None``; one text block is its parsed JSON when it
   parses, else the ``str``; a non-text block is a dict (see ``ToolCallOutput.blocks``); several
   blocks are a list of those values.

The crossing keeps the fast path: a value crosses as text and is parsed inside the sandbox (a
structured value crosses 3-4x slower than its JSON text, benchmarks/RESULTS.md). ``Payload.mode``
says how the sandbox reads the text: ``"json"`` is JSON of the value, ``"text"`` is one text
block, its JSON value when it parses and the ``str`` itself otherwise.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final, Literal

from ..log import dumps_compact
from ..tools.types import ToolCallOutput

__all__ = ["Payload", "block_value", "tool_payload", "unwrapped_output_schema", "wrapped_result_key"]

WRAP_KEY: Final = "result"
FASTMCP_WRAP_MARKER: Final = "x-fastmcp-wrap-result"


@dataclass(frozen=True)
class Payload:
    mode: Literal["json", "text"]
    text: str

    def as_host_reply(self) -> tuple[str, str]:
        """What the host function returns to the sandbox's tool wrapper."""
        return (self.mode, self.text)


def wrapped_result_key(output_schema: dict[str, Any] | None) -> str | None:
    """``"result"`` when the tool wraps its value in ``{"result": ...}``, else ``None``."""
    if not isinstance(output_schema, dict):
        return None
    if output_schema.get(FASTMCP_WRAP_MARKER) is True:
        return WRAP_KEY
    properties = output_schema.get("properties")
    title = output_schema.get("title")
    sdk_wrapper = (
        isinstance(properties, dict)
        and list(properties) == [WRAP_KEY]
        and output_schema.get("required") == [WRAP_KEY]
        and isinstance(title, str)
        and title.endswith("Output")
    )
    return WRAP_KEY if sdk_wrapper else None


def unwrapped_output_schema(output_schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """The schema of the value a snippet gets: the wrapped property's schema for a wrapping tool."""
    key = wrapped_result_key(output_schema)
    if output_schema is None or key is None:
        return output_schema
    inner = output_schema["properties"][key]
    if not isinstance(inner, dict):
        return {}
    # Keep the definitions the wrapped schema may refer to.
    definitions = {k: output_schema[k] for k in ("$defs", "definitions") if k in output_schema}
    return {**definitions, **inner}


def block_value(block: str | dict[str, Any]) -> Any:
    """One content block's value: a text block's JSON when it parses, else the block as it is."""
    if not isinstance(block, str):
        return block
    try:
        return json.loads(block)
    except (ValueError, RecursionError):
        return block


def tool_payload(output: ToolCallOutput, output_schema: dict[str, Any] | None) -> Payload:
    """The value of a successful tool result (the rules above) as the text that crosses."""
    if output.structured is not None:
        key = wrapped_result_key(output_schema)
        value = output.structured.get(key) if key is not None else output.structured
        return Payload("json", dumps_compact(value))
    blocks = output.blocks if output.blocks is not None else [output.content]
    if not blocks:
        return Payload("json", "null")
    if len(blocks) == 1:
        only = blocks[0]
        return Payload("text", only) if isinstance(only, str) else Payload("json", dumps_compact(only))
    return Payload("json", dumps_compact([block_value(block) for block in blocks]))
