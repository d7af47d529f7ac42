"""Catalogs that scale (issue 11): a generated MCP server of 3,000 tools behind code mode. The
description stays within its budget, ``search_tools`` finds tools from plain language,
``describe_tool`` gives their stubs, and any tool can be called without being described."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from asyncai.code_mode import CodeMode, CodeModeLimits
from asyncai.code_mode.catalog.description import (
    CLIENT_CATALOG_BUDGET,
    DEFAULT_CATALOG_BUDGET,
    run_code_description,
)
from asyncai.code_mode.catalog.stubs import render_stub
from asyncai.skills.skillset import SkillSet
from asyncai.skills.sources import DirectorySkills
from asyncai.tools import McpServers, stdio_spec
from asyncai.tools.mcp.results import tool_definition
from tests.code_mode.catalog.queries import QUERIES
from tests.fakes.big_server import generate

pytestmark = pytest.mark.anyio

BIG_SERVER = f"{sys.executable} {Path(__file__).parents[2] / 'fakes' / 'big_server.py'}"
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def big() -> AsyncIterator[CodeMode]:
    async with (
        McpServers([stdio_spec(f"big-cloud={BIG_SERVER}")]) as mcp,
        CodeMode(mcp, CodeModeLimits()) as code_mode,
    ):
        yield code_mode


async def run(executor: CodeMode, code: str) -> str:
    output = await executor.call_tool("run_code", {"code": code, "restart": True})
    assert not output.is_error, output.content
    return output.content


async def test_the_description_of_3000_tools_fits_the_budget_and_says_how_to_find_the_rest(
    big: CodeMode,
) -> None:
    [run_code] = big.tools()
    description = run_code.description
    assert len(description) <= DEFAULT_CATALOG_BUDGET
    assert "The catalog has 3,000 functions" in description and "listing " in description
    assert "# server big-cloud: 3,000 functions (" in description
    for needle in ("await search_tools(query=", "await describe_tool(name=", "shape(x)"):
        assert needle in description
    assert "kv_namespace_list(account_id, page=...) - List every KV namespace" in description
    # Byte-stable for the same tool set (prompt caching).
    tools = [tool_definition(t, "big-cloud") for t in generate(3000)]
    assert run_code_description(tools) == description


async def test_plain_language_queries_find_the_intended_tool_in_the_top_five(
    big: CodeMode,
) -> None:
    code = f"queries = {json.dumps(list(QUERIES))}\n[[m.get('name') for m in await search_tools(query=q, limit=5)] for q in queries]"
    found = json.loads(await run(big, code))
    misses = {
        query: names
        for (query, intended), names in zip(QUERIES.items(), found, strict=True)
        if intended not in names
    }
    assert not misses
    [first, *_, last] = json.loads(await run(big, 'await search_tools(query="delete a kv namespace")'))
    assert set(first) == {"name", "summary", "signature"} and first["name"] == "kv_namespace_delete"
    assert first["signature"] == "kv_namespace_delete(*, account_id: str, kv_namespace_id: str) -> Any"
    assert set(last) == {"name", "summary", "signature", "more"} and last["more"].startswith("showing 10 of ")


async def test_the_natural_comprehension_over_search_results_reads_only_matches(big: CodeMode) -> None:
    """More than five of 3,000 tools match: every element is still a match with a name."""
    code = '[t["name"] for t in await search_tools(query="create a dns record", limit=5)]'
    names = json.loads(await run(big, code))
    assert len(names) == 5 and all(isinstance(name, str) and name for name in names)
    assert "dns_record_create" in names


async def test_describe_tool_gives_the_full_stub_and_any_tool_can_be_called(
    big: CodeMode,
) -> None:
    stub = await run(big, 'await describe_tool(name="queue_pull_messages_apac")')
    tool = next(t for t in big.inner.tools() if t.name == "queue_pull_messages_apac")
    assert stub == render_stub("queue_pull_messages_apac", tool)
    output = await big.call_tool(
        "run_code", {"code": 'await hyperdrive_config_delete_china(account_id="a", hyperdrive_config_id="h")'}
    )
    assert json.loads(output.content) == {
        "tool": "hyperdrive_config_delete_china",
        "arguments": {"account_id": "a", "hyperdrive_config_id": "h"},
    }
    assert output.audit is not None and [c["tool"] for c in output.audit["nested_calls"]] == [
        "hyperdrive_config_delete_china"
    ]  # search and describe are not nested calls; the tool call is
    # The type check knows every tool's signature, described or not; the host validates them too.
    wrong = await big.call_tool("run_code", {"code": "await hyperdrive_config_delete_china(account_id=1)"})
    assert wrong.is_error and "missing required keyword argument 'hyperdrive_config_id'" in wrong.content
    assert "`account_id` must be str, not 1" in wrong.content
    named = 'await hyperdrive_config_delete_china(**{"account_id": "a"})'  # beyond what the checker sees
    unchecked = await big.call_tool("run_code", {"code": named})
    assert (
        unchecked.is_error and "missing required keyword argument 'hyperdrive_config_id'" in unchecked.content
    )


async def test_a_bad_name_gets_the_closest_names(big: CodeMode) -> None:
    output = await big.call_tool("run_code", {"code": 'await describe_tool(name="kv_namespace_remove")'})
    assert output.is_error
    assert (
        "NameError: no catalog function 'kv_namespace_remove'; the closest: kv_namespace_" in output.content
    )


async def test_finder_names_are_reserved_and_shape_sketches_a_value(
    big: CodeMode,
) -> None:
    refused = await big.call_tool("run_code", {"code": "search_tools = 1"})
    assert refused.is_error and "cannot assign to it" in refused.content
    assert "`result = await search_tools(...)`" in refused.content
    sketch = await run(big, 'shape({"items": [{"name": "a", "n": 1}], "total": 3})')
    assert sketch == "{items: list[1] of {name: str, n: int}, total: int}"


def test_the_kcp_description_is_exactly_as_before_budgets() -> None:
    """Under the budget nothing changes: the bundled kcp server's description, byte for byte, as it
    was before issue 11 (sha256 taken then). Changing the rules on purpose means a new hash here."""
    command = f"{BIN / 'socialweb-computer-kcp-readwrite'} --kubeconfig /nonexistent"
    printed = subprocess.run(
        [str(BIN / "asyncai"), "run-code", "--catalog", "--mcp-stdio", command],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    # The CLI offers save_skill (issue 37): its section follows the catalog, which is unchanged.
    catalog, skills = printed.split("\n\n# Skills:", 1)
    assert len(catalog) + 1 == 11_131
    assert hashlib.sha256(f"{catalog}\n".encode()).hexdigest() == (
        "69e00b3c6b23408719e0a37beb7756e82b4dbae47cf53cf00ac0e25e360ada9e"
    )
    assert "async def save_skill(" in skills and "load_skill" not in skills, "no skill to load yet"


@pytest.mark.parametrize("budget", [DEFAULT_CATALOG_BUDGET, CLIENT_CATALOG_BUDGET])
async def test_every_part_of_the_description_counts_against_the_budget(budget: int, tmp_path: Path) -> None:
    """Issue 48: the 3,000-tool server, a local skill and saving on, as the CLI and serve-mcp offer
    them: the rules, the index, the skills section and the skill functions, within the budget."""
    local = tmp_path / "skills" / "tally-words"
    local.mkdir(parents=True)
    (local / "SKILL.md").write_text(
        "---\nname: tally-words\ndescription: Count the words of files.\n---\nRead.\n"
    )
    skills = SkillSet(
        [DirectorySkills(tmp_path / "skills")], saving=DirectorySkills(tmp_path / "saved", "saved")
    )
    limits = CodeModeLimits(catalog_budget=budget)
    async with (
        McpServers([stdio_spec(f"big-cloud={BIG_SERVER}")]) as mcp,
        CodeMode(mcp, limits, skills=skills) as code_mode,
    ):
        [run_code] = code_mode.tools()
    description = run_code.description
    assert len(description) <= budget
    for needle in ("tally-words", "save_skill", "load_skill", "search_tools"):
        assert needle in description, needle
