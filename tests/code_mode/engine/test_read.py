"""The read stage alone: parsing a model's code."""

from __future__ import annotations

import subprocess
import sys

from asyncai.code_mode.engine.read import placed_name_error

ODD = "x = 1if True else 2"  # valid Python that makes the parser warn


def test_parsing_a_models_odd_code_puts_no_warning_on_the_users_terminal() -> None:
    # In a fresh interpreter, as the CLI runs: pytest's own warning filters do not apply there.
    program = f"""
import ast
from asyncai.backend import programs
from asyncai.code_mode.engine.read import parse_snippet, scan_snippet
assert parse_snippet({ODD!r}) is not None
scan_snippet({ODD!r}, [])
programs.program_key({ODD!r})
programs.python_code("```python\\n" + {ODD!r} + "\\n```")
print("parsed", flush=True)
ast.parse({ODD!r})  # anyone else's parse still warns
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "parsed\n"
    assert done.stderr.count("SyntaxWarning") == 1 and "<unknown>:1: SyntaxWarning" in done.stderr


STALE = 'Traceback (most recent call last):\n  File "<python-input-3>", line 2, in <module>\n    print(1)\n    ~~~~~~~~\n'
NOWHERE = 'Traceback (most recent call last):\n  File "\x00", line 1, in <module>\n    \n    ~\n'
UNBOUND = "NameError: name 'text' is not defined"
PLACED = "  File \"{file}\", line 3, in <module>\n    text += '!'\n    ~~~~\n" + UNBOUND


def test_a_name_error_of_an_augmented_assignment_is_placed_on_its_line() -> None:
    """Monty puts it at the instruction before, or in a file named "\\x00" when none came before
    in the feed (a streamed snippet's rest, fed after blank lines)."""
    code = "y = 1\nprint(1)\ntext += '!'"
    head = "Traceback (most recent call last):\n"
    assert placed_name_error(STALE + UNBOUND, code) == head + PLACED.format(file="<python-input-3>")
    assert placed_name_error(NOWHERE + UNBOUND, "\n\ntext += '!'") == head + PLACED.format(
        file="<python-input>"
    )


def test_a_name_error_placed_right_or_ambiguous_stays_as_monty_gave_it() -> None:
    right = (
        'Traceback (most recent call last):\n  File "<python-input-3>", line 2, in <module>\n    print(text)\n          ~~~~\n'
        + UNBOUND
    )
    assert placed_name_error(right, "y = 1\nprint(text)") == right
    twice = "text += 'a'\nprint(1)\ntext += '!'"
    assert placed_name_error(STALE + UNBOUND, twice) == STALE + UNBOUND, "which one ran is unknown"
    other = STALE + "ZeroDivisionError: division by zero"
    assert placed_name_error(other, "y = 1\nprint(1)\n1 / 0") == other


def test_in_a_function_the_callers_frame_names_the_feed() -> None:
    code = "def f():\n    global g\n    g += 1\nf()"
    monty = (
        'Traceback (most recent call last):\n  File "<python-input-5>", line 4, in <module>\n    f()\n    ~~~\n'
        "  File \"\x00\", line 1, in f\n    \n    ~\nNameError: name 'g' is not defined"
    )
    assert placed_name_error(monty, code).endswith(
        "  File \"<python-input-5>\", line 3, in f\n    g += 1\n    ~\nNameError: name 'g' is not defined"
    )
