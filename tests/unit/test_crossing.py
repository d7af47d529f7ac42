"""The value rules for nested tool results and the text that crosses into the sandbox (issue 8)."""

from __future__ import annotations

import json
from typing import Any

from asyncai.code_mode.catalog import render_stub
from asyncai.code_mode.crossing import Payload, tool_payload, unwrapped_output_schema, wrapped_result_key
from asyncai.tools.types import ToolCallOutput, ToolDefinition

SDK_WRAPPED = {
    "properties": {"result": {"title": "Result", "type": "integer"}},
    "required": ["result"],
    "type": "object",
    "title": "addOutput",
}
FASTMCP_WRAPPED = {
    "type": "object",
    "properties": {"result": {"type": "array", "items": {"type": "string"}}},
    "required": ["result"],
    "x-fastmcp-wrap-result": True,
}
PLAIN = {"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"]}


def _value(payload: Payload) -> Any:
    """What the sandbox's decoder makes of a payload (the same rule, in CPython)."""
    if payload.mode == "json":
        return json.loads(payload.text)
    try:
        return json.loads(payload.text)
    except ValueError:
        return payload.text


def test_structured_content_is_the_value_even_when_the_text_differs() -> None:
    output = ToolCallOutput(content="123", structured={"content": "123"}, blocks=["123"])
    assert _value(tool_payload(output, PLAIN)) == {"content": "123"}


def test_wrapped_results_are_unwrapped_for_the_sdk_and_fastmcp() -> None:
    assert wrapped_result_key(SDK_WRAPPED) == wrapped_result_key(FASTMCP_WRAPPED) == "result"
    assert wrapped_result_key(PLAIN) is None
    assert wrapped_result_key({**SDK_WRAPPED, "title": "Weather"}) is None, "a model with a result field"
    sdk = ToolCallOutput(content="3", structured={"result": 3})
    assert _value(tool_payload(sdk, SDK_WRAPPED)) == 3
    fast = ToolCallOutput(content='["a"]', structured={"result": ["a"]})
    assert _value(tool_payload(fast, FASTMCP_WRAPPED)) == ["a"]
    text = ToolCallOutput(content="123", structured={"result": "123"})
    assert _value(tool_payload(text, {**SDK_WRAPPED, "properties": {"result": {"type": "string"}}})) == "123"


def test_stubs_show_the_unwrapped_type() -> None:
    stub = render_stub("add", ToolDefinition("add", "Add.", {"type": "object"}, SDK_WRAPPED))
    assert stub.startswith("async def add() -> int:")
    assert unwrapped_output_schema(FASTMCP_WRAPPED) == {"type": "array", "items": {"type": "string"}}
    assert unwrapped_output_schema(PLAIN) is PLAIN


def test_text_blocks_parse_as_json_when_they_can() -> None:
    assert _value(tool_payload(ToolCallOutput(content='{"a": 1}', blocks=['{"a": 1}']), None)) == {"a": 1}
    assert _value(tool_payload(ToolCallOutput(content="plain", blocks=["plain"]), None)) == "plain"
    assert tool_payload(ToolCallOutput(content="x" * 10), None) == Payload("text", "x" * 10), (
        "a large single text crosses as it is and is parsed inside the sandbox"
    )


def test_several_blocks_are_a_list_and_other_content_is_a_dict() -> None:
    image = {"type": "image", "mime_type": "image/png", "data": "iVBORw0KGgo="}
    output = ToolCallOutput(content="", blocks=["see:", image, "[1, 2]"])
    assert _value(tool_payload(output, None)) == ["see:", image, [1, 2]]
    assert _value(tool_payload(ToolCallOutput(content="", blocks=[image]), None)) == image


def test_no_content_is_none() -> None:
    assert _value(tool_payload(ToolCallOutput(content="", blocks=[]), None)) is None
