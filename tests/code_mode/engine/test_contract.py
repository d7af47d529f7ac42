import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncai.activity import NestedCall
from asyncai.code_mode.engine.contract import (
    HINTS,
    LARGE_VALUE_MARK,
    RunCodeText,
    SnippetOutcome,
    find_unawaited,
    format_error,
    format_outcome,
    hide_frames,
    hint_for,
    preview_chars,
)
from asyncai.code_mode.engine.dispatch import calls_report
from asyncai.log import preview


def _ok(text: str) -> RunCodeText:
    return RunCodeText(text=text, is_error=False)


# --- return contract -------------------------------------------------------------------------


def test_none_and_nothing_printed() -> None:
    assert format_outcome(SnippetOutcome(value=None, printed="")) == _ok(
        "(no output; the last expression was None)"
    )


def test_none_with_prints() -> None:
    result = format_outcome(SnippetOutcome(value=None, printed="a\nb ✓\n"))
    assert result == _ok('{"output":"a\\nb ✓\\n"}')


def test_str_value_is_returned_as_is() -> None:
    assert format_outcome(SnippetOutcome(value="pod-1, pod-2", printed="")) == _ok("pod-1, pod-2")


def test_empty_str_value_is_explicit() -> None:
    result = format_outcome(SnippetOutcome(value="", printed=""))
    assert not result.is_error
    assert "empty string" in result.text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"not_running": ["a"], "warnings": 2}, '{"not_running":["a"],"warnings":2}'),
        ([1, 2.5, True], "[1,2.5,true]"),
        (0, "0"),
        (False, "false"),
        ({}, "{}"),
        ([], "[]"),
        ((1, "x"), '[1,"x"]'),
        ({3, 1}, "[1,3]"),
        ({("a", 1): 2}, "{\"('a', 1)\":2}"),
        (float("nan"), '"NaN"'),
    ],
)
def test_non_str_value_is_compact_json(value: object, text: str) -> None:
    assert format_outcome(SnippetOutcome(value=value, printed="")) == _ok(text)


def test_value_and_prints() -> None:
    result = format_outcome(SnippetOutcome(value={"n": 3}, printed="checked 3\n"))
    assert result == _ok('{"output":"checked 3\\n","result":{"n":3}}')
    result = format_outcome(SnippetOutcome(value="done", printed="x\n"))
    assert json.loads(result.text) == {"output": "x\n", "result": "done"}


def test_truncated_prints_are_noted() -> None:
    result = format_outcome(SnippetOutcome(value=None, printed="abc", printed_truncated_bytes=123))
    assert not result.is_error
    assert json.loads(result.text) == {"output": "abc... [print output truncated: 123 more bytes]"}
    result = format_outcome(SnippetOutcome(value=[1], printed="abc", printed_truncated_bytes=7))
    assert json.loads(result.text) == {
        "output": "abc... [print output truncated: 7 more bytes]",
        "result": [1],
    }


# --- un-awaited awaitables ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "<coroutine external_future(0)>",
        "<coroutine object list_objects>",
        "<gather(2)>",
        ["ok", "<gather(12)>"],
        ("<coroutine external_future(3)>", 1),
        {"pods": "<coroutine object list_objects>"},
        {"a": {"b": ["<gather(1)>"]}},
    ],
)
def test_unawaited_results_are_errors(value: object) -> None:
    result = format_outcome(SnippetOutcome(value=value, printed=""))
    assert result.is_error
    assert result.text.startswith("error: the result contains an un-awaited call (<")
    assert "add await, e.g. x = await f(...) or await asyncio.gather(...)" in result.text


def test_unawaited_error_names_the_found_repr() -> None:
    result = format_outcome(SnippetOutcome(value=[1, "<gather(2)>"], printed=""))
    assert result.text == (
        "error: the result contains an un-awaited call (<gather(2)>); add await, "
        "e.g. x = await f(...) or await asyncio.gather(...)"
    )


