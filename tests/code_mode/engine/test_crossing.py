"""The value rules for nested tool results and the text that crosses into the sandbox (issue 8)."""

from __future__ import annotations

import json
from typing import Any

from asyncai.code_mode.catalog.stubs import render_stub
from asyncai.code_mode.engine.crossing import (
    SMALL_VALUE_CHARS,
    Payload,
    crosses_exactly,
    tool_payload,
    unwrapped_output_schema,
    wrapped_result_key,
)
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


def test_a_small_result_crosses_as_its_value() -> None:
    assert Payload("json", '{"ok":true,"n":[1,2.5,null]}').as_host_reply() == (
        "value",
        {"ok": True, "n": [1, 2.5, None]},
    )
    assert Payload("text", "plain words").as_host_reply() == ("value", "plain words")
    assert Payload("text", " 42 ").as_host_reply() == ("value", 42)
    assert Payload("text", "héllo ✓").as_host_reply() == ("value", "héllo ✓")


def test_what_would_not_cross_exactly_stays_text() -> None:
    cases = [
        Payload("text", '"\\ud800"'),  # a lone surrogate: not UTF-8
        Payload("text", "\ud800 raw"),
        Payload("json", '{"\\udc00": 1}'),
        Payload("json", "18446744073709551616"),  # beyond 64 bits
        Payload("json", "1e400"),  # parses as inf
        Payload("text", "NaN"),
        Payload("json", "[" * 40 + "]" * 40),  # deeper than MAX_VALUE_DEPTH
        Payload("text", "x" * (SMALL_VALUE_CHARS + 1)),
    ]
    for payload in cases:
        assert payload.as_host_reply() == (payload.mode, payload.text), payload.text[:20]


def test_crosses_exactly_bounds() -> None:
    assert crosses_exactly(2**63 - 1) and crosses_exactly(-(2**63))
    assert not crosses_exactly(2**63)
    assert crosses_exactly([[[]]]) and crosses_exactly({"a": {"b": None}})
    assert not crosses_exactly(float("nan"))
