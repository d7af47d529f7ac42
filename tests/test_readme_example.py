"""The README's embedding example, run exactly as written: a Python function and a real MCP server
(``mcp-server-time``) behind one ``run_code``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
HEADING = "### Embedding: a function and an MCP server behind one `run_code`"


def readme_example() -> str:
    text = README.read_text()
    section = text[text.index(HEADING) :]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None, "no python block under the embedding heading"
    return match.group(1)


def test_the_readme_embedding_example_runs(tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(readme_example())
    bin_dir = str(Path(sys.executable).parent)  # where mcp-server-time is installed
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "3\n"
