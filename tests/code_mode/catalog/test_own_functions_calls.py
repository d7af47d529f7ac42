"""asyncai's own functions take their first argument by position as well as by keyword, and a
tool's function takes keywords only (issue 48, item 2). The description still shows every function
with keywords only, as before: showing the positional form measured worse (eval run 11), so the
type check and the host's check accept it without the model being told."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import asyncai
from asyncai.code_mode.catalog.description import Skills, run_code_description
from asyncai.code_mode.catalog.entries import build_catalog
from asyncai.code_mode.catalog.host_functions import FINDER_FUNCTIONS, HOST_FUNCTIONS
from asyncai.code_mode.catalog.skills import SKILL_FUNCTIONS
from asyncai.code_mode.engine.type_check import type_check_stubs
from asyncai.tools.types import ToolDefinition
from tests.skills.conftest import write_skill

TOOL = ToolDefinition(
    "lookup",
    "Look a word up.",
    {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
)
OWN = {**HOST_FUNCTIONS, **SKILL_FUNCTIONS}


def _parameters(source: str) -> dict[str, tuple[list[str], list[str]]]:
    """Function name -> (parameters that may be positional, keyword-only ones) of every stub."""
    found = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.AsyncFunctionDef):
            positional = [arg.arg for arg in [*node.args.posonlyargs, *node.args.args]]
            found[node.name] = (positional, [arg.arg for arg in node.args.kwonlyargs])
    return found


def test_the_description_shows_keywords_and_the_type_check_also_takes_the_first_by_position() -> None:
    description = run_code_description([TOOL], resource_servers=["docs"], skills=Skills(SKILL_FUNCTIONS))
    shown = _parameters("\n".join(_stubs_in(description)))
    checked = _parameters(type_check_stubs(build_catalog([TOOL], skills=SKILL_FUNCTIONS)))
    # search_tools and describe_tool are named in the index form only, with the type check's stubs.
    assert set(shown) == {"lookup", *OWN} - set(FINDER_FUNCTIONS)
    assert all(positional == [] for positional, _ in shown.values()), "the description: keywords only"
    assert checked["lookup"] == ([], ["word"])
    for name in OWN:
        positional, keywords = checked[name]
        assert len(positional) == 1, f"{name} takes its first argument by position"
        if name in shown:  # the same parameters, in the same order
            assert positional + keywords == shown[name][1]


def _stubs_in(description: str) -> list[str]:
    """Each ``async def`` stub's signature line in ``description``, as a stub with a body."""
    return [f"{line.rstrip(':')}: ..." for line in description.splitlines() if line.startswith("async def ")]


@pytest.mark.anyio
async def test_own_functions_by_position_run_and_a_tools_function_is_refused(tmp_path: Path) -> None:
    def lookup(word: str) -> str:
        return word.upper()

    write_skill(tmp_path / "skills", "greeting", "Say hello.", body="Wave first.")
    async with asyncai.CodeMode(asyncai.FunctionTools([lookup]), skills=[tmp_path / "skills"]) as code_mode:

        async def run(code: str) -> asyncai.ToolCallOutput:
            return await code_mode.call_tool("run_code", {"code": code})

        value = await run(
            'found = await search_tools("look a word up")\n'
            '[found[0]["name"], "word" in await describe_tool("lookup"), await skill("greeting"), '
            '[s["name"] for s in await skills("hello")]]'
        )
        assert not value.is_error, value.content
        assert value.structured is not None
        assert value.structured["value"] == ["lookup", True, "Wave first.", ["greeting"]]
        # The same mistakes, in the same words, whether the type check or the host's check meets them.
        for code in ('await lookup("tea")', 'w = "tea"\nawait lookup(*[w])'):
            refused = await run(code)
            assert refused.is_error and "TypeError: lookup() takes keyword arguments only" in refused.content
        for code in ('await skill("greeting", "again")', 'a = ["greeting", "again"]\nawait skill(*a)'):
            refused = await run(code)
            assert refused.is_error
            assert "TypeError: skill() takes 1 positional argument but 2 were given" in refused.content
        twice = await run('await skill("greeting", name="greeting")')
        assert twice.is_error and "skill() got multiple values for argument 'name'" in twice.content
