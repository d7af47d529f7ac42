"""Every shell example in the docs runs (issue 49), unless it says why not: a block marked
``<!-- not run: REASON -->`` (it needs a hosted model, a browser sign-in, another machine; the
reason names the test that covers it instead) has its commands checked by the real argument parser
only (``test_examples.py``), and a ``<!-- journey -->`` block runs in ``test_journeys.py``. Every
other block runs here, command by command, on a reader's machine of the test's own: a home with
the config files the examples name, the example web site and an HTTP MCP server on loopback in
place of the addresses the examples give."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from evals.world import serving_site

from tests.docs.test_examples import ALL, Block, commands
from tests.docs.test_journeys import run
from tests.serve.helpers import serve_http
from tests.third_party.claude_code import claude_binary

BIN = Path(sys.executable).parent
NOT_RUN = "<!-- not run: "
SHELL = [block for block in ALL if block.language == "sh"]
RUN = [block for block in SHELL if not block.mark]


def test_every_shell_example_runs_or_says_why_not() -> None:
    marks = {block.mark for block in SHELL if block.mark}
    unknown = [mark for mark in marks if mark != "<!-- journey -->" and not mark.startswith(NOT_RUN)]
    assert not unknown, unknown
    assert all(len(mark.removeprefix(NOT_RUN)) > 20 for mark in marks if mark.startswith(NOT_RUN))
    assert RUN, "some shell examples run here"


@dataclass(frozen=True)
class Machine:
    home: Path
    work: Path
    places: dict[str, str]

    def env(self) -> dict[str, str]:
        return {
            "PATH": f"{BIN}:{claude_binary().parent}:/usr/bin:/bin",
            "HOME": str(self.home),
            "CLAUDE_CONFIG_DIR": str(self.home / ".claude"),
            "XDG_STATE_HOME": str(self.home / "state"),
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Machine]:
    home, work = tmp_path_factory.mktemp("home"), tmp_path_factory.mktemp("work")
    servers = json.dumps({"mcpServers": {"web": {"command": "asyncai-mcp-simple"}}})
    for config in (home / ".claude.json", home / "my-servers.json", work / "servers.json"):
        config.write_text(servers)
    with serving_site() as site, serve_http("--no-auth", "--mcp-stdio", "asyncai-mcp-simple") as mcp:
        (work / "snippet.py").write_text(f'r = await http_get(url="{site}/page")\nr["status"]\n')
        # Longest first: the MCP endpoint's address begins with the site's.
        places = {"http://127.0.0.1:8000/mcp": mcp.url, "http://127.0.0.1:8000": site, "~": str(home)}
        yield Machine(home, work, places)


@pytest.mark.parametrize("block", RUN, ids=str)
def test_the_shell_example_runs(block: Block, machine: Machine) -> None:
    for argv in commands(block):
        done = run(argv, machine.places, machine.env(), machine.work)
        assert done.returncode == 0, (argv, done.stdout[-1000:], done.stderr[-1000:])
