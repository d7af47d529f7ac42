"""Skills in code mode (issue 37): the model sees the skills in ``run_code``'s description, reads
one, loads one whose function calls a real MCP tool (``mcp-server-time``, a subprocess) and uses
that function, through the CLI agent and a scripted model; and the rules of ``load_skill``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import asyncai
from tests.cli.conftest import asyncai as run_asyncai
from tests.fakes.openai_server import ScriptedOpenAI, call, text_reply, tool_reply
from tests.skills.conftest import write_skill
from tests.third_party import pypi_server

CLOCK = """async def utc_hour() -> int:
    now = await get_current_time(timezone="UTC")
    return int(now["datetime"][11:13])
"""


def clock_skill(root: Path) -> Path:
    return write_skill(
        root,
        "utc-clock",
        "Tell the hour in UTC from the time server.",
        "# UTC clock\n\nload_skill, then `await utc_hour()`.\n",
        {"scripts/clock.py": CLOCK},
    )


def tool_results(request: dict[str, Any]) -> list[str]:
    return [message["content"] for message in request["messages"] if message["role"] == "tool"]


def test_the_model_lists_reads_and_loads_a_skill_that_calls_a_real_tool(tmp_path: Path) -> None:
    clock_skill(tmp_path / "skills")
    snippets = [
        "await skills()",
        'await skill(name="utc-clock")',
        'await load_skill(name="utc-clock")\nhour = await utc_hour()\n0 <= hour < 24',
    ]
    script = [tool_reply(call("run_code", {"code": code})) for code in snippets] + [text_reply("done")]
    with ScriptedOpenAI(script) as model:
        result = run_asyncai(
            "--base-url", model.base_url, "--model", "m", "--no-session",
            "--mcp-stdio", "time=" + pypi_server("mcp-server-time", "--local-timezone", "UTC"),
            "--skills", str(tmp_path / "skills"), "-p", "what hour is it in UTC?", cwd=tmp_path,
        )  # fmt: skip
    assert result.status == 0, result.stderr
    description = model.requests[0]["tools"][0]["function"]["description"]
    assert "- utc-clock: Tell the hour in UTC from the time server." in description
    assert "async def load_skill(*, name: str) -> list[str]:" in description
    listed, read, used = tool_results(model.requests[-1])
    assert json.loads(listed) == [
        {
            "name": "utc-clock",
            "description": "Tell the hour in UTC from the time server.",
            "origin": "local",
            "functions": True,
        }
    ]
    assert read.startswith("# UTC clock")
    assert used == "true", used


@pytest.fixture
async def code_mode(tmp_path: Path) -> AsyncIterator[asyncai.CodeMode]:
    clock_skill(tmp_path)
    write_skill(
        tmp_path, "broken", "Code Monty cannot run", files={"scripts/bad.py": "class A(B):\n    pass\n"}
    )
    write_skill(
        tmp_path,
        "rebinds",
        "Redefines a tool",
        files={"scripts/x.py": "async def get_current_time():\n    pass\n"},
    )
    write_skill(tmp_path, "notes-only", "Only instructions")
    time_server = asyncai.stdio_spec(pypi_server("mcp-server-time", "--local-timezone", "UTC"))
    async with (
        asyncai.McpServers([time_server]) as mcp,
        asyncai.CodeMode(mcp, skills=[tmp_path]) as code_mode,
    ):
        yield code_mode


async def run(code_mode: asyncai.CodeMode, code: str) -> tuple[str, bool]:
    output = await code_mode.call_tool("run_code", {"code": code})
    return output.content, output.is_error


@pytest.mark.anyio
async def test_load_skill_defines_the_functions_in_the_repl(code_mode: asyncai.CodeMode) -> None:
    text, is_error = await run(code_mode, 'await load_skill(name="utc-clock")')
    assert (json.loads(text), is_error) == (["async def utc_hour() -> int"], False)
    text, is_error = await run(code_mode, "h = await utc_hour()\n0 <= h < 24")
    assert (text, is_error) == ("true", False), "defined for later snippets too"
    assert "utc_hour" in (code_mode.context_note() or "")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("code", "error"),
    [
        (
            'n = "utc-clock"\nawait load_skill(name=n)',
            "load_skill needs the skill's name written as a string literal",
        ),
        ('await load_skill(name="utc-clok")', "no skill named 'utc-clok'; did you mean utc-clock?"),
        ('await load_skill(name="broken")', "skill 'broken': scripts/bad.py does not run in the sandbox"),
        (
            'await load_skill(name="rebinds")',
            "skill 'rebinds': scripts/x.py was not run: `get_current_time` is a tool",
        ),
        ('await skill_file(name="utc-clock", path="../../etc/passwd")', "has no file '../../etc/passwd'"),
    ],
)
async def test_a_skill_that_cannot_load_fails_where_it_is_loaded(
    code_mode: asyncai.CodeMode, code: str, error: str
) -> None:
    indented = code.replace("\n", "\n    ")
    text, is_error = await run(
        code_mode, f'out = "ran"\ntry:\n    {indented}\nexcept RuntimeError as exc:\n    out = str(exc)\nout'
    )
    assert not is_error and error in text, text
    if "rebinds" in code:
        text, _ = await run(code_mode, 'r = await get_current_time(timezone="UTC")\nr["timezone"]')
        assert text == "UTC", "the tool function is still the tool's"


@pytest.mark.anyio
async def test_a_skill_without_python_files_loads_nothing(code_mode: asyncai.CodeMode) -> None:
    assert await run(code_mode, 'await load_skill(name="notes-only")') == ("[]", False)
    assert await run(code_mode, 'await skill(name="notes-only")') == (
        '(the result is an empty string "")',
        False,
    )


@pytest.mark.anyio
async def test_without_skills_there_are_no_skill_functions(tmp_path: Path) -> None:
    async with asyncai.CodeMode(asyncai.FunctionTools([]), skills=[tmp_path]) as code_mode:
        assert "load_skill" not in code_mode.tools()[0].description
        assert await run(code_mode, "skill = 1\nskill") == ("1", False), "the name is free without skills"
        clock_skill(tmp_path)
        await code_mode.refresh_skills()
        assert "- utc-clock:" in code_mode.tools()[0].description
        text, is_error = await run(code_mode, "skill = 2")
        assert is_error and "`skill`" in text
