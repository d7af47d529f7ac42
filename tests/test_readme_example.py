"""The README's library examples, run exactly as written: a Python function and a real MCP server
(``mcp-server-time``) behind one ``run_code``, and the Pydantic AI adapter driven by Pydantic AI's
own scripted model."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
HEADING = "### Embedding: a function and an MCP server behind one `run_code`"
PYDANTIC_AI_HEADING = "### Pydantic AI: `run_code` as a toolset"
MEMORY_HEADING = "### Testing your code without worker processes"
SKILLS_HEADING = "### Skills: instructions and code the agent loads"


def readme_example(heading: str = HEADING) -> str:
    text = README.read_text()
    start = text.index(heading) + len(heading)
    end = re.search(r"^#{2,3} ", text[start:], re.MULTILINE)  # the block must be in this very section
    section = text[start : start + end.start()] if end is not None else text[start:]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None, f"no python block under {heading!r}"
    return match.group(1)


def run_example(heading: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "example.py"
    script.write_text(readme_example(heading))
    bin_dir = str(Path(sys.executable).parent)  # where mcp-server-time is installed
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=60)


def test_the_readme_embedding_example_runs(tmp_path: Path) -> None:
    done = run_example(HEADING, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "3\n"


def test_the_readme_pydantic_ai_example_runs(tmp_path: Path) -> None:
    done = run_example(PYDANTIC_AI_HEADING, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Paris and Tokyo\n"  # the second run read the variables the first one bound


def test_the_readme_memory_sandbox_example_runs(tmp_path: Path) -> None:
    done = run_example(MEMORY_HEADING, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "42\n"


def test_the_readme_skills_example_runs(tmp_path: Path) -> None:
    done = run_example(SKILLS_HEADING, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "11.0\n"  # the skill's function ran in the sandbox and called the tool
