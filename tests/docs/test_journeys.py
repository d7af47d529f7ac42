"""The three journeys of *Get started* run as tests (issue 49), command by command as their pages
give them: the blocks marked ``<!-- journey -->``, run in order, with a scripted model on loopback
standing in for the hosted one (an OpenAI-compatible server for the agent; an Anthropic Messages
server for Claude Code, whose real CLI is pinned in the tests) and the real MCP servers. Only what
names a place on the reader's machine is replaced: the model server's address, the example web
site's, and ``~`` (a home of the test's own). The library journey's scripts run as written in
``test_examples.py``."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from evals.world import serving_site

from tests.docs.test_examples import DOCS, Block, blocks, commands
from tests.fakes.anthropic_server import ScriptedAnthropic, say, use
from tests.fakes.openai_server import ScriptedOpenAI, call, text_reply, tool_reply
from tests.kcp.demo import QUESTIONS
from tests.kcp.fake_kcp import build_fixture_cluster, serve, write_kubeconfig
from tests.third_party.claude_code import claude_binary, claude_env, run_code_results, tool_result_text

BIN = Path(sys.executable).parent
JOURNEY = "<!-- journey -->"


def journey(page: str) -> list[list[str]]:
    """The commands of ``page``'s journey blocks, in order."""
    marked: list[Block] = [block for block in blocks(DOCS / "get-started" / page) if block.mark == JOURNEY]
    assert marked, f"{page} marks its journey"
    return [argv for block in marked for argv in commands(block)]


def run(
    argv: list[str], places: dict[str, str], env: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    """A docs command as a reader runs it, each place in ``places`` replaced by the test's own."""
    for before, after in places.items():
        argv = [word.replace(before, after) for word in argv]
    return subprocess.run(
        argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=180, stdin=subprocess.DEVNULL
    )


@pytest.fixture
def site() -> Iterator[str]:
    with serving_site() as url:
        yield url


def test_the_agent_journey(site: str, tmp_path: Path) -> None:
    (tmp_path / ".claude.json").write_text(
        json.dumps({"mcpServers": {"web": {"command": "asyncai-mcp-simple"}}})
    )
    program = f'r = await http_get(url="{site}/page")\njson.loads(r["body"])["title"]'
    script = [tool_reply(call("run_code", {"code": program})), text_reply("The title is Loopback Gazette.")]
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(tmp_path)}
    steps = journey("agent.md")
    with ScriptedOpenAI(script) as model:
        places = {
            "http://127.0.0.1:11434/v1": model.base_url,
            "http://127.0.0.1:8000": site,
            "~": str(tmp_path),
        }
        done = [run(argv, places, env, tmp_path) for argv in steps]
        requests = model.requests
    assert [step.returncode for step in done] == [0] * len(steps), [step.stderr[-500:] for step in done]
    listed = [step.stdout for step in done if step.stdout and "http_get" in step.stdout]
    assert len(listed) == 2, "both asyncai tools commands list the server's function"
    assert done[-1].stdout == "The title is Loopback Gazette.\n"
    assert requests[1]["messages"][-1]["content"] == "Loopback Gazette"  # what run_code gave the model


def test_the_serve_mcp_journey(tmp_path: Path) -> None:
    [kinds] = [question.program for question in QUESTIONS if "kinds" in question.text]
    steps = journey("serve-mcp.md")
    tool = "mcp__kcp-code__run_code"
    with (
        serve(0, build_fixture_cluster()) as (kcp, _),
        ScriptedAnthropic([use(tool, {"code": kinds}), say("Agent and Channel.")]) as model,
    ):
        (tmp_path / ".kcp").mkdir()
        write_kubeconfig(tmp_path / ".kcp" / "admin.kubeconfig", kcp)
        env = claude_env(tmp_path, model, f"{BIN}:{claude_binary().parent}:/usr/bin:/bin")
        done = [run(argv, {}, env, tmp_path) for argv in steps]
        requests = model.requests
    assert [step.returncode for step in done] == [0] * len(steps), [step.stderr[-500:] for step in done]
    assert done[-1].stdout.strip() == "Agent and Channel."
    [result] = run_code_results(requests[-1], tool)
    assert json.loads(tool_result_text(result))["value"] == ["Agent", "Channel"]  # the fixture's kinds
