"""The documentation's examples cannot rot (issue 49): every fenced block names its language; every
Python example compiles (a snippet may ``await`` at top level, as ``run_code`` runs it) and the
library scripts run exactly as written, against a real MCP server (``mcp-server-time``) and Pydantic
AI's own scripted model; every JSON example parses; every command (``asyncai``, ``make``, ``pip``,
``pipx``, ``uv``, ``claude mcp add``) is one the real argument parser, the Makefile or the package
takes; the README's program is the one ``make demo`` runs; and the site's command-line reference,
written from the parser, names every option. Blocks marked ``text`` are output or prose."""

from __future__ import annotations

import ast
import itertools
import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from asyncai.cli.main import build_parser
from asyncai.cli.parsing import check_argv, subcommands
from asyncai.cli.reference import ENVIRONMENT, cli_reference
from asyncai.cli.settings import ENV_NAMES
from tests.kcp.demo import QUESTIONS

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted([ROOT / "README.md", *DOCS.rglob("*.md")])
LANGUAGES = {"python", "sh", "json", "text", "toml"}
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    language: str
    code: str
    mark: str = ""
    """The line before the fence when it is an HTML comment (``<!-- journey -->``)."""

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page``, each without the indentation its fence has."""
    found: list[Block] = []
    opened: tuple[int, str, str] | None = None
    indent, body, previous = "", list[str](), ""
    for number, line in enumerate(page.read_text().splitlines(), 1):
        fence = re.match(r"^(\s*)```(\S*)\s*$", line)
        if opened is None and fence:
            mark = previous.strip() if previous.strip().startswith("<!--") else ""
            opened, indent, body = (number, fence[2], mark), fence[1], []
        elif opened is not None and fence and fence[1] == indent and not fence[2]:
            found.append(Block(page, opened[0], opened[1], "\n".join(body) + "\n", opened[2]))
            opened = None
        elif opened is not None:
            body.append(line.removeprefix(indent))
        previous = line
    assert opened is None, f"{page}:{opened}: a fence is never closed"
    return found


ALL = [block for page in PAGES for block in blocks(page)]


def of(language: str) -> list[Block]:
    return [block for block in ALL if block.language == language]


def test_every_fence_names_its_language() -> None:
    assert ALL, "the docs have examples"
    unnamed = [f"{block} ```{block.language}" for block in ALL if block.language not in LANGUAGES]
    assert not unnamed, f"name each block's language ({', '.join(sorted(LANGUAGES))}): {unnamed}"


@pytest.mark.parametrize("block", of("python"), ids=str)
def test_every_python_example_compiles(block: Block) -> None:
    compile(block.code, str(block), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


@pytest.mark.parametrize("block", of("json"), ids=str)
def test_every_json_example_parses(block: Block) -> None:
    json.loads(block.code)


# ---------------------------------------------------------------------------------------------
# Commands


def commands(block: Block) -> list[list[str]]:
    """The commands of a shell block as argv lists: the ``$ `` lines when there are any (the rest
    is their output), else every line; comments dropped, continued and quoted lines joined."""
    lines = block.code.splitlines()
    prompted = any(line.startswith("$ ") for line in lines)
    found, pending = [], ""
    for line in lines:
        if prompted and not pending:
            if not line.startswith("$ "):
                continue  # output
            line = line.removeprefix("$ ")
        pending = f"{pending}\n{line}" if pending else line
        if pending.endswith("\\"):
            pending = pending[:-1]
            continue
        try:
            words = shlex.split(pending, comments=True)
        except ValueError:  # a quote opened on this line closes on a later one
            continue
        pending = ""
        for part in _pipeline(words):
            found.append(part)
    return [argv for argv in found if argv]


def _pipeline(words: list[str]) -> list[list[str]]:
    parts: list[list[str]] = [[]]
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word == "|":
            parts.append([])
        elif word in ("<", ">"):
            skip = True
        else:
            parts[-1].append(word)
    # Environment assignments before a command are not its words.
    return [list(itertools.dropwhile(ASSIGNMENT.match, part)) for part in parts]


ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")


MAKE_TARGETS = set(re.findall(r"^([\w.-]+):", (ROOT / "Makefile").read_text(), re.MULTILINE))
EXTRAS = set(PYPROJECT["project"]["optional-dependencies"])


def _asyncai_problem(argv: list[str]) -> str | None:
    if argv[-1] == "...":
        return None  # elided on purpose
    parser = build_parser()
    try:
        check_argv(parser, argv)
        parser.parse_args(argv)
    except SystemExit as exc:
        return None if exc.code == 0 else f"asyncai refuses {argv}"
    except Exception as exc:  # a UsageError: one line, as the CLI prints it
        return f"asyncai refuses {argv}: {exc}"
    return None


def command_problem(argv: list[str]) -> str | None:
    """Why the docs' command ``argv`` is not one asyncai, its Makefile or its package takes."""
    program, rest = argv[0], argv[1:]
    if program == "asyncai":
        return _asyncai_problem(rest)
    if program == "make":
        targets = [word for word in rest if "=" not in word]
        unknown = [target for target in targets if target not in MAKE_TARGETS]
        return f"no make target {unknown}" if unknown else None
    if program == "claude" and "--" in argv:
        return command_problem(argv[argv.index("--") + 1 :])
    if program in ("pip", "pipx", "uv"):
        for word in rest:
            if re.fullmatch(r"asyncai(\[.*\])?", word):
                return "asyncai is not on the package index (the name there is another project's)"
            extras = re.fullmatch(r"\.\[([\w,-]+)\]", word)
            if extras and not set(extras[1].split(",")) <= EXTRAS:
                return f"no extra {extras[1]!r} in pyproject.toml"
    return None


