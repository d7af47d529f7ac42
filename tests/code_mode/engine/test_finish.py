"""The finish stage alone: what the model and the embedder get back (pure functions, no worker)."""

from __future__ import annotations

from asyncai.code_mode.engine.contract import RunCodeText
from asyncai.code_mode.engine.finish import (
    ABANDONED_NOTE,
    RESTARTED_NOTE,
    Written,
    notice,
    outcome_text,
    stopped_text,
    tool_output,
    wall_clock_text,
)
from asyncai.code_mode.limits import CodeModeLimits

LIMITS = CodeModeLimits(max_result_chars=200)


def test_a_value_kept_as_the_last_value_is_named_when_too_large() -> None:
    small = outcome_text({"n": 1}, "", 0, Written(("_",), True), LIMITS)
    assert (small.text, small.is_error, small.value) == ('{"n":1}', False, {"n": 1})
    large = outcome_text("x" * 500, "", 0, Written(("_",), True), LIMITS)
    assert large.is_error and "_" in large.text and len(large.text) < 500


def test_a_closing_assignment_too_large_to_show_is_kept_under_its_name() -> None:
    result = outcome_text(list(range(200)), "", 0, Written(("rows",), False, assigned="rows"), LIMITS)
    assert not result.is_error and "value assigned to rows" in result.text and "Preview" in result.text
    assert result.value == result.text, "the stand-in is the value a client's model reads"


def test_printed_output_comes_with_the_value() -> None:
    result = outcome_text(3, "hello\n", 0, Written((), True), LIMITS)
    assert result.text == '{"output":"hello\\n","result":3}' and not result.is_error
    assert (result.value, result.output) == (3, "hello\n")
    alone = outcome_text(None, "hi", 0, Written((), True), LIMITS)
    assert (alone.text, alone.value, alone.output) == ('{"output":"hi"}', None, "hi")
    assert outcome_text(3, "", 0, Written((), True), LIMITS).output is None


def test_the_notes_come_first_and_only_when_due() -> None:
    assert notice(restarted=False, abandoned=False) is None
    assert notice(restarted=True, abandoned=False) == RESTARTED_NOTE
    assert notice(restarted=True, abandoned=True) == f"{ABANDONED_NOTE}\n{RESTARTED_NOTE}"
    told = tool_output(RunCodeText("42", False, value=42), None, RESTARTED_NOTE)
    assert told.content == f"{RESTARTED_NOTE}\n42"
    assert told.structured == {"value": 42, "notice": RESTARTED_NOTE}


def test_a_stopped_snippet_lists_what_ran_while_it_streamed() -> None:
    assert stopped_text("cut off", [], None) == "error: cut off; nothing ran."
    text = stopped_text("cut off", ["x = 1", "y = await f()"], "calls: 1")
    assert text.startswith("error: cut off, so the rest") and "- x = 1\n- y = await f()" in text
    assert text.endswith("\ncalls: 1")


def test_the_wall_clock_says_whether_anything_ran() -> None:
    assert "nothing ran" in wall_clock_text(LIMITS, ran=False, chars=12)
    assert "variables are gone" in wall_clock_text(LIMITS, ran=True)


def test_an_error_carries_no_value_for_the_embedder() -> None:
    ok = tool_output(RunCodeText("1", False, value=1), {"nested_calls": []})
    printed = tool_output(RunCodeText('{"output":"a","result":1}', False, value=1, output="a"), None)
    failed = tool_output(RunCodeText("error", True, value=1), None)
    assert ok.structured == {"value": 1} and ok.audit == {"nested_calls": []} and ok.content == "1"
    assert printed.structured == {"value": 1, "output": "a"}
    assert failed.structured is None and failed.is_error and failed.content == "error"
