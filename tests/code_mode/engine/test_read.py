"""The read stage alone: parsing a model's code."""

from __future__ import annotations

import subprocess
import sys

ODD = "x = 1if True else 2"  # valid Python that makes the parser warn


def test_parsing_a_models_odd_code_puts_no_warning_on_the_users_terminal() -> None:
    # In a fresh interpreter, as the CLI runs: pytest's own warning filters do not apply there.
    program = f"""
import ast
from asyncai.backend import wire
from asyncai.code_mode.engine.read import parse_snippet, scan_snippet
assert parse_snippet({ODD!r}) is not None
scan_snippet({ODD!r}, [])
wire.program_key({ODD!r})
wire.python_code("```python\\n" + {ODD!r} + "\\n```")
print("parsed", flush=True)
ast.parse({ODD!r})  # anyone else's parse still warns
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "parsed\n"
    assert done.stderr.count("SyntaxWarning") == 1 and "<unknown>:1: SyntaxWarning" in done.stderr