def test_unawaited_in_prints_is_an_error() -> None:
    result = format_outcome(SnippetOutcome(value=None, printed="[<coroutine external_future(0)>]\n"))
    assert result.is_error
    assert "print output contains an un-awaited call (<coroutine external_future(0)>)" in result.text


@pytest.mark.parametrize(
    "value",
    ["the <gather(2)> repr", "<coroutine>", "<gather(x)>", ["<coroutine object f> trailing"]],
)
def test_strings_that_only_mention_awaitables_are_fine(value: object) -> None:
    assert not format_outcome(SnippetOutcome(value=value, printed="")).is_error


def test_unawaited_scan_is_bounded() -> None:
    late = [*range(2_000), "<gather(1)>"]
    assert find_unawaited(late) is None
    assert find_unawaited(late, limit=5_000) == "<gather(1)>"


# --- the 20 000-char guard ---------------------------------------------------------------------


def test_result_under_the_limit_passes() -> None:
    text = "x" * 19_999
    assert format_outcome(SnippetOutcome(value=text, printed="")) == _ok(text)
    exactly = "y" * 20_000
    assert format_outcome(SnippetOutcome(value=exactly, printed="")) == _ok(exactly)


def test_result_over_the_limit_is_an_error_with_size_and_preview() -> None:
    text = "0123456789" * 2_000 + "z"  # 20 001 chars
    result = format_outcome(SnippetOutcome(value=text, printed=""))
    assert result.is_error
    assert result.text.startswith("error: result is 20,001 chars, over the 20,000-char limit")
    assert "Assign the data to a variable and return a filtered subset" in result.text
    _, shown = result.text.split("Preview (first 2000 chars): ")
    assert shown == text[:2_000] + "... [18,001 more chars]"
    assert len(result.text) < 2_500


def test_guard_counts_the_json_text() -> None:
    value = [f"name-{i:05d}" for i in range(2_000)]  # ~26 000 chars of JSON
    result = format_outcome(SnippetOutcome(value=value, printed=""))
    assert result.is_error
    size = len(json.dumps(value, separators=(",", ":")))
    assert f"result is {size:,} chars" in result.text
    assert 'Preview (first 2000 chars): ["name-00000","name-00001"' in result.text


def test_guard_honours_a_custom_limit() -> None:
    result = format_outcome(SnippetOutcome(value="a" * 101, printed=""), max_chars=100)
    assert result.is_error
    assert "over the 100-char limit" in result.text
    assert "Preview (first 10 chars): aaaaaaaaaa... [91 more chars]" in result.text


def test_preview() -> None:
    assert preview("abc", 5) == "abc"
    assert preview("abcdef", 3) == "abc... [3 more chars]"


# --- errors and hints --------------------------------------------------------------------------

TRACEBACK = """Traceback (most recent call last):
  File "<snippet>", line 2, in <module>
    json.dumps(x, default=str)
TypeError: JSONEncoder.__init__() got an unexpected keyword argument 'default'"""


def test_format_error_carries_traceback_and_hint() -> None:
    result = format_error(TRACEBACK + "\n")
    assert result.is_error
    lines = result.text.split("\n")
    assert "\n".join(lines[:-1]) == TRACEBACK
    assert lines[-1].startswith("Hint: ") and "to_json(x)" in lines[-1]
    assert result.text.count("Hint:") == 1


def test_format_error_without_hint() -> None:
    text = "Traceback (most recent call last):\nZeroDivisionError: division by zero"
    assert format_error(text) == RunCodeText(text=text, is_error=True)


def test_format_error_state_reset() -> None:
    result = format_error("error: the sandbox worker crashed", state_reset=True)
    assert result.is_error
    assert result.text.startswith("error: the sandbox worker crashed\n")
    assert "REPL state was reset" in result.text
    assert "variables" in result.text


