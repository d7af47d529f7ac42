"""The real npm memory server's ``create_entities`` (issue 35: 23 calls passed the type check and
failed at the server with ``expected array, received undefined at entities[0].observations``):
its stub names each entity's fields, the type check refuses a dict without ``observations`` before
any call, naming the field, and the host refuses one built in a variable, which the checker
cannot see."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from asyncai.code_mode import CodeMode
from asyncai.tools import McpServers, stdio_spec
from asyncai.tools.types import ToolCallOutput
from tests.fakes.logs import captured_log
from tests.third_party import npm_server

pytestmark = pytest.mark.anyio


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[CodeMode]:
    command = f"env MEMORY_FILE_PATH={tmp_path / 'memory.jsonl'} {npm_server('memory')}"
    async with McpServers([stdio_spec(command)]) as mcp, CodeMode(mcp) as code_mode:
        yield code_mode


async def _run(code_mode: CodeMode, code: str) -> tuple[ToolCallOutput, list[str]]:
    """The result and the tool calls that reached the server (from the log)."""
    with captured_log() as stream:
        output = await code_mode.call_tool("run_code", {"code": code})
    events = [json.loads(line) for line in stream.getvalue().splitlines()]
    return output, [event["tool"] for event in events if event.get("event") == "mcp.tool_call"]


def _refused(*mistakes: str) -> str:
    return "\n".join(
        [
            "error: the type check found mistakes before anything ran (no tool was called):",
            *mistakes,
            "Fix them and run the snippet again.",
        ]
    )


async def test_the_stub_shows_what_each_entity_needs(memory: CodeMode) -> None:
    description = memory.tools()[0].description
    assert (
        "class Entity(TypedDict):\n"
        "    name: str  # The name of the entity\n"
        "    entityType: str  # The type of the entity\n"
        "    observations: list[str]  # An array of observation contents associated with the entity\n\n"
        "async def create_entities(*, entities: list[Entity]) -> dict[str, Any]:"
    ) in description
    assert "async def create_relations(*, relations: list[Relation]) -> dict[str, Any]:" in description


async def test_an_entity_without_observations_is_refused_before_any_call(memory: CodeMode) -> None:
    output, calls = await _run(
        memory,
        "r = await create_entities(entities=[\n"
        "    {'name': 'Ada', 'entityType': 'person', 'observations': ['wrote the first program']},\n"
        "    {'name': 'Babbage', 'entityType': 'person'},\n"
        "])\n"
        "len(r['entities'])",
    )
    assert output.is_error and calls == []
    assert output.content == _refused(
        "- line 3: TypeError: create_entities(): `entities[1]` is missing required key 'observations' "
        "(see Entity in the stubs)"
    )


async def test_every_missing_key_and_wrong_literal_is_listed(memory: CodeMode) -> None:
    output, calls = await _run(
        memory,
        "await create_entities(entities=[{'name': n, 'entityType': 'p'} for n in ['A', 'B']])\n"
        "await create_relations(relations=[{'from': 'A', 'to': 'B'}])\n"
        "await create_entities(entities=[Entity(name='C', entityType='p', observations='x')])",
    )
    assert output.is_error and calls == []
    assert output.content == _refused(
        "- line 1: TypeError: create_entities(): `entities[...]` is missing required key 'observations' "
        "(see Entity in the stubs)",
        "- line 2: TypeError: create_relations(): `relations[0]` is missing required key 'relationType' "
        "(see Relation in the stubs)",
        "- line 3: TypeError: create_entities(): `entities[0]['observations']` must be list[str], not \"x\"",
    )


async def test_correct_calls_pass_and_reach_the_server(memory: CodeMode) -> None:
    output, calls = await _run(
        memory,
        "made = await create_entities(entities=[\n"
        "    {'name': 'Ada', 'entityType': 'person', 'observations': ['wrote the first program']},\n"
        "    Entity(name='Babbage', entityType='person', observations=[]),\n"
        "])\n"
        "linked = await create_relations(relations=[{'from': 'Ada', 'to': 'Babbage', 'relationType': 'knew'}])\n"
        "[sorted(e['name'] for e in made['entities']), linked['relations'][0]['relationType']]",
    )
    assert (output.is_error, json.loads(output.content)) == (False, [["Ada", "Babbage"], "knew"])
    assert calls == ["create_entities", "create_relations"]


async def test_what_the_check_cannot_be_sure_of_runs(memory: CodeMode) -> None:
    # A dict with ** may hold the key (the checker says it is missing); the server decides.
    output, calls = await _run(
        memory,
        "base = {'observations': ['x']}\n"
        "r = await create_entities(entities=[{**base, 'name': 'Ada', 'entityType': 'person'}])\n"
        "r['entities'][0]['observations']",
    )
    assert (output.content, calls) == ('["x"]', ["create_entities"])


async def test_an_entity_built_in_a_variable_is_refused_by_the_host(memory: CodeMode) -> None:
    output, calls = await _run(
        memory,
        "people = []\nfor name in ['Ada', 'Babbage']:\n    people.append({'name': name, 'entityType': 'person'})\n"
        "await create_entities(entities=people)",
    )
    assert output.is_error and calls == []
    assert output.content.rstrip().endswith(
        "TypeError: create_entities(): `entities[0]` is missing required key 'observations'"
    ), output.content
