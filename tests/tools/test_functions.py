"""Python functions as tools: schemas from the signature and docstring, marks, validation, errors,
and the event loop kept free while a sync function runs."""

from __future__ import annotations

import asyncio
import datetime
import json
import threading
from typing import Any, TypedDict

import pytest
from mcp.server.mcpserver.utilities.types import Image
from mcp.types import TextContent

from asyncai import FunctionTools, tool
from asyncai.code_mode.engine.crossing import wrapped_result_key
from asyncai.tools.functions import docstring_parts

pytestmark = pytest.mark.anyio


@tool(read_only=True)
def add(a: int, b: int = 2) -> int:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number, two
            when left out.
    """
    return a + b


@tool(destructive=False, name="note")
async def write_note(text: str) -> dict[str, Any]:
    """Keep a note."""
    return {"kept": text}


def plain(path: str) -> None:
    """Remove a file (for the test: nothing)."""


def test_schemas_come_from_the_signature_and_the_docstring() -> None:
    definitions = {d.name: d for d in FunctionTools([add, write_note, plain]).tools()}
    added = definitions["add"]
    assert added.description == "Add two numbers."
    assert added.input_schema["required"] == ["a"]
    assert added.input_schema["properties"]["a"]["type"] == "integer"
    assert added.input_schema["properties"]["a"]["description"] == "The first number."
    assert added.input_schema["properties"]["b"]["description"] == "The second number, two when left out."
    assert added.input_schema["properties"]["b"]["default"] == 2
    # An int is no object: the SDK wraps it as {"result": ...}, and code mode unwraps it.
    assert (
        added.output_schema is not None and added.output_schema["properties"]["result"]["type"] == "integer"
    )
    assert (added.read_only, added.destructive, added.mutating, added.server) == (
        True,
        False,
        False,
        "functions",
    )
    assert definitions["note"].output_schema == {
        "type": "object",
        "additionalProperties": True,
        "title": "write_noteDictOutput",
    }
    assert (definitions["note"].read_only, definitions["note"].destructive) == (False, False)
    # Unmarked: not read-only and destructive, as the MCP spec assumes of a tool that says nothing.
    assert (definitions["plain"].read_only, definitions["plain"].destructive) == (False, True)


def test_docstring_sections() -> None:
    description, arguments = docstring_parts(
        "Find things.\n\n:param query: what to find\n:param limit: how many\n\nMore text."
    )
    assert arguments == {"query": "what to find", "limit": "how many"}
    assert description.startswith("Find things.")


async def test_calls_validate_and_convert_like_an_mcp_server() -> None:
    functions = FunctionTools([add, write_note])
    out = await functions.call_tool("add", {"a": 40})
    assert not out.is_error and out.structured == {"result": 42}
    note = await functions.call_tool("note", {"text": "hi"})
    assert note.structured == {"kept": "hi"} and json.loads(note.content) == {"kept": "hi"}
    bad = await functions.call_tool("add", {"a": "forty"})
    assert bad.is_error and bad.content.startswith("Error executing tool add:") and "a" in bad.content
    missing = await functions.call_tool("nope", {})
    assert missing.is_error and "unknown tool 'nope'" in missing.content


async def test_an_exception_is_an_error_result_with_its_type_and_message() -> None:
    def explode(reason: str) -> str:
        raise KeyError(reason)

    out = await FunctionTools([explode]).call_tool("explode", {"reason": "no such key"})
    assert out.is_error and out.content == "Error executing tool explode: KeyError: 'no such key'"


async def test_a_sync_function_runs_off_the_event_loop() -> None:
    release = threading.Event()

    def blocking() -> str:
        release.wait(10)
        return threading.current_thread().name

    functions = FunctionTools([blocking])
    call = asyncio.create_task(functions.call_tool("blocking", {}))
    await asyncio.sleep(0.05)  # the loop turns while the function blocks its thread
    assert not call.done()
    release.set()
    out = await asyncio.wait_for(call, 10)
    assert out.structured is not None and out.structured["result"] != threading.current_thread().name


def test_add_overrides_marks_and_refuses_a_second_function_of_one_name() -> None:
    functions = FunctionTools()
    functions.add(plain, read_only=True, name="peek")
    [peek] = functions.tools()
    assert (peek.name, peek.read_only) == ("peek", True)
    assert getattr(plain, "__asyncai_tool__", None) is None  # the original keeps its own marks
    with pytest.raises(ValueError, match="two functions are named 'peek'"):
        functions.add(plain, name="peek")


def test_a_signature_that_cannot_be_a_tool_says_why() -> None:
    with pytest.raises(ValueError, match="cannot be a tool"):
        FunctionTools([lambda x: x])


def spread(*names: str) -> int:
    """Count names."""
    return len(names)


def flags(path: str, **options: bool) -> str:
    """Open a path."""
    return path


def positional(a: int, /) -> int:
    """Return a."""
    return a


@pytest.mark.parametrize(
    ("function", "message"),
    [
        (spread, r"function 'spread' cannot be a tool: its parameter \*names: .* takes no \*args"),
        (flags, r"function 'flags' cannot be a tool: its parameter \*\*options: .* takes no \*\*kwargs"),
        (positional, r"function 'positional' cannot be a tool: its parameter a is positional-only"),
    ],
)
def test_a_function_whose_arguments_cannot_be_named_is_refused_when_added(
    function: Any, message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        FunctionTools([function])
    with pytest.raises(TypeError, match=message):
        FunctionTools().add(function, read_only=True)  # through the marked copy too
    with pytest.raises(TypeError, match=message.replace(f"'{function.__name__}'", "'renamed'")):
        FunctionTools().add(function, name="renamed")


async def test_an_unannotated_parameter_is_any() -> None:
    def lookup(key, default=None, *, limit: int = 3):  # unannotated parameters are what is tested
        """Find key."""
        return [key, default, limit]

    functions = FunctionTools([lookup])
    [definition] = functions.tools()
    properties = definition.input_schema["properties"]
    assert properties["key"] == {"title": "key"}, "no type: Any, not a string"
    assert properties["default"] == {"title": "default", "default": None}
    assert properties["limit"]["type"] == "integer"
    out = await functions.call_tool("lookup", {"key": {"a": [1]}, "default": 2})
    assert out.structured == {"result": [{"a": [1]}, 2, 3]}


def untyped_value(text: str):  # the missing annotation is what is tested
    return json.loads(text)


def bare_list(text: str) -> list:  # type: ignore[type-arg]  # the bare annotation is tested
    return list(json.loads(text))


def any_value(text: str) -> Any:
    return json.loads(text)


@pytest.mark.parametrize("function", [untyped_value, bare_list, any_value])
@pytest.mark.parametrize("value", [[[1, 2], 2], ["only"], [], [None], ["a", {"b": None}]])
async def test_a_value_the_sdk_sends_as_text_blocks_is_also_structured(function: Any, value: Any) -> None:
    functions = FunctionTools([function])
    [definition] = functions.tools()
    name = function.__name__
    assert definition.output_schema == {
        "properties": {"result": {"title": "Result"}},
        "required": ["result"],
        "title": f"{name}Output",
        "type": "object",
    }
    out = await functions.call_tool(name, {"text": json.dumps(value)})
    assert (out.is_error, out.structured) == (False, {"result": value})


async def test_a_value_that_is_not_json_is_sent_as_its_text_says() -> None:
    class Thing:
        def __str__(self) -> str:
            return "a thing"

    def things():  # the missing annotation is what is tested
        return {"when": datetime.date(2024, 1, 2), "tags": ("a", "b"), "thing": Thing()}

    out = await FunctionTools([things]).call_tool("things", {})
    assert out.structured == {"result": {"when": "2024-01-02", "tags": ["a", "b"], "thing": "a thing"}}
    assert json.loads(out.content) == out.structured["result"]


async def test_content_blocks_stay_blocks() -> None:
    def block() -> TextContent:
        return TextContent(type="text", text='["only"]')

    def picture():  # unannotated: the value decides
        return [Image(data=b"png", format="png"), "caption"]

    def maybe_blocks() -> list[TextContent] | None:
        return [TextContent(type="text", text="a"), TextContent(type="text", text="b")]

    functions = FunctionTools([block, picture, maybe_blocks])
    definitions = {d.name: d for d in functions.tools()}
    assert definitions["block"].output_schema is None
    assert definitions["maybe_blocks"].output_schema is None
    out = await functions.call_tool("block", {})
    assert (out.structured, out.blocks) == (None, ['["only"]'])
    pictured = await functions.call_tool("picture", {})
    assert pictured.structured is None and pictured.blocks is not None
    assert [type(b).__name__ for b in pictured.blocks] == ["dict", "str"] and pictured.blocks[1] == "caption"
    assert (await functions.call_tool("maybe_blocks", {})).blocks == ["a", "b"]


class LookupOutput(TypedDict):
    result: int


def lookup_output() -> LookupOutput:
    return {"result": 7}


async def test_an_object_shaped_like_the_wrapper_says_it_is_the_value() -> None:
    functions = FunctionTools([lookup_output, add])
    definitions = {d.name: d for d in functions.tools()}
    schema = definitions["lookup_output"].output_schema
    assert schema is not None and schema["x-fastmcp-wrap-result"] is False
    assert wrapped_result_key(schema) is None, "code mode gives the whole object"
    assert wrapped_result_key(definitions["add"].output_schema) == "result", "a real wrapper is unwrapped"
    assert (await functions.call_tool("lookup_output", {})).structured == {"result": 7}
