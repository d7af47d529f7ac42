"""A snippet that ends with an assignment returns the value it assigned (issue 35: 37 of 158 real
snippets ended in one, and 21 of those came back as ``(no output; the last expression was None)``).

The value is what the snippet would give ending with the assigned name (``x``; ``(a, b,)`` for
names unpacked); ``_`` is left as it was, since the value has a name of its own. An assignment to
an item or an attribute, or with a starred target, has no single value and returns nothing."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator

import anyio.lowlevel
import pytest

from asyncai.approvals.gate import Approval
from asyncai.code_mode import CodeMode
from asyncai.code_mode.engine.contract import NO_OUTPUT_TEXT, SnippetOutcome, format_outcome
from asyncai.code_mode.engine.pausing import PausedSnippet, pack_paused, unpack_paused
from asyncai.code_mode.engine.read import SCAN_ON_LOOP_CHARS, bind_last_value, scan_snippet
from asyncai.tools.types import ToolCallOutput
from tests.code_mode.conftest import TEST_LIMITS, FakeExecutor, run
from tests.differential.doors import DoorRig
from tests.differential.snippets import Program, bound_names, state_probe
from tests.differential.test_every_door import differences

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("code", "assigned"),
    [
        ("x = 1", "x"),
        ("x: int = 1", "x"),
        ("x = 1\nx += 2", "x"),
        ("a, b = 1, 2", "(a, b,)"),
        ("[a, b] = 1, 2", "(a, b,)"),
        ("(a,) = [7]", "(a,)"),
        ("a = b = 3", "a"),
        ("x = 1  # done\n\n# trailing comment\n", "x"),
        ("x: int", None),  # declares, binds nothing
        ("d = {}\nd['k'] = 1", None),
        ("class C:\n    pass\nC.a = 1", None),
        ("first, *rest = [1, 2]", None),
        ("x = 1\nx", None),  # an expression: its value, bound to _ as before
        ("for i in range(2):\n    x = i", None),
    ],
)
def test_the_scan_finds_what_a_closing_assignment_assigned(code: str, assigned: str | None) -> None:
    scan = scan_snippet(code)
    assert scan.assigned == assigned
    if assigned is not None:
        assert scan.value_at is None
        fed = bind_last_value(code, scan.value_at, scan.assigned)
        assert fed.startswith(code) and fed.endswith(f"\n{assigned}"), "only a line after it: numbers stay"


@pytest.mark.parametrize(
    ("code", "value"),
    [
        ("x = 41 + 1", "42"),
        ("total: int = sum([1, 2])", "3"),
        ("n = 5\nn *= 3", "15"),
        ("a, b = 1, [2]", "[1,[2]]"),
        ("(a,) = [7]", "[7]"),
        ("a = b = 'same'", "same"),
        ("s = ''", '(the result is an empty string "")'),
        (
            "p = await pods()\nrunning = [i['metadata']['name'] for i in p['items'] if i['status']['phase'] == 'Running']",
            None,
        ),
        ("r, s = await asyncio.gather(wait(seconds=0, tag='r'), wait(seconds=0, tag='s'))", None),
        ("print('hi')\nx = 2", '{"output":"hi\\n","result":2}'),
        ("x = None", NO_OUTPUT_TEXT),
        ("d = {}\nd['k'] = 1", NO_OUTPUT_TEXT),
        ("first, *rest = [1, 2]", NO_OUTPUT_TEXT),
    ],
)
async def test_the_value_assigned_last_is_the_result(
    code_mode: CodeMode, code: str, value: str | None
) -> None:
    output = await run(code_mode, code)
    assert not output.is_error, output.content
    if value is None:  # the tool calls' results
        assert json.loads(output.content) in (
            [f"pod-{i}" for i in (0, 1, 2, 3, 4, 5, 6, 9)],
            [{"waited": 0, "tag": "r"}, {"waited": 0, "tag": "s"}],
        )
    else:
        assert output.content == value


async def test_a_long_snippet_scanned_in_a_child_process_returns_its_assigned_value(
    code_mode: CodeMode,
) -> None:
    padding = "# " + "x" * SCAN_ON_LOOP_CHARS  # over the limit: scanned off the event loop
    output = await run(code_mode, f"a, b = 1, 2\n{padding}\nc = a + b")
    assert (output.content, output.is_error) == ("3", False)
    refused = await run(code_mode, f"async def pods():\n    pass\n{padding}")
    assert refused.is_error and "already defined in the sandbox" in refused.content


async def test_underscore_keeps_the_last_expressions_value(code_mode: CodeMode) -> None:
    assert (await run(code_mode, "6 * 7")).content == "42"
    assert (await run(code_mode, "y = 'assigned'")).content == "assigned"
    assert (await run(code_mode, "_")).content == "42", "an assignment's value has its own name"


async def test_a_missing_await_in_the_closing_assignment_is_an_error_now(code_mode: CodeMode) -> None:
    output = await run(code_mode, "w = wait(seconds=0)")
    assert output.is_error and "un-awaited call" in output.content


async def test_a_traceback_keeps_the_snippets_line_numbers(code_mode: CodeMode) -> None:
    output = await run(code_mode, "a = 1\nb = a / 0")
    assert output.is_error and "line 2, in <module>\n    b = a / 0" in output.content


async def test_a_large_assigned_value_stays_where_it_was_put(fake: FakeExecutor) -> None:
    limits = dataclasses.replace(TEST_LIMITS, max_result_chars=1_000)
    async with CodeMode(fake, limits) as code_mode:
        output = await run(code_mode, "big = await blob(size=5000)")
        after = await run(code_mode, "len(big['items'])")
    assert not output.is_error, "keeping a large value in a variable is what the description advises"
    assert (
        output.content.startswith("(the value assigned to big is 5,")
        and "chars, over the 1,000-char limit for what goes to the model, so it is not shown; it stays in big: "
        in (output.content)
    )
    assert "len(big), big[:3]" in output.content and "Preview (first 100 chars): {" in output.content
    assert after.content == "50"


BIG = "[{'name': f'pod-{i}', 'ok': i % 3 == 0, 'load': i / 7, 'note': 'a \"quoted\" ✓'} for i in range(60)]"


def big_value() -> list[dict[str, object]]:
    return [{"name": f"pod-{i}", "ok": i % 3 == 0, "load": i / 7, "note": 'a "quoted" ✓'} for i in range(60)]


@pytest.mark.parametrize(
    ("snippet", "printed", "kept_as", "assigned"),
    [
        (f"rows = {BIG}", "", None, "rows"),
        (f"print('hi')\nrows, n = {BIG}, 2", "hi\n", None, "(rows, n,)"),
        (BIG, "", "_", None),
        (f"print('a' * 30)\n{BIG}", "a" * 30 + "\n", "_", None),
    ],
)
async def test_a_value_too_large_to_show_reads_as_if_it_had_crossed_whole(
    fake: FakeExecutor, snippet: str, printed: str, kept_as: str | None, assigned: str | None
) -> None:
    """Only its JSON's length and head leave the worker (``preamble.BOUNDED``); the model reads
    what the whole value would have given, to the character."""
    limits = dataclasses.replace(TEST_LIMITS, max_result_chars=1_000)
    value = big_value() if assigned != "(rows, n,)" else (big_value(), 2)
    whole = format_outcome(
        SnippetOutcome(value, printed), max_chars=1_000, kept_as=kept_as, assigned=assigned
    )
    async with CodeMode(fake, limits) as code_mode:
        output = await run(code_mode, snippet)
        kept = await run(code_mode, f"len({'_' if assigned is None else 'rows'})")
    assert (output.content, output.is_error) == (whole.text, whole.is_error)
    assert "over the 1,000-char limit" in output.content
    assert kept.content == "60", "the value stays in the sandbox, whole"


async def test_a_pausing_run_returns_the_assigned_value(fake: FakeExecutor) -> None:
    async with CodeMode(fake, TEST_LIMITS, mutations="ask") as code_mode:
        scope = code_mode.new_scope()
        try:
            paused = await scope.run_pausing({"code": "done = await delete_item(name='web')"})
            assert isinstance(paused, PausedSnippet)
            resumed = await scope.resume(paused, {call.call_id: Approval(True) for call in paused.held})
        finally:
            await scope.aclose()
    assert isinstance(resumed, ToolCallOutput) and resumed.content == "deleted web"


async def test_a_paused_snippet_carries_its_closing_assignment_through_its_record(fake: FakeExecutor) -> None:
    limits = dataclasses.replace(TEST_LIMITS, max_result_chars=1_000)
    async with CodeMode(fake, limits, mutations="ask") as code_mode:
        scope = code_mode.new_scope()
        try:
            paused = await scope.run_pausing(
                {"code": "await delete_item(name='x')\nbig = await blob(size=5000)"}
            )
            assert isinstance(paused, PausedSnippet) and paused.assigned == "big"
            carried = unpack_paused(pack_paused(paused))  # as serve-mcp keeps it between requests
            assert carried.assigned == "big"
            resumed = await scope.resume(carried, {call.call_id: Approval(True) for call in carried.held})
        finally:
            await scope.aclose()
    assert isinstance(resumed, ToolCallOutput) and not resumed.is_error
    assert resumed.content.startswith("(the value assigned to big is ")


async def test_a_streamed_snippet_returns_the_assigned_value(code_mode: CodeMode) -> None:
    scope = code_mode.new_scope()
    try:
        code = "p = await pods()\nn = len(p['items'])\nm = n * 2\n"
        streamed = scope.eager()
        for end in range(len(code) + 1):
            streamed.update(code[:end])
            await anyio.lowlevel.checkpoint()
        output = await streamed.finish({"code": code})
    finally:
        await scope.aclose()
    assert output.content == "20"


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DoorRig]:
    with DoorRig.running(tmp_path_factory.mktemp("doors")) as running:
        yield running


# (the program's snippets, what each returns)
THROUGH_EVERY_DOOR = [
    (("x = 10",), ["10"]),
    (("n = 1\nn += 4", "m: int = n * 2"), ["5", "10"]),
    (("r = await echo(value=[1, 2])",), ["[1,2]"]),
    (("a, b = await asyncio.gather(numbers(n=2), echo(value='b'))",), ['[[0,1],"b"]']),
    (("print('one')\nz = 3",), ['{"output":"one\\n","result":3}']),
    (("7", "q = 'named'", "_"), ["7", "named", "7"]),
    (("d = {}\nd['k'] = 1",), [NO_OUTPUT_TEXT]),
]


def test_every_door_returns_the_assigned_value(rig: DoorRig) -> None:
    for snippets, answers in THROUGH_EVERY_DOOR:
        program = Program(snippets)
        observed = rig.observe(program, state_probe(bound_names(program)))
        assert not differences(observed), (program, differences(observed))
        for door, seen in observed.items():
            assert [answer.text for answer in seen.answers] == answers, (door, program)
