"""How ``make eval`` tells the harness's failures from the model's (``evals.run.classify``): by
the run's own facts (its error, the last reply's ``finish_reason``, the forced last round) and by
the harness's own recogniser of calls in text, never by words inside code the model pasted."""

from __future__ import annotations

import pytest
from evals.run import classify

from asyncai.backend.config import NO_ANSWER_TEXT, Message
from asyncai.backend.openai import RunResult

NAMES = {"run_code", "read_text_file"}


def result(reply: str, *results: str, forced: bool = False) -> RunResult:
    messages = (Message("user", "question"), *(Message("tool", text, tool_call_id="c") for text in results))
    return RunResult(
        reply=reply, messages=(*messages, Message("assistant", reply)), final_round_forced=forced
    )


@pytest.mark.parametrize(
    ("attempt", "error", "finish", "verdict"),
    [
        (None, "TimeoutError", None, "model: too slow (the attempt's time ran out)"),
        (None, "the conversation is too long for the model's context (62,721 tokens)", None,
         "model: read more than its context holds"),
        (None, "cannot connect to the model server", None, "harness: the run failed (cannot connect to the model server)"),
        (result("To read it:\n```json\n{\"name\": \"run_code\", \"arguments\": {\"code\": \"imp"), None, "length",
         "model: rambled (its reply was cut at the token limit)"),
        (result(NO_ANSWER_TEXT), None, "stop", "harness: a turn without an answer"),
        (result('{"name": "read_text_file", "arguments": {"path": "/a"}}', forced=True), None, "stop",
         "model: ran out of rounds"),
        (result('<tool_call>{"name": "read_text_file", "arguments": {"path": "/a"}}</tool_call>'), None, "stop",
         "harness: a call it did not recognise"),
        (result("```python\nasync def f():\n    '''The file cannot be read.'''\n```\nIt is 42."), None, "stop",
         "model: wrong answer"),
        (result("I'm sorry, I cannot read files."), None, "stop", "model: gave up"),
        (result("It is 7.", "Traceback (most recent call last):\nZeroDivisionError"), None, "stop",
         "model: wrong code"),
        (result("It is 7.", "42"), None, "stop", "model: wrong answer"),
    ],
    ids=["timeout", "overflow", "run-failed", "cut", "no-answer", "rounds", "unrecognised-call",
         "cannot-inside-code", "gave-up", "wrong-code", "wrong-answer"],
)  # fmt: skip
def test_each_failure_is_classified_by_rule(
    attempt: RunResult | None, error: str | None, finish: str | None, verdict: str
) -> None:
    assert classify(attempt, error, finish, NAMES) == verdict
