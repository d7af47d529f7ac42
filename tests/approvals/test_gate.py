"""``MutationGate`` under each policy, the call text a person approves, and the refusals' wording."""

from __future__ import annotations

import asyncio

import pytest

from asyncai import wording
from asyncai.approvals.gate import ARGUMENT_PREVIEW_CHARS, Approval, ApprovalRequest, MutationGate

pytestmark = pytest.mark.anyio

DELETE = ApprovalRequest("delete-pod", "delete_pod", {"name": "web"})
DENIED = "mutating calls are denied here (mutations='deny')"
NOBODY = (
    "mutating calls need approval (mutations='ask') and there is no one to ask here (no terminal); "
    "run with mutations='allow' to let them run"
)


@pytest.fixture(autouse=True)
def library_wording(monkeypatch: pytest.MonkeyPatch) -> None:
    """Library wording, whatever an earlier test in this process told ``use_flags``."""
    monkeypatch.setattr(wording, "_flags", {})


class Approver:
    """Answers from a script, in order, and records every question."""

    def __init__(self, *answers: Approval) -> None:
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []

    async def approve(self, request: ApprovalRequest) -> Approval:
        self.asked.append(request)
        return self.answers.pop(0)


class HeldApprover:
    """Holds each question until the test answers it, logging questions and answers in order."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.questions: asyncio.Queue[tuple[ApprovalRequest, asyncio.Future[Approval]]] = asyncio.Queue()
        self.in_flight = 0
        self.most_in_flight = 0

    async def approve(self, request: ApprovalRequest) -> Approval:
        self.log.append(f"asked {request.arguments['name']}")
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        answer: asyncio.Future[Approval] = asyncio.get_running_loop().create_future()
        self.questions.put_nowait((request, answer))
        try:
            return await answer
        finally:
            self.in_flight -= 1

    def answer(self, future: asyncio.Future[Approval], approval: Approval, name: str) -> None:
        self.log.append(f"answered {name}")
        future.set_result(approval)


def delete(name: str) -> ApprovalRequest:
    return ApprovalRequest("delete-pod", "delete_pod", {"name": name})


async def test_allow_runs_without_asking() -> None:
    approver = Approver()
    gate = MutationGate("allow", approver)
    assert gate.open
    assert await gate.decide(DELETE) == Approval(True)
    assert approver.asked == []


async def test_deny_refuses_with_the_setting_named_and_never_asks() -> None:
    approver = Approver(Approval(True))
    gate = MutationGate("deny", approver)
    assert not gate.open
    approval = await gate.decide(DELETE)
    assert approval == Approval(False, DENIED)
    assert approver.asked == []


async def test_ask_without_an_approver_refuses() -> None:
    approval = await MutationGate("ask").decide(DELETE)
    assert approval == Approval(False, NOBODY)


async def test_ask_asks_about_each_call() -> None:
    approver = Approver(Approval(True), Approval(False, "not that one"))
    gate = MutationGate("ask", approver)
    first = await gate.decide(delete("a"))
    second = await gate.decide(delete("b"))
    assert (first.allowed, second) == (True, Approval(False, "not that one"))
    assert approver.asked == [delete("a"), delete("b")]  # a plain yes covers one call only
    assert not gate.open


async def test_an_approval_for_the_rest_of_the_snippet_stops_the_questions() -> None:
    approver = Approver(Approval(True, rest_of_snippet=True))
    gate = MutationGate("ask", approver)
    assert (await gate.decide(delete("a"))).allowed
    assert gate.open
    assert [(await gate.decide(delete(name))).allowed for name in "bc"] == [True, True]
    assert approver.asked == [delete("a")]


async def test_a_refusal_for_the_rest_of_the_snippet_does_not_open_the_gate() -> None:
    approver = Approver(Approval(False, "no", rest_of_snippet=True), Approval(True))
    gate = MutationGate("ask", approver)
    assert not (await gate.decide(delete("a"))).allowed
    assert not gate.open
    assert (await gate.decide(delete("b"))).allowed
    assert len(approver.asked) == 2


async def test_gathered_calls_are_asked_about_one_at_a_time() -> None:
    approver = HeldApprover()
    gate = MutationGate("ask", approver)
    first = asyncio.create_task(gate.decide(delete("a")))
    second = asyncio.create_task(gate.decide(delete("b")))
    request, answer = await approver.questions.get()
    # Both tasks have run up to their first wait: the second must be waiting for the gate.
    assert request == delete("a") and approver.questions.empty()
    approver.answer(answer, Approval(False, "no"), "a")
    request, answer = await approver.questions.get()
    assert request == delete("b")
    approver.answer(answer, Approval(True), "b")
    assert (await first, await second) == (Approval(False, "no"), Approval(True))
    assert approver.log == ["asked a", "answered a", "asked b", "answered b"]
    assert approver.most_in_flight == 1


async def test_an_answer_for_the_rest_settles_the_calls_still_waiting() -> None:
    approver = HeldApprover()
    gate = MutationGate("ask", approver)
    waiting = [asyncio.create_task(gate.decide(delete(name))) for name in "abc"]
    _, answer = await approver.questions.get()
    assert approver.questions.empty()
    approver.answer(answer, Approval(True, rest_of_snippet=True), "a")
    async with asyncio.timeout(1):  # a guard: a regression asks again and waits for no one
        answers = await asyncio.gather(*waiting)
    assert [approval.allowed for approval in answers] == [True, True, True]
    assert approver.log == ["asked a", "answered a"]


def test_the_call_text_shows_each_argument_as_python_or_compact_json() -> None:
    request = ApprovalRequest(
        "patch-pod",
        "patch_pod",
        {"name": "web", "replicas": 3, "force": True, "ratio": 0.5, "labels": {"app": "web"}, "ids": [1, 2]},
    )
    assert request.call_text() == (
        'patch_pod(name=\'web\', replicas=3, force=True, ratio=0.5, labels={"app":"web"}, ids=[1,2])'
    )
    assert ApprovalRequest("t", "f", {}).call_text() == "f()"


def test_a_value_is_cut_only_beyond_the_limit_and_says_how_much_is_hidden() -> None:
    exact = "x" * (ARGUMENT_PREVIEW_CHARS - 2)  # its repr, quotes included, is exactly the limit
    assert ApprovalRequest("t", "f", {"v": exact}).call_text() == f"f(v='{exact}')"
    longer = ApprovalRequest("t", "f", {"v": exact + "yz"}).call_text()
    assert longer == f"f(v='{exact}y... (2 more chars))"
    assert ApprovalRequest("t", "f", {"v": "abcdefghij"}).call_text(limit=5) == "f(v='abcd... (7 more chars))"
    assert ApprovalRequest("t", "f", {"v": 1234567}).call_text(limit=3) == "f(v=123... (4 more chars))"


def test_characters_that_do_not_print_are_escaped() -> None:
    sneaky = {"name": "web\u202e\x1b[2J\n", "spec": {"k\u200b": "\x00\u2066"}}
    text = ApprovalRequest("t", "f", sneaky).call_text()
    assert text.isprintable(), text
    assert "name='web\\u202e\\x1b[2J\\n'" in text
    assert 'spec={"k\\u200b":"\\u0000\\u2066"}' in text


def test_the_call_text_of_any_value_a_snippet_can_pass() -> None:
    text = ApprovalRequest("t", "f", {"data": b"\x00abc", "tags": {"a"}}).call_text()
    assert text.startswith("f(data=")


async def test_refusals_name_the_command_line_flag_once_the_cli_said_its_flags() -> None:
    wording.use_flags({"mutations": "--mutations"})  # into the fixture's dict, undone after the test
    assert (await MutationGate("deny").decide(DELETE)).reason == (
        "mutating calls are denied here (--mutations deny)"
    )
    assert (await MutationGate("ask").decide(DELETE)).reason == (
        "mutating calls need approval (--mutations ask) and there is no one to ask here (no terminal); "
        "run with --mutations allow to let them run"
    )
