"""``serve-mcp`` behind the real Claude Code CLI (issue 46): what a client's model sees.

Claude Code cuts a tool's description, and a server's instructions, at about 2,048 characters, and
hands its model a result's structured content rather than its text. So ``run_code``'s description
must hold the catalog within that, and the structured content must be the answer (the value and
the variables note), with the audit in ``_meta``, which no model is handed. The same snippets
through the SDK's client, in both protocol eras, give the same structured content.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import stdio_client

from asyncai.code_mode.catalog.description import CLIENT_CATALOG_BUDGET, client_instructions
from tests.fakes.anthropic_server import ScriptedAnthropic, say, use
from tests.fakes.slow_site import SlowSite, slow_site
from tests.serve.helpers import ASYNCAI, ENV, SIMPLE, Ran, ran, serve_http, stdio_params
from tests.serve.test_handles import modern
from tests.third_party.claude_code import (
    CUT_MARK,
    RUN_CODE_TOOL,
    run_claude,
    run_code_results,
    server_instructions,
    tool_description,
    tool_result_text,
)

pytestmark = pytest.mark.anyio
BIG_SERVER = f"{sys.executable} {Path(__file__).parents[1] / 'fakes' / 'big_server.py'} --tools 400"


def snippets(site: str) -> dict[str, str]:
    return {
        "one call": f'r = await http_get(url="{site}/one")\njson.loads(r["body"])',
        "20 gathered calls": (
            f'pages = await asyncio.gather(*[http_get(url=f"{site}/p{{i}}") for i in range(20)])\n'
            'sum(len(p["body"]) for p in pages)'
        ),
        "an error": 'await http_get(url="http://127.0.0.1:9/")',
        "a value over the limit": '"x" * 30_000',
        "an assignment over the limit": 'kept = "y" * 30_000',
    }


@pytest.fixture(scope="module")
def site() -> Iterator[SlowSite]:
    with slow_site() as served:
        yield served


@pytest.fixture(scope="module")
def through_claude(site: SlowSite, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One conversation: the scripted model runs each snippet through Claude Code, then answers."""
    codes = snippets(site.url)
    script = [use(RUN_CODE_TOOL, {"code": code}) for code in codes.values()] + [say("done")]
    with ScriptedAnthropic(script) as model:
        done = run_claude(
            model, [ASYNCAI, "serve-mcp", "--mcp-stdio", SIMPLE], tmp_path_factory.mktemp("home")
        )
    assert done.returncode == 0 and done.stdout.strip() == "done", (done.stdout, done.stderr[-2000:])
    results = run_code_results(model.requests[-1])
    return {"requests": model.requests, "results": dict(zip(codes, results, strict=True))}


async def sdk_answers(site: SlowSite) -> tuple[list[Ran], list[Ran], str]:
    """The snippets through the SDK's client: over stdio (the 2025 era's session) and over HTTP (the
    2026-07-28 era, its REPL named by a handle); and the description serve-mcp lists."""
    codes = list(snippets(site.url).values())
    async with Client(stdio_client(stdio_params("--mcp-stdio", SIMPLE)), mode="legacy") as session:
        [tool] = (await session.list_tools()).tools
        legacy = [ran(await session.call_tool("run_code", {"code": code})) for code in codes]
    stateless = []
    with serve_http("--mcp-stdio", SIMPLE, env=ENV) as served:
        async with modern(served.url) as session:
            handle = None
            for code in codes:
                answer = ran(
                    await session.call_tool("run_code", {"code": code} | ({"repl": handle} if handle else {}))
                )
                handle = answer.content["repl"]
                stateless.append(answer)
    return legacy, stateless, tool.description or ""


async def test_the_model_sees_the_whole_catalog_and_the_rules(
    through_claude: dict[str, Any], site: SlowSite
) -> None:
    *_, listed = await sdk_answers(site)
    for request in through_claude["requests"][1:]:  # the first may come before the server connected
        description = tool_description(request)
        assert description == listed, "Claude Code showed the whole description, uncut"
    assert CUT_MARK not in description and len(description) <= CLIENT_CATALOG_BUDGET
    assert "async def http_get(*, url: str" in description and 'Returns: {"status": int' in description
    assert "keyword arguments and await them" in description and "describe_tool(name=...)" in description
    instructions = server_instructions(through_claude["requests"][-1])
    assert instructions is not None and client_instructions() in instructions and CUT_MARK not in instructions


async def test_each_result_is_the_answer_and_its_note_and_no_audit(
    through_claude: dict[str, Any], site: SlowSite
) -> None:
    legacy, stateless, _ = await sdk_answers(site)
    for (name, block), sdk, handled in zip(through_claude["results"].items(), legacy, stateless, strict=True):
        text = tool_result_text(block)
        assert "nested_call" not in text and "asyncai/audit" not in text, name
        assert sdk.audit["nested_call_counts"]["total"] == {
            "one call": 1,
            "20 gathered calls": 20,
            "an error": 1,
        }.get(name, 0)
        assert {k: v for k, v in handled.content.items() if k != "repl"} == sdk.content, name
        if sdk.is_error:  # Claude Code hands its model an error's text
            assert block.get("is_error") is True and text.startswith(sdk.content["error"]), name
            continue
        assert json.loads(text) == sdk.content, name
        answer = json.dumps(sdk.content["value"], separators=(",", ":"))
        assert len(text) <= len(answer) + len(sdk.content.get("variables", "")) + 100, (name, len(text))
    results = through_claude["results"]
    assert json.loads(tool_result_text(results["one call"]))["value"] == {"path": "/one"}
    assert json.loads(tool_result_text(results["20 gathered calls"]))["value"] == sum(
        len(json.dumps({"path": f"/p{i}"})) for i in range(20)
    )
    assert "over the 20,000-char limit" in tool_result_text(results["a value over the limit"])
    kept = json.loads(tool_result_text(results["an assignment over the limit"]))
    assert kept["value"].startswith("(the value assigned to kept is 30,000 chars")


async def test_a_catalog_of_hundreds_of_tools_is_found_through_search_tools(tmp_path: Path) -> None:
    code = 'found = await search_tools(query="delete a kv namespace", limit=3)\n[f["name"] for f in found]'
    with ScriptedAnthropic([use(RUN_CODE_TOOL, {"code": code}), say("done")]) as model:
        done = run_claude(model, [ASYNCAI, "serve-mcp", "--mcp-stdio", BIG_SERVER], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    description = tool_description(model.requests[-1])
    assert CUT_MARK not in description and len(description) <= CLIENT_CATALOG_BUDGET
    head = "\n".join(description.split("\n")[:4])
    assert "400 functions" in head and 'await search_tools(query="what it does")' in head
    [result] = run_code_results(model.requests[-1])
    assert "kv_namespace_delete" in json.loads(tool_result_text(result))["value"]
