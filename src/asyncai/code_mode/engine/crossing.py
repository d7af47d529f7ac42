"""What a nested tool call's result is inside the snippet, and how it crosses into the sandbox.

The value:

1. A result with ``structuredContent`` has that as its value: the MCP spec makes it the canonical
   result and the text block its serialisation for old clients, and the stub's return type comes
   from the same output schema. A tool whose output schema says it wraps its result in
   ``{"result": ...}`` (FastMCP's ``x-fastmcp-wrap-result``, the ``mcp`` SDK's ``<name>Output``
   model for primitive and list returns) gives the unwrapped value, and its stub shows that type.
   An explicit ``x-fastmcp-wrap-result: false`` (function tools) says the object is the value.
2. Otherwise the content blocks decide: none is ``None``; one text block is its parsed JSON when it
   parses, else the ``str``; a non-text block is a dict (see ``ToolCallOutput.blocks``); several
   blocks are a list of those values.

The crossing keeps the fast path: a value crosses as text and is parsed inside the sandbox (a
structured value crosses 3-4x slower than its JSON text, benchmarks/RESULTS.md). ``Payload.mode``
says how the sandbox reads the text: ``"json"`` is JSON of the value, ``"text"`` is one text
block, its JSON value when it parses and the ``str`` itself otherwise.

Small results are the exception: they cross as the value itself (``"value"``), parsed on the host.
Inside the sandbox, the first ``json.loads`` after an awaited host call costs about 60 µs, while a
value under about 1 KB crosses in less than that (measured with pydantic-monty 1.4; the crossover
was between 0.5 and 2 KB). Only values that cross exactly take this path; anything else (lone
surrogates, integers beyond 64 bits, NaN, deep nesting) goes as text, as before.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Final, Literal

from asyncai.log import dumps_compact
from asyncai.tools.types import ToolCallOutput

__all__ = ["Payload", "block_value", "tool_payload", "unwrapped_output_schema", "wrapped_result_key"]

WRAP_KEY: Final = "result"
SMALL_VALUE_CHARS: Final = 1024
"""Results whose text is at most this long cross as a value (see the module docstring)."""
MAX_VALUE_DEPTH: Final = 32
_INT64: Final = 2**63
FASTMCP_WRAP_MARKER: Final = "x-fastmcp-wrap-result"


@dataclass(frozen=True)
class Payload:
    mode: Literal["json", "text"]
    text: str

    def as_host_reply(self) -> tuple[str, Any]:
        """What the host function returns to the sandbox's tool wrapper: ``(mode, text)``, or
        ``("value", value)`` for a small result that crosses exactly."""
        if len(self.text) <= SMALL_VALUE_CHARS:
            try:
                value = json.loads(self.text, parse_constant=_reject_constant)
            except _NonFinite:
                return (self.mode, self.text)
            except (ValueError, RecursionError):
                value = self.text  # only "text" mode can fail to parse: its value is the str
            if crosses_exactly(value):
                return ("value", value)
        return (self.mode, self.text)


class _NonFinite(Exception):
    pass


def _reject_constant(name: str) -> Any:
    raise _NonFinite(name)


def crosses_exactly(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` (parsed JSON) reaches the sandbox unchanged as a value: UTF-8 strings,
    64-bit integers, finite floats, shallow nesting."""
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, float):
        return math.isfinite(value)  # 1e400 parses as inf
    if isinstance(value, int):
        return -_INT64 <= value < _INT64
    if isinstance(value, str):
        return value.isascii() or _is_utf8(value)
    if depth >= MAX_VALUE_DEPTH:
        return False
    if isinstance(value, list):
        return all(crosses_exactly(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return all(_is_utf8(key) and crosses_exactly(item, depth + 1) for key, item in value.items())
    return False


def _is_utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def wrapped_result_key(output_schema: dict[str, Any] | None) -> str | None:
    """``"result"`` when the tool wraps its value in ``{"result": ...}``, else ``None``."""
    if not isinstance(output_schema, dict):
        return None
    marker = output_schema.get(FASTMCP_WRAP_MARKER)
    if isinstance(marker, bool):  # explicit either way: function tools say False for a lookalike object
        return WRAP_KEY if marker else None
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
