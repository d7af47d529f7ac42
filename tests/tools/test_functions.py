"""Python functions as tools: schemas from the signature and docstring, marks, validation, errors,
and the event loop kept free while a sync function runs."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from asyncai import FunctionTools, tool
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
