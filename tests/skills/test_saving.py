"""Skills the agent writes (issue 37): ``save_skill`` keeps functions a snippet defined, with their
source as the REPL got it, as a skill any later process loads; saving is a write the mutation
policy decides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import asyncai
from asyncai.code_mode.engine.read import function_sources, scan_snippet
from asyncai.code_mode.engine.variables import KnownVariables
from asyncai.skills.skill import SkillError, saved_skill_files, split_skill_md
from asyncai.state.stores import SavedScope, pack, unpack
from tests.cli.conftest import asyncai as run_asyncai
from tests.fakes.openai_server import ScriptedOpenAI, call, text_reply, tool_reply
from tests.third_party import pypi_server

TIME_SERVER = "time=" + pypi_server("mcp-server-time", "--local-timezone", "UTC")
DEFINE_AND_SAVE = """
async def utc_hour() -> int:
    now = await get_current_time(timezone="UTC")
    return int(now["datetime"][11:13])


await save_skill(name="utc-clock", description="The hour in UTC.", functions=["utc_hour"])
"""


def test_a_skill_saved_in_one_process_loads_in_another(tmp_path: Path) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    saved = run_asyncai("run-code", "--mcp-stdio", TIME_SERVER, "-c", DEFINE_AND_SAVE, env=env, cwd=tmp_path)
    assert saved.status == 0, saved.stderr
    assert json.loads(saved.stdout.splitlines()[0]) == {
        "name": "utc-clock",
        "files": ["SKILL.md", "scripts/utc_clock.py"],
    }
    skill_md = (tmp_path / "data" / "asyncai" / "skills" / "utc-clock" / "SKILL.md").read_text()
    assert split_skill_md(skill_md)[0]["description"] == "The hour in UTC."
    used = run_asyncai(
        "run-code", "--mcp-stdio", TIME_SERVER, "-c",
        'await load_skill(name="utc-clock")\nh = await utc_hour()\n[0 <= h < 24, (await skills())[0]["origin"]]',
        env=env, cwd=tmp_path,
    )  # fmt: skip
    assert used.status == 0, used.stderr
    assert json.loads(used.stdout.splitlines()[0]) == [True, "saved"]


def test_mutations_deny_refuses_save_skill(tmp_path: Path) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    result = run_asyncai(
        "run-code", "--mcp-stdio", TIME_SERVER, "--mutations", "deny", "-c", DEFINE_AND_SAVE, env=env, cwd=tmp_path
    )  # fmt: skip
    assert "PermissionError: save_skill() was not run: mutating calls are denied" in result.stdout
    assert not (tmp_path / "data" / "asyncai" / "skills" / "utc-clock").exists()


@pytest.mark.anyio
async def test_save_skill_keeps_only_functions_the_repl_defined(tmp_path: Path) -> None:
    skills = asyncai.SkillSet([], saving=asyncai.DirectorySkills(tmp_path, "saved"))
    async with asyncai.CodeMode(asyncai.FunctionTools([]), skills=skills) as code_mode:
        assert "async def save_skill(" in code_mode.tools()[0].description
        await code_mode.call_tool("run_code", {"code": "def f():\n    return 1"})
        await code_mode.call_tool("run_code", {"code": "f = 3"})  # no longer the function
        out = await code_mode.call_tool(
            "run_code", {"code": 'await save_skill(name="x", description="d", functions=["f"])'}
        )
        assert (
            out.is_error
            and "no function 'f' was defined by a snippet here (defined: none yet)" in out.content
        )
        out = await code_mode.call_tool(
            "run_code",
            {
                "code": 'def g():\n    return 2\nawait save_skill(name="Bad", description="d", functions=["g"])'
            },
        )
        assert out.is_error and "lowercase letters" in out.content
        out = await code_mode.call_tool(
            "run_code", {"code": 'await save_skill(name="gee", description="Two.", functions=["g"])'}
        )
        assert not out.is_error, out.content
        await code_mode.refresh_skills()
        assert "- gee: Two." in code_mode.tools()[0].description
    assert (tmp_path / "gee" / "scripts" / "gee.py").read_text() == "def g():\n    return 2\n"


def test_the_source_of_each_function_a_snippet_defines() -> None:
    code = "import json\n\n@decorate\ndef f(x):\n    return x\n\nasync def g() -> None:\n    pass\ny = 1\n"
    assert function_sources(code, scan_snippet(code).tree) == (
        ("f", "@decorate\ndef f(x):\n    return x\n"),
        ("g", "async def g() -> None:\n    pass\n"),
    )


def test_a_name_bound_again_is_no_longer_the_function_it_was() -> None:
    known = KnownVariables()
    known.remember(("f", "g"), (("f", "def f(): pass\n"), ("g", "def g(): pass\n")))
    known.remember(("f",))
    assert known.functions == {"g": "def g(): pass\n"}
    known.forget()
    assert known.functions == {}


def test_a_saved_repl_keeps_its_functions_sources() -> None:
    saved = SavedScope(b"dump", functions=(("f", "def f():\n    return 1\n"),))
    assert unpack(pack(saved)).functions == saved.functions


def test_a_saved_skill_is_what_load_skill_reads() -> None:
    files = saved_skill_files(
        "order-total", "Total an order.\n Twice.", {"total": "async def total(items):\n    return 1"}
    )
    frontmatter, body = split_skill_md(files["SKILL.md"])
    assert frontmatter == {
        "name": "order-total",
        "description": "Total an order. Twice.",
        "metadata": {"saved-by": "asyncai"},
    }
    assert "- `async def total(items)`" in body
    assert files["scripts/order_total.py"] == "async def total(items):\n    return 1\n"
    with pytest.raises(SkillError, match="needs a description"):
        saved_skill_files("x", " ", {"f": "def f(): pass"})
    with pytest.raises(SkillError, match="at least one function"):
        saved_skill_files("x", "d", {})


@pytest.mark.anyio
async def test_with_per_caller_each_caller_saves_into_a_part_of_its_own(tmp_path: Path) -> None:
    """``SkillSet.for_caller``: a caller lists the shared skills and its own saved ones, never
    another's; the set itself lists only the shared ones and saves for nobody."""
    from asyncai.skills.skillset import SkillSet
    from asyncai.skills.sources import DirectorySkills
    from tests.skills.conftest import write_skill

    write_skill(tmp_path / "local", "house-style", "How we write.")
    saving = DirectorySkills(tmp_path / "saved", "saved")
    skills = SkillSet([DirectorySkills(tmp_path / "local")], saving, per_caller=True)
    a, b = skills.for_caller("token:aaaa"), skills.for_caller("token:bbbb")
    assert skills.for_caller("token:aaaa") is a and skills.for_caller(None) is skills
    await a.save("doubler", "Double a number.", {"twice": "def twice(n):\n    return 2 * n\n"})
    await b.refresh()
    await skills.refresh()
    assert (a.names(), b.names(), skills.names()) == (
        ["doubler", "house-style"],
        ["house-style"],
        ["house-style"],
    )
    assert (tmp_path / "saved" / ".callers" / "token-aaaa" / "doubler" / "SKILL.md").is_file()
    with pytest.raises(SkillError, match="belong to a caller"):
        await skills.save("tripler", "Triple.", {"thrice": "def thrice(n):\n    return 3 * n\n"})
    one_user = SkillSet([], saving)
    assert one_user.for_caller("token:aaaa") is one_user


