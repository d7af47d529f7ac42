"""How ``make eval`` tells the harness's failures from the model's (``evals.run.classify``): by
the run's own facts (its error, the last reply's ``finish_reason``, the forced last round) and by a
rule of its own for calls in the reply, broader than the harness's recogniser (a tool or catalog
function named as a call, as a JSON ``"name"`` or as ``name(``, in or out of fences): a failed
attempt whose reply holds a call the harness did not run is the harness's."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from evals.run import (
    Attempt,
    answered,
    classify,
    in_suite_order,
    kept_attempts,
    markdown,
    named_calls,
)

from asyncai.backend.config import NO_ANSWER_TEXT, Message, ToolCall
from asyncai.backend.metrics import TurnSummary
from asyncai.backend.openai import RunResult

NAMES = {"run_code", "read_text_file"}


def result(reply: str, *results: str, forced: bool = False, ran: str | None = None) -> RunResult:
    """A run whose tool calls gave ``results`` and whose last reply is ``reply``; ``ran``: the code
    of a ``run_code`` call that ran before it."""
    calls = (ToolCall("c", "run_code", json.dumps({"code": ran})),) if ran is not None else ()
    messages = (
        Message("user", "question"),
        *((Message("assistant", None, tool_calls=calls),) if calls else ()),
        *(Message("tool", text, tool_call_id="c") for text in results),
    )
    summary = TurnSummary(run_code_calls=len(results))
    return RunResult(
        reply=reply,
        messages=(*messages, Message("assistant", reply)),
        final_round_forced=forced,
        summary=summary,
    )


def test_only_a_finished_reply_after_a_tool_call_can_count() -> None:
    plan = "Steps:\n1. List the files.\n2. Read each.\n3. Count them."
    assert not answered(result(plan, "[...]"), "length"), "a number in a plan cut short"
    assert not answered(result("There are 3 files."), "stop"), "a guess: nothing was called"
    assert answered(result("There are 3 files.", '["a", "b", "c"]'), "stop")


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
         "harness: a call it did not run (read_text_file)"),
        (result('{"name": "run_code", "arguments": {"code": "await list_objects(...)"}}\n```', "41"), None,
         "stop", "harness: a call it did not run (run_code)"),
        (result("Here is the fix:\n```\nawait read_text_file(path='/b')\n```", "Traceback"), None, "stop",
         "harness: a call it did not run (read_text_file)"),
        (result("Run this again:\n```\nawait read_text_file(path='/a')\n```", "Traceback (most recent call",
                ran="await read_text_file(path='/a')"), None, "stop", "model: wrong code"),
        (result("I read it with the `read_text_file` function: it says 41.", "41"), None, "stop",
         "model: wrong answer"),
        (result("```python\nasync def f():\n    '''The file cannot be read.'''\n```\nIt is 42.", "41"), None,
         "stop", "model: wrong answer"),
        (result("There are 3 files."), None, "stop", "model: answered without calling a tool"),
        (result("I'm sorry, I cannot read files."), None, "stop", "model: gave up"),
        (result("It is 7.", "Traceback (most recent call last):\nZeroDivisionError"), None, "stop",
         "model: wrong code"),
        (result("It is 7.", "42"), None, "stop", "model: wrong answer"),
    ],
    ids=["timeout", "overflow", "run-failed", "cut", "no-answer", "rounds", "unrecognised-call",
         "call-then-a-fence", "a-fix-not-run", "a-call-that-ran", "a-name-in-prose",
         "cannot-inside-code", "guessed", "gave-up", "wrong-code", "wrong-answer"],
)  # fmt: skip
def test_each_failure_is_classified_by_rule(
    attempt: RunResult | None, error: str | None, finish: str | None, verdict: str
) -> None:
    assert classify(attempt, error, finish, NAMES) == verdict


def test_a_call_is_named_as_json_or_with_its_parenthesis() -> None:
    names = {"read_text_file", "run_code", "echo"}
    assert named_calls('{"name": "echo", "arguments": {}}', names) == ["echo"]
    assert named_calls('{"function": "echo"}', names) == ["echo"]
    assert named_calls("x = await read_text_file (path='/a')", names) == ["read_text_file"]
    assert named_calls("The `echo` tool echoes; helpers.echo(1) and my_echo() are not it.", names) == []
    echoed = "<tool_response>\n(ran as run_code: x = await echo(text='a'))\nerror: ...\n</tool_response>"
    assert named_calls(echoed, names) == [], "a result the model copied back is no call"
    assert named_calls("(ran as run_code: x = await echo(text='a'))\nIt said a.", names) == []


def test_a_number_in_the_worlds_own_path_is_not_read_as_the_answer(tmp_path: Path) -> None:
    from evals.tasks import BY_NAME
    from evals.world import Services, World

    world = World(tmp_path / "run-3", Services("http://127.0.0.1:3333", "http://127.0.0.1:3", {}))
    task = BY_NAME["count-files-with-a-word"]
    assert not task.passes(f"I cannot read the files in {world.root}/docs.", world)
    assert not task.passes(f"See {world.site}/docs.", world)
    assert task.passes(f"3 files in {world.root}/docs contain it.", world)


def test_the_table_sums_the_tasks_that_need_several_calls() -> None:
    def attempt(size: str, mode: str, success: bool, prompt_tokens: int, named: int = 0) -> Attempt:
        task = {"one": "read-a-file", "few": "follow-a-link", "loop": "most-lines"}[size]
        return Attempt(task, size, mode, 0, success, None if success else "model: wrong answer",
                       2, prompt_tokens, 10, 100, named, 1.0, "reply", tool_calls=2, named_calls=named,
                       nested_calls=0 if mode == "direct" else 5)  # fmt: skip

    attempts = [attempt("one", "code", True, 1000), attempt("few", "code", True, 2000, named=1),
                attempt("loop", "code", False, 4000, named=2), attempt("few", "direct", False, 5000)]  # fmt: skip
    args = argparse.Namespace(repeat=1, seed=1, temperature=0.2, max_rounds=6, modes=["code", "direct"])
    table = markdown(attempts, "m", args)
    assert "| code | several | 50% (1/2) | 3,000 | 6,000 | 2.50 | 3 of 4 |" in table
    assert "| code | all | 67% (2/3) | 2,333 | 3,500 | 2.50 | 3 of 6 |" in table
    assert "| direct | several | 0% (0/1) | 5,000 | – | – | – |" in table
    assert "| direct | one |" not in table, "a group without attempts has no row"


def test_an_update_replaces_only_the_attempts_it_runs_again(tmp_path: Path) -> None:
    from dataclasses import asdict

    from evals.tasks import BY_NAME

    def attempt(task: str, mode: str, repetition: int) -> Attempt:
        return Attempt(task, BY_NAME[task].size, mode, repetition, True, None, 2, 100, 10, 10, 0, 1.0, "r")

    earlier = [
        attempt(t, m, r) for r in (0, 1) for t in ("read-a-file", "most-lines") for m in ("code", "direct")
    ]
    path = tmp_path / "eval_results.json"
    path.write_text(json.dumps({"model": "m", "attempts": [asdict(a) for a in earlier]}))
    kept = kept_attempts(path, {("most-lines", "code", 0), ("most-lines", "code", 1)})
    assert [(a.task, a.mode, a.repetition) for a in kept] == [
        ("read-a-file", "code", 0), ("read-a-file", "direct", 0), ("most-lines", "direct", 0),
        ("read-a-file", "code", 1), ("read-a-file", "direct", 1), ("most-lines", "direct", 1),
    ]  # fmt: skip
    again = [attempt("most-lines", "code", 1), attempt("most-lines", "code", 0)]
    assert in_suite_order([*kept, *again]) == earlier
    assert kept_attempts(tmp_path / "none.json", set()) == []
