"""Values round-trip: any JSON value a function tool returns (under any return annotation) or an
MCP server sends as structured content arrives in the snippet unchanged.

Each example runs through the real engine (``CodeMode`` over ``FunctionTools`` and a real MCP
server subprocess, real monty workers). The snippet compares what arrived with the expected value
written as a Python literal, type by type (``1 == 1.0 == True`` in Python, so ``==`` alone would
hide a changed type), and answers ``ok`` or the ``repr`` of what arrived.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TypedDict

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from asyncai.code_mode import CodeMode, CodeModeLimits
from asyncai.tools import McpServers, stdio_spec
from asyncai.tools.functions import FunctionTools

pytestmark = pytest.mark.anyio

SERVER = shlex.join([sys.executable, str(Path(__file__).parents[1] / "fakes" / "structured_server.py")])
LIMITS = CodeModeLimits(code_timeout=10.0, tool_timeout=10.0, max_memory=256 * 1024 * 1024)
# Seeded and bounded by default; ASYNCAI_FUZZ_EXAMPLES=N runs N unseeded examples (as the differential harness).
EXAMPLES = int(os.environ.get("ASYNCAI_FUZZ_EXAMPLES", "25"))
ROUND_TRIP = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize="ASYNCAI_FUZZ_EXAMPLES" not in os.environ,
    database=None,
)


class Found(TypedDict):
    name: str
    tags: list[Any]
    extra: Any


class LookupOutput(TypedDict):
    """Named and shaped like the SDK's ``{"result": ...}`` wrapper, but it is the value itself."""

    result: Any


class Hit(BaseModel):
    id: int
    score: float
    payload: Any


@dataclasses.dataclass
class Row:
    key: str
    values: list[Any]
    meta: dict[str, Any]


def untyped(text: str):  # the missing return annotation is what is tested
    """The value, with no return annotation."""
    return json.loads(text)


def as_list(text: str) -> list:  # type: ignore[type-arg]  # the bare annotation is what is tested
    """The value as a bare ``list``."""
    return list(json.loads(text))


def as_list_any(text: str) -> list[Any]:
    """The value as ``list[Any]``."""
    return list(json.loads(text))


def as_any(text: str) -> Any:
    """The value as ``Any``."""
    return json.loads(text)


def as_found(text: str) -> Found:
    """The value as a TypedDict."""
    found: Found = json.loads(text)
    return found


def as_lookup(text: str) -> LookupOutput:
    """The value as a TypedDict that looks like the SDK's wrapper."""
    lookup: LookupOutput = json.loads(text)
    return lookup


def as_hit(text: str) -> Hit:
    """The value as a pydantic model."""
    return Hit.model_validate(json.loads(text))


def as_row(text: str) -> Row:
    """The value as a dataclass."""
    return Row(**json.loads(text))


FUNCTIONS: list[Callable[[str], Any]] = [
    untyped,
    as_list,
    as_list_any,
    as_any,
    as_found,
    as_lookup,
    as_hit,
    as_row,
]

# JSON values: big integers (beyond 64 bits), finite floats, any unicode, empty and one-element lists.
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=16,
)
json_lists = st.lists(json_values, max_size=4)
json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=4)


def fields(**strategies: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects of a typed return value, keys in the type's field order (as its JSON has them)."""
    return st.fixed_dictionaries(strategies).map(lambda drawn: {key: drawn[key] for key in strategies})


found_values = fields(name=st.text(max_size=8), tags=json_lists, extra=json_values)
hit_values = fields(
    id=st.integers(min_value=-(2**80), max_value=2**80),
    score=st.floats(allow_nan=False, allow_infinity=False),
    payload=json_values,
)
row_values = fields(key=st.text(max_size=8), values=json_lists, meta=json_objects)


# Changed on the way before the fix (issue 34), and values over 1 KB, which cross as JSON text.
KNOWN = [
    [[1, 2], 2],
    ["only"],
    [],
    [None],
    "[1, 2]",
    "42",
    "null",
    "",
    list(range(400)),
    "é ✓ 日本" * 300,
    {"big": [2**70, -1.5e-300, "日本", None, True] * 60},
]


def known(test: Any) -> Any:
    """Try the ``KNOWN`` values first, on every run."""
    for value in reversed(KNOWN):
        test = example(value=value)(test)
    return test


SAME = """
def same(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b
"""


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def code_mode() -> AsyncIterator[CodeMode]:
    """One engine (one REPL, one worker) over the functions and the server, for every example."""
    async with (
        McpServers([stdio_spec(SERVER, name="structured")]) as servers,
        CodeMode([FunctionTools(FUNCTIONS), servers], LIMITS) as engine,
    ):
        yield engine


async def arrives(code_mode: CodeMode, tool: str, value: Any) -> None:
    """``tool`` given ``value`` as JSON text answers exactly ``value`` inside the snippet."""
    code = (
        f"{SAME}\ngot = await {tool}(text={json.dumps(value)!r})\n'ok' if same(got, {value!r}) else repr(got)"
    )
    output = await code_mode.call_tool("run_code", {"code": code})
    assert (output.content, output.is_error) == ("ok", False), (
        f"{tool} returned {value!r}; the snippet got {output.content}"
    )


@pytest.mark.parametrize("tool", ["untyped", "as_any", "echo_wrapped", "echo_marked"])
@known
@ROUND_TRIP
@given(value=json_values)
async def test_any_json_value_arrives_unchanged(code_mode: CodeMode, tool: str, value: Any) -> None:
    await arrives(code_mode, tool, value)


@pytest.mark.parametrize("tool", ["as_list", "as_list_any"])
@example(value=[[1, 2], 2]).via("issue 34")
@example(value=["only"]).via("issue 34")
@example(value=[]).via("issue 34")
@ROUND_TRIP
@given(value=json_lists)
async def test_any_list_arrives_unchanged(code_mode: CodeMode, tool: str, value: list[Any]) -> None:
    await arrives(code_mode, tool, value)


@ROUND_TRIP
@given(value=found_values)
async def test_typed_dict_values_arrive_unchanged(code_mode: CodeMode, value: dict[str, Any]) -> None:
    await arrives(code_mode, "as_found", value)


@ROUND_TRIP
@given(value=st.fixed_dictionaries({"result": json_values}))
async def test_a_typed_dict_shaped_like_the_wrapper_arrives_whole(
    code_mode: CodeMode, value: dict[str, Any]
) -> None:
    await arrives(code_mode, "as_lookup", value)


@ROUND_TRIP
@given(value=hit_values)
async def test_pydantic_model_values_arrive_unchanged(code_mode: CodeMode, value: dict[str, Any]) -> None:
    await arrives(code_mode, "as_hit", value)


@ROUND_TRIP
@given(value=row_values)
async def test_dataclass_values_arrive_unchanged(code_mode: CodeMode, value: dict[str, Any]) -> None:
    await arrives(code_mode, "as_row", value)


@ROUND_TRIP
@given(value=json_objects)
async def test_structured_objects_from_a_server_arrive_unchanged(
    code_mode: CodeMode, value: dict[str, Any]
) -> None:
    await arrives(code_mode, "echo_object", value)