def _tool_results(model: ScriptedOpenAI) -> list[str]:
    return [
        body["messages"][-1]["content"] for body in model.requests if body["messages"][-1]["role"] == "tool"
    ]


def test_what_a_model_writes_naturally_works_through_the_agent(tmp_path: Path) -> None:
    """Issue 48, item 2: asyncai's own functions take their first argument by position and
    save_skill takes the functions themselves; a tool's function still takes keywords only."""
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    save = 'def triple(x):\n    return 3 * x\n\nawait save_skill("tripler", description="Triples.", functions=[triple])'
    script = [
        tool_reply(call("run_code", {"code": save})),
        tool_reply(call("run_code", {"code": 'await get_current_time("UTC")'})),
        text_reply("Saved."),
    ]
    with ScriptedOpenAI(script) as model:
        saved = run_asyncai(
            "--mcp-stdio", TIME_SERVER, "--base-url", model.base_url, "--model", "m", "-p", "save it",
            env=env, cwd=tmp_path,
        )  # fmt: skip
        results = _tool_results(model)
    assert saved.status == 0, saved.stderr
    assert json.loads(results[0]) == {"name": "tripler", "files": ["SKILL.md", "scripts/tripler.py"]}
    assert "get_current_time() takes keyword arguments only; write get_current_time(timezone=" in results[1]
    use = (
        'text = await skill("tripler")\nloaded = await load_skill("tripler")\n'
        'found = await search_tools("current time")\n'
        '["Triples." in text, loaded, triple(2), found[0]["name"]]'
    )
    script = [tool_reply(call("run_code", {"code": use})), text_reply("Six.")]
    with ScriptedOpenAI(script) as model:
        used = run_asyncai(
            "--mcp-stdio", TIME_SERVER, "--base-url", model.base_url, "--model", "m", "-p", "use it",
            env=env, cwd=tmp_path,
        )  # fmt: skip
        results = _tool_results(model)
    assert used.status == 0, used.stderr
    assert json.loads(results[0]) == [True, ["def triple(x)"], 6, "get_current_time"]


@pytest.mark.anyio
async def test_a_lambda_is_refused_and_a_function_named_twice_is_saved_once(tmp_path: Path) -> None:
    skills = asyncai.SkillSet([], saving=asyncai.DirectorySkills(tmp_path, "saved"))
    async with asyncai.CodeMode(asyncai.FunctionTools([]), skills=skills) as code_mode:
        out = await code_mode.call_tool(
            "run_code", {"code": 'f = lambda: 1\nawait save_skill("x", description="d", functions=[f])'}
        )
        assert out.is_error and "a lambda cannot be saved" in out.content
        code = 'def g():\n    return 2\nawait save_skill("gee", description="Two.", functions=[g, "g"])'
        out = await code_mode.call_tool("run_code", {"code": code})
        assert not out.is_error, out.content
    assert (tmp_path / "gee" / "scripts" / "gee.py").read_text() == "def g():\n    return 2\n"