SHELL = of("sh")


@pytest.mark.parametrize("block", SHELL, ids=str)
def test_every_command_in_the_docs_is_one_that_is_taken(block: Block) -> None:
    problems = [problem for argv in commands(block) if (problem := command_problem(argv))]
    assert not problems, problems


def test_a_command_the_parser_refuses_is_caught() -> None:
    wrong = "asyncai --no-such-flag\nmake no-such-target\npipx install asyncai\npip install '.[nope]'\n"
    block = Block(ROOT / "README.md", 1, "sh", wrong)
    assert [command_problem(argv) is not None for argv in commands(block)] == [True] * 4
    assert command_problem(["pipx", "install", ".[otel]"]) is None
    assigned = Block(ROOT / "README.md", 1, "sh", "A=1 B_2=x asyncai --version | head -1\n")
    assert commands(assigned) == [["asyncai", "--version"], ["head", "-1"]]
    two = Block(ROOT / "README.md", 1, "sh", "$ asyncai run-code -c 'a\nb' \\\n  --quiet\noutput\n")
    assert commands(two) == [["asyncai", "run-code", "-c", "a\nb", "--quiet"]]


def test_the_readmes_program_is_the_one_make_demo_runs() -> None:
    [configmaps] = [question.program for question in QUESTIONS if "configmaps" in question.text]
    for page in (ROOT / "README.md", DOCS / "index.md"):
        assert any(block.code.strip() == configmaps.strip() for block in blocks(page)), page


def test_the_cli_reference_names_every_command_and_option() -> None:
    parser = build_parser()
    reference = cli_reference(parser)
    parsers = {"asyncai": parser, **{f"asyncai {n}": p for n, p in subcommands(parser).items()}}
    for name, each in parsers.items():
        assert f"`{name}`" in reference
        for action in each._actions:
            for option in action.option_strings:
                assert f"`{option}`" in reference, option


# ---------------------------------------------------------------------------------------------
# The library scripts, run as written

LIBRARY = DOCS / "get-started" / "library.md"
SCRIPTS = {
    (LIBRARY, "## Embedding: a function and an MCP server behind one `run_code`"): "3\n",
    (LIBRARY, "## Pydantic AI: `run_code` as a toolset"): "Paris and Tokyo\n",
    (DOCS / "guides" / "testing-your-code.md", "## Testing your code without worker processes"): "42\n",
    (DOCS / "guides" / "skills.md", "## Skills: instructions and code the agent loads"): "11.0\n",
}


def script_under(page: Path, heading: str) -> str:
    text = page.read_text()
    start = text.index(heading) + len(heading)
    end = re.search(r"^#{2,3} ", text[start:], re.MULTILINE)  # the block must be in this very section
    section = text[start : start + end.start()] if end is not None else text[start:]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None, f"no python block under {heading!r}"
    return match.group(1)


@pytest.mark.parametrize(
    ("where", "printed"), SCRIPTS.items(), ids=lambda v: v[1] if isinstance(v, tuple) else ""
)
def test_the_library_scripts_run_as_written(where: tuple[Path, str], printed: str, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(script_under(*where))
    bin_dir = str(Path(sys.executable).parent)  # where mcp-server-time is installed
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == printed


def test_the_readmes_links_lead_somewhere() -> None:
    """The README is read on its own (a repository's front page): its links are to files here."""
    targets = re.findall(r"\]\(([^)\s#]+)", (ROOT / "README.md").read_text())
    missing = [target for target in targets if "://" not in target and not (ROOT / target).exists()]
    assert targets and not missing, missing


ENVIRONMENT_READ = re.compile(
    r'environ(?:\.get)?[\[(]"([A-Z][A-Z0-9_]+)"|_ENV = "([A-Z][A-Z0-9_]+)"|"((?:OTEL|ASYNCAI|OPENAI)_[A-Z0-9_]+)"'
)


def test_the_reference_names_every_environment_variable_asyncai_reads() -> None:
    read = {
        name
        for path in (ROOT / "src" / "asyncai").rglob("*.py")
        for match in ENVIRONMENT_READ.finditer(path.read_text())
        for name in match.groups()
        if name
    }
    read |= set(ENV_NAMES.values())
    assert {"OPENAI_API_KEY", "XDG_STATE_HOME", "ASYNCAI_MCP_TOKEN"} <= read  # the scan finds them
    assert read - {"HOME", "PATH"} - set(ENVIRONMENT) == set()
    reference = cli_reference(build_parser())
    assert all(f"`{name}`" in reference for name in ENVIRONMENT)