def test_format_error_clips_huge_tracebacks() -> None:
    text = "Traceback (most recent call last):\n" + "x" * 50_000 + "\nRuntimeError: tool failed"
    result = format_error(text)
    assert len(result.text) < 20_100
    assert result.text.endswith("RuntimeError: tool failed")
    assert "chars omitted" in result.text


@pytest.mark.parametrize(
    ("error", "needle"),
    [
        ("TypeError: JSONEncoder.__init__() got an unexpected keyword argument 'default'", "to_json(x)"),
        ("TypeError: Object of type set is not JSON serializable", "to_json(x)"),
        ("TypeError: cannot use 'list' as a dict key (unhashable type: 'list')", "tuple"),
        ("TypeError: unhashable type: 'dict'", "tuple"),
        ("ModuleNotFoundError: No module named 'operator'", "lambda"),
        ("ModuleNotFoundError: No module named 'subprocess'", "no OS, subprocess or network access"),
        ("ModuleNotFoundError: No module named 'urllib.request'", "network"),
        ("ModuleNotFoundError: No module named 'statistics'", "module statistics is not available"),
        (
            "ImportError: cannot import name 'asdict' from 'dataclasses' (unknown location)",
            "dataclasses.asdict",
        ),
        (
            "NotImplementedError: The monty syntax parser does not yet support class inheritance",
            "built-in exceptions",
        ),
        (
            "NotImplementedError: The monty syntax parser does not yet support method decorators",
            "@property",
        ),
        ("NotImplementedError: The monty syntax parser does not yet support yield expressions", "list"),
        ("NotImplementedError: The monty syntax parser does not yet support the 'del' statement", "pop"),
        ("NameError: name 'globals' is not defined", "globals() is not available"),
        ("TypeError: gather() does not yet support keyword arguments", "try/except"),
        ("AttributeError: module 'asyncio' has no attribute 'wait_for'", "asyncio.wait_for is not available"),
        ("AttributeError: module 'asyncio' has no attribute 'Semaphore'", "asyncio.gather"),
        ("TypeError: 'coroutine' object is not subscriptable", "await each tool call exactly once"),
        ("TypeError: object list can't be awaited", "await each tool call"),
        ("AttributeError: type object 'str' has no attribute 'lower'", "key=lambda s: s.lower()"),
        ("TypeError: list_objects() takes keyword arguments only", "keyword arguments only"),
        ("Traceback (most recent call last):\n  File x\nKeyError: 'phase'", "dig(obj"),
    ],
)
def test_hints(error: str, needle: str) -> None:
    hint = hint_for(error)
    assert hint is not None
    assert hint.startswith("Hint: ")
    assert needle in hint
    assert "\n" not in hint


@pytest.mark.parametrize(
    "error",
    [
        "ZeroDivisionError: division by zero",
        "NameError: name 'lst_objects' is not defined",
        "ValueError: bad value",
        "    except KeyError:\nValueError: x",  # KeyError only in a source line
    ],
)
def test_no_hint_for_ordinary_errors(error: str) -> None:
    assert hint_for(error) is None


def test_first_matching_hint_wins() -> None:
    text = "TypeError: unhashable type: 'list'\nKeyError: 'x'"
    hint = hint_for(text)
    assert hint is not None and "tuple" in hint


def test_hint_table_is_data_and_every_pattern_compiles() -> None:
    assert len(HINTS) >= 15
    for pattern, hint in HINTS:
        compiled = re.compile(pattern)
        assert hint.format(**dict.fromkeys(compiled.groupindex, "X"))


def test_hide_frames_drops_only_the_named_file() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "<python-input-3>", line 1, in <module>\n'
        "    await slow(1)\n"
        "    ~~~~~~~~~~~~~\n"
        '  File "<python-input-0>", line 99, in slow\n'
        "    return _asyncai_decode(await _asyncai_tool('slow', args, kwargs))\n"
        "                           ~~~~~~~~~~~~~~~~\n"
        "TypeError: slow() takes keyword arguments only"
    )
    assert hide_frames(text, "<python-input-0>") == (
        "Traceback (most recent call last):\n"
        '  File "<python-input-3>", line 1, in <module>\n'
        "    await slow(1)\n"
        "    ~~~~~~~~~~~~~\n"
        "TypeError: slow() takes keyword arguments only"
    )


