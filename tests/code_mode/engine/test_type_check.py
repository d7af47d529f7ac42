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


@pytest.mark.parametrize(
    ("code", "can_catch"),
    [
        ("r = await wait(seconds=1, tag='x')", False),
        ("r = await wait(seconds=n)", False),  # a variable: the check is never sure of it
        ("rs = await asyncio.gather(wait(seconds=1), *[wait(seconds=i) for i in range(3)])", False),
        ("r = wait(seconds=1)", True),  # not awaited: a coroutine as a value
        ("r = await wait(1)", True),  # positional
        ("r = await wait(tag='x')", True),  # a required argument missing
        ("r = await wait(seconds=1, bogus=2)", True),
        ("r = await wait(seconds='one')", True),  # a literal of the wrong kind
        ("r = await wait(seconds=True)", True),
        ("r = await wait(seconds=None)", True),
        ("w = wait\nr = await w(seconds=1)", True),  # the function as a value
        ("r = await wait(**options)", True),
        ("print(1)", False),
    ],
)
def test_the_check_is_skipped_only_when_it_could_catch_nothing(code: str, can_catch: bool) -> None:
    from asyncai.code_mode.catalog.entries import build_catalog
    from asyncai.code_mode.engine.read import parse_snippet
    from asyncai.code_mode.engine.type_check import check_can_catch
    from tests.code_mode.conftest import FakeExecutor

    tree = parse_snippet(code)
    assert tree is not None
    assert check_can_catch(tree, build_catalog(FakeExecutor().tools())) is can_catch
