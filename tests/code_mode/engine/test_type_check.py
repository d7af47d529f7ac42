"""Which type-check diagnostics stop a snippet: only certain mistakes (pure, no sandbox)."""

from __future__ import annotations

import pytest

from asyncai.code_mode.catalog.entries import CatalogEntry
from asyncai.code_mode.catalog.stubs import parameter_names
from asyncai.code_mode.engine.type_check import literal_accepted, rejection
from asyncai.tools.types import ToolDefinition

TOOL = ToolDefinition(
    name="get",
    description="get",
    input_schema={
        "type": "object",
        "properties": {"mode": {"enum": ["strict", "lenient"]}, "n": {"type": "integer"}},
        "required": ["mode"],
    },
)
FUNCTIONS = {"get": CatalogEntry(TOOL, parameter_names(TOOL), frozenset({"mode"}))}


@pytest.mark.parametrize(
    ("expected", "found", "accepted"),
    [
        ('Literal["strict", "lenient"]', 'Literal["fast"]', False),
        ('Literal["strict", "lenient"]', 'Literal["strict"]', True),
        ("int | None", 'Literal["3"]', False),
        ("dict[str, Any] | None", 'Literal["x"]', False),
        ("list[str]", 'Literal["x"]', False),
        ("str", "Literal[1]", False),
        ("Literal[1, 2]", "Literal[3]", False),
        ("Literal[1, 2]", "Literal[2]", True),
        ("float", "Literal[1]", True),  # an int where a float goes
        ("bool | None", "Literal[1]", True),  # servers take 1 for true
        ("str | None", 'Literal["x"]', True),
        ("Any", 'Literal["x"]', True),
        ("int", "float", True),  # not a literal: unsure
    ],
)
def test_which_literals_a_parameter_takes(expected: str, found: str, accepted: bool) -> None:
    assert literal_accepted(expected, found) is accepted


def test_a_wrong_literal_is_stopped_and_a_variable_is_not() -> None:
    diagnostic = (
        "run_code.py:1:11: error[invalid-argument-type] Argument to function `get` is incorrect: "
        'Expected `Literal["strict", "lenient"]`, found `Literal["fast"]`'
    )
    text = rejection(diagnostic, "await get(mode='fast')", FUNCTIONS)
    assert text is not None and 'get(): `mode` must be Literal["strict", "lenient"], not "fast"' in text
    assert rejection(diagnostic, "await get(mode=m)", FUNCTIONS) is None  # a variable may be stale