def test_a_long_calls_report_keeps_every_mutating_call_and_counts_the_rest() -> None:
    calls = [NestedCall("get", {"i": i}, mutating=False, function="get", answered=True) for i in range(30)]
    calls.insert(25, NestedCall("delete", {"name": "a"}, mutating=True, function="delete_it", answered=True))
    calls.append(NestedCall("put", {"name": "b"}, mutating=True, function="put"))  # never answered
    calls[3].is_error = True
    report = calls_report(calls)
    assert report is not None
    lines = report.splitlines()
    assert lines[0] == "Nested calls this snippet started before it was stopped (32):"
    assert "- failed: get(i=3)" in lines
    assert "- finished: delete_it(name='a') (mutating: its change was applied)" in lines
    assert "- cut off: put(name='b') (mutating: its change may have been applied)" in lines
    assert (
        sum(line.startswith("- finished: get(") or line.startswith("- failed: get(") for line in lines) == 18
    )
    assert "- ... and 12 more read-only calls (12 finished)" in lines
    assert calls_report([]) is None


def test_the_calls_report_survives_the_result_cap() -> None:
    report = "Nested calls this snippet started before it was stopped (1):\n- cut off: hang()"
    result = format_error("Traceback\n" + "x" * 5000, calls_report=report, max_chars=600)
    assert len(result.text) <= 600 and result.text.endswith(report)


# --- a value too large to cross whole (preamble.BOUNDED) ----------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=8) | st.dictionaries(st.text(max_size=8), inner, max_size=8),
    max_leaves=60,
)  # fmt: skip
"""The values a tool result parses to: JSON, with string keys and finite numbers."""


def left_in_the_sandbox(value: object, max_chars: int) -> object:
    """What ``_asyncai_bounded`` hands back (it runs the same ``json.dumps`` in the sandbox)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if not isinstance(value, dict | list | tuple) or len(text) <= max_chars:
        return value
    return (LARGE_VALUE_MARK, len(text), text[: preview_chars(max_chars)])


@settings(max_examples=300, deadline=None)
@given(
    value=st.lists(_JSON, min_size=1, max_size=12) | st.dictionaries(st.text(max_size=8), _JSON, min_size=1),
    printed=st.sampled_from(["", "hi\n", 'a "quoted" ✓ line\n' * 30]),
    dropped=st.sampled_from([0, 7]),
    max_chars=st.integers(min_value=20, max_value=400),
    closing=st.sampled_from([None, "kept", "(a, b,)"]),
)
def test_a_value_left_in_the_sandbox_reads_as_the_value_itself(
    value: object, printed: str, dropped: int, max_chars: int, closing: str | None
) -> None:
    """The result of the stand-in is the result of the value, to the character, whatever was
    printed beside it, for a closing assignment or a last expression."""
    kept_as, assigned = ("_", None) if closing is None else (None, closing)

    def result(shown: object) -> RunCodeText:
        outcome = SnippetOutcome(value=shown, printed=printed, printed_truncated_bytes=dropped)
        return format_outcome(outcome, max_chars=max_chars, kept_as=kept_as, assigned=assigned)

    assert result(left_in_the_sandbox(value, max_chars)) == result(value)


def test_a_stand_in_needs_its_whole_shape() -> None:
    """A tuple that only starts like one is a value like any other."""
    for value in ((LARGE_VALUE_MARK, 3), (LARGE_VALUE_MARK, "3", "abc"), ("other", 30, "x" * 30)):
        assert format_outcome(SnippetOutcome(value=value, printed="")).text == json.dumps(
            list(value), separators=(",", ":")
        )
