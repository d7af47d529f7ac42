"""Skills an MCP server serves over SEP-2640 (``tests/fakes/skills_server.py``, a subprocess
written with the SDK's own server): listed page by page, read with ``resources/read``, each file
verified against its digest; the skill's code runs in the sandbox and calls the server's tool."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import asyncai
from asyncai.skills.servers import skill_of, skill_sources
from asyncai.skills.skill import SkillError

pytestmark = pytest.mark.anyio
SERVER = f"{sys.executable} {Path(__file__).resolve().parent.parent / 'fakes' / 'skills_server.py'}"


@pytest.fixture
async def code_mode() -> AsyncIterator[asyncai.CodeMode]:
    async with asyncai.McpServers([asyncai.stdio_spec(SERVER)]) as mcp:
        skills = asyncai.SkillSet(skill_sources(mcp.connections))
        async with asyncai.CodeMode(mcp, skills=skills) as code_mode:
            yield code_mode


async def run(code_mode: asyncai.CodeMode, code: str) -> tuple[str, bool]:
    output = await code_mode.call_tool("run_code", {"code": code})
    return output.content, output.is_error


async def test_every_page_of_the_listing_is_read(code_mode: asyncai.CodeMode) -> None:
    text, _ = await run(code_mode, "[(s['name'], s['origin'], s['functions']) for s in await skills()]")
    assert json.loads(text) == [
        ["clock", "skills_server", True],
        ["inner", "skills_server", True],
        ["outer", "skills_server", False],
        ["tampered", "skills_server", False],
    ]


async def test_a_served_skill_loads_and_its_function_calls_the_servers_tool(
    code_mode: asyncai.CodeMode,
) -> None:
    assert (await run(code_mode, 'await skill(name="clock")'))[0].startswith("# Clock")
    text, is_error = await run(code_mode, 'await load_skill(name="clock")\nawait hour()')
    assert (text, is_error) == ("7", False)


async def test_a_skill_whose_digest_lies_is_refused_with_a_warning(
    code_mode: asyncai.CodeMode, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        text, is_error = await run(code_mode, 'await skill(name="tampered")')
    assert is_error and "SKILL.md does not match its digest" in text and "Do something else" not in text
    assert any("skills.refused" in record.getMessage() for record in caplog.records)


async def test_no_file_of_a_skill_whose_skill_md_failed_is_read(code_mode: asyncai.CodeMode) -> None:
    """SEP-2640: a skill whose SKILL.md fails verification is not loaded, so its other files, though
    they match their own digests, are not used either (nor read from the server)."""
    text, is_error = await run(code_mode, 'await skill_file(name="tampered", path="references/notes.md")')
    assert is_error and "SKILL.md does not match its digest" in text and "Notes" not in text
    text, is_error = await run(code_mode, 'await skill_file(name="clock", path="scripts/clock.py")')
    assert not is_error and "def hour" in text


async def test_loading_a_parent_does_not_activate_its_nested_skill(code_mode: asyncai.CodeMode) -> None:
    assert await run(code_mode, 'await load_skill(name="outer")') == ("[]", False)
    text, is_error = await run(code_mode, "inner_fn()")
    assert is_error and "NameError" in text
    assert await run(code_mode, 'await load_skill(name="inner")\ninner_fn()') == ("inner ran", False)


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ({"uri": "skill://a/SKILL.md", "frontmatter": {"name": "a", "description": "d"}, "resources": "dynamic"}, "dynamic"),
        ({"uri": "skill://a/SKILL.md", "frontmatter": {"name": "b", "description": "d"}, "resources": []}, "not its directory's name"),
        ({"uri": "skill://a/SKILL.md", "frontmatter": {"name": "a", "description": "d"}}, "no manifest"),
        ({"uri": "skill://a/SKILL.md", "frontmatter": {"name": "a", "description": "d"}, "resources": []}, "does not list SKILL.md"),
        (
            {"uri": "skill://a/SKILL.md", "frontmatter": {"name": "a", "description": "d"},
             "resources": [{"uri": "skill://other/x.md", "digest": "sha256:00", "size": 1}]},
            "not in the skill",
        ),
    ],
)  # fmt: skip
def test_an_entry_that_must_not_be_loaded_says_why(entry: dict[str, object], reason: str) -> None:
    with pytest.raises(SkillError, match=reason):
        skill_of(entry, "server")
