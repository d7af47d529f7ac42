"""The host side of nested calls without a sandbox: argument checks, budgets, the mutation gate,
errors and timeouts, cancellation, and the report of an aborted snippet's calls."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncai import wording
from asyncai.activity import Activity, NestedCall
from asyncai.approvals.gate import Approval, ApprovalRequest, MutationGate
from asyncai.code_mode.catalog.entries import OS_DENIED, build_catalog
from asyncai.code_mode.catalog.host_functions import SEARCH_TOOLS
from asyncai.code_mode.catalog.search import ToolFinder
from asyncai.code_mode.catalog.skills import SKILL_FILE_FUNCTION
from asyncai.code_mode.catalog.stubs import render_signature
from asyncai.code_mode.engine.clock import WallClock
from asyncai.code_mode.engine.dispatch import (
    BUDGET_GRACE_SECONDS,
    REPORT_CALLS,
    SnippetDispatcher,
    calls_report,
    validate_arguments,
)
from asyncai.code_mode.limits import CodeModeLimits
from asyncai.tools.types import ToolCallOutput, ToolDefinition, ToolSource

pytestmark = pytest.mark.anyio


def tool(
    name: str, properties: dict[str, Any], required: list[str], *, mutating: bool = False
) -> ToolDefinition:
    schema = {"type": "object", "properties": properties, "required": required}
    return ToolDefinition(name, f"test tool {name}", schema, read_only=not mutating, destructive=mutating)


STRING = {"type": "string"}
TOOLS = [
    tool("get-pod", {"name": STRING, "page-size": {"type": "integer"}, "from": STRING}, ["name"]),
    tool("delete-pod", {"name": STRING}, ["name"], mutating=True),
    tool("fail", {}, []),
    tool("hang", {}, []),
    tool("explode", {}, []),
]
CATALOG = build_catalog(TOOLS)


@dataclass
class Tools(ToolSource):
    """``get-pod`` and ``delete-pod`` answer, ``fail`` is an error result, ``hang`` never answers,
    ``explode`` raises."""

    received: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    started: asyncio.Event = field(default_factory=asyncio.Event)

    def tools(self) -> list[ToolDefinition]:
        return TOOLS

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolCallOutput:
        self.received.append((name, arguments))
        self.started.set()
        if name == "fail":
            return ToolCallOutput.error("pod not found")
        if name == "hang":
            await asyncio.Event().wait()
        if name == "explode":
            raise ValueError("boom")
        return ToolCallOutput(json.dumps({"tool": name, **arguments}))


class Events(Activity):
    def __init__(self) -> None:
        self.seen: list[str] = []

    def call_started(self, call: NestedCall) -> None:
        self.seen.append(f"started {call.function}")

    def call_finished(self, call: NestedCall, seconds: float) -> None:
        self.seen.append(f"{call.outcome()} {call.function}")


class FailingApprover:
    async def approve(self, request: ApprovalRequest) -> Approval:
        raise ValueError("no terminal")


class Allower:
    async def approve(self, request: ApprovalRequest) -> Approval:
        return Approval(True)


class SlowAllower:
    async def approve(self, request: ApprovalRequest) -> Approval:
        await asyncio.sleep(0.1)  # a person taking twice the snippet's wall clock to decide
        return Approval(True)


class RecordingClock(WallClock):
    """A wall clock that only records how it was shortened."""

    def __init__(self) -> None:
        super().__init__(60)
        self.expiries: list[float] = []

    def expire_within(self, seconds: float) -> None:
        self.expiries.append(seconds)


@pytest.fixture(autouse=True)
def library_wording(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wording, "_flags", {})


def dispatcher(tools: Tools, gate: MutationGate | None = None, **limits: Any) -> SnippetDispatcher:
    return SnippetDispatcher(CATALOG, tools, CodeModeLimits(**limits), gate or MutationGate())


# validate_arguments


def test_python_names_become_schema_names_and_none_values_are_dropped() -> None:
    entry = CATALOG["get_pod"]
    assert dict(entry.parameters) == {"name": "name", "page_size": "page-size", "from_": "from"}
    arguments = validate_arguments("get_pod", entry, (), {"name": "web", "page_size": 5, "from_": None})
    assert arguments == {"name": "web", "page-size": 5}


def test_positional_arguments_are_refused_with_the_call_as_it_should_be_written() -> None:
    with pytest.raises(TypeError) as caught:
        validate_arguments("get_pod", CATALOG["get_pod"], ("web",), {})
    assert str(caught.value) == "get_pod() takes keyword arguments only; write get_pod(name='web')"


def test_an_unknown_keyword_lists_the_accepted_ones() -> None:
    with pytest.raises(TypeError) as caught:
        validate_arguments("get_pod", CATALOG["get_pod"], (), {"name": "web", "page-size": 5})
    assert str(caught.value) == (
        "get_pod() got an unexpected keyword argument 'page-size'; accepted: name, page_size, from_ "
        "(did you mean page_size?)"
    )
    with pytest.raises(TypeError, match=r"accepted: \(none\)$"):
        validate_arguments("fail", CATALOG["fail"], (), {"x": 1})


@pytest.mark.parametrize("kwargs", [{}, {"name": None}, {"page_size": 1}])
def test_a_missing_required_argument_is_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(TypeError, match=r"^get_pod\(\) missing required keyword argument 'name'$"):
        validate_arguments("get_pod", CATALOG["get_pod"], (), kwargs)


# SnippetDispatcher.call


async def test_a_call_reaches_the_tool_in_schema_names_and_is_audited() -> None:
    tools, events = Tools(), Events()
    calls = dispatcher(tools)
    calls.activity = events
    reply = await calls.call("get_pod", (), {"name": "web", "page_size": 2})
    assert reply == ("value", {"tool": "get-pod", "name": "web", "page-size": 2})
    assert tools.received == [("get-pod", {"name": "web", "page-size": 2})]
    [entry] = calls.audit()["nested_calls"]
    assert entry == {
        "tool": "get-pod",
        "arguments": {"name": "web", "page-size": 2},
        "is_error": False,
        "bytes": len('{"tool": "get-pod", "name": "web", "page-size": 2}'),
        "mutating": False,
    }
    assert events.seen == ["started get_pod", "finished get_pod"]


async def test_the_nested_call_budget() -> None:
    tools = Tools()
    calls = dispatcher(tools, max_calls=2)
    for name in ("a", "b"):
        await calls.call("get_pod", (), {"name": name})
    with pytest.raises(RuntimeError, match=r"^nested tool call budget exceeded: at most 2 per run_code$"):
        await calls.call("get_pod", (), {"name": "c"})
    assert [arguments["name"] for _, arguments in tools.received] == ["a", "b"]
    assert len(calls.calls) == 2


async def test_finder_functions_are_not_nested_calls() -> None:
    """``search_tools`` and ``describe_tool`` cost no call budget and leave no audit entry."""
    tools = Tools()
    calls = dispatcher(tools, max_calls=1)
    calls.finder = ToolFinder(CATALOG)
    for _ in range(3):
        mode, stub = await calls.call("describe_tool", (), {"name": "delete_pod"})
        assert mode == "value" and stub.startswith("async def delete_pod(*, name: str)")
    mode, found = await calls.call("search_tools", (), {"query": "delete pod", "limit": None})
    assert mode == "value" and found[0]["name"] == "delete_pod"
    assert calls.calls == [] and tools.received == []
    await calls.call("get_pod", (), {"name": "web"})  # the budget of one is still there


async def test_without_a_finder_the_finder_functions_do_not_exist() -> None:
    with pytest.raises(NameError, match=r"^name 'search_tools' is not defined$"):
        await dispatcher(Tools()).call("search_tools", (), {"query": "pods"})


async def test_the_suspension_budget_counts_every_round_trip_and_shortens_the_clock() -> None:
    clock = RecordingClock()
    calls = dispatcher(Tools(), max_suspensions=3)
    calls.clock = clock
    await calls.call("get_pod", (), {"name": "web"})
    with pytest.raises(NameError):
        await calls.call("nope", (), {})
    with pytest.raises(PermissionError, match=OS_DENIED):
        calls.deny_os(function="Path.read_text")
    assert calls.exhausted is None and clock.expiries == []
    for _ in range(2):
        with pytest.raises(RuntimeError, match=r"^suspension limit exceeded: more than 3 tool or OS calls"):
            await calls.call("get_pod", (), {"name": "web"})
    assert calls.exhausted is not None
    assert calls.exhausted.startswith("RuntimeError: suspension limit exceeded")
    assert clock.expiries == [BUDGET_GRACE_SECONDS]  # once, when the budget was first spent
    assert len(calls.calls) == 1


async def test_an_unknown_function_name() -> None:
    tools = Tools()
    calls = dispatcher(tools)
    with pytest.raises(NameError, match=r"^name 'get_pods' is not defined$"):
        await calls.call("get_pods", (), {"name": "web"})
    assert calls.calls == [] and tools.received == []


async def test_a_refused_mutating_call_never_reaches_the_tool() -> None:
    tools, events = Tools(), Events()
    calls = dispatcher(tools, MutationGate("deny"))
    calls.activity = events
    with pytest.raises(PermissionError) as caught:
        await calls.call("delete_pod", (), {"name": "web"})
    assert str(caught.value) == (
        "delete_pod() was not run: mutating calls are denied here (mutations='deny')"
    )
    assert tools.received == []
    assert calls.audit()["nested_calls"] == [
        {"tool": "delete-pod", "arguments": {"name": "web"}, "is_error": True, "bytes": 0, "mutating": True}
        | {"refused": True}
    ]
    assert events.seen == ["started delete_pod", "refused delete_pod"]
    await calls.call("get_pod", (), {"name": "web"})  # read-only calls still run
    assert tools.received == [("get-pod", {"name": "web"})]


async def test_an_approver_that_fails_refuses_rather_than_runs() -> None:
    tools = Tools()
    calls = dispatcher(tools, MutationGate("ask", FailingApprover()))
    with pytest.raises(PermissionError, match=r"the approval could not be asked \(ValueError: no terminal\)"):
        await calls.call("delete_pod", (), {"name": "web"})
    assert tools.received == []


async def test_an_approved_mutating_call_runs() -> None:
    tools = Tools()
    calls = dispatcher(tools, MutationGate("ask", Allower()))
    await calls.call("delete_pod", (), {"name": "web"})
    assert tools.received == [("delete-pod", {"name": "web"})]
    assert calls.calls[0].outcome() == "finished"


async def test_the_wall_clock_stops_while_a_person_decides() -> None:
    tools = Tools()
    calls = dispatcher(tools, MutationGate("ask", SlowAllower()))
    async with WallClock(0.05) as clock:
        calls.clock = clock
        await calls.call("delete_pod", (), {"name": "web"})
    assert tools.received == [("delete-pod", {"name": "web"})]


async def test_a_tool_error_result_is_a_runtime_error_with_its_text() -> None:
    calls = dispatcher(Tools())
    with pytest.raises(RuntimeError, match=r"^pod not found$"):
        await calls.call("fail", (), {})
    [record] = calls.calls
    assert (record.outcome(), record.bytes) == ("failed", len("pod not found"))


async def test_an_exception_in_the_tool_source_reaches_the_snippet_as_a_runtime_error() -> None:
    calls = dispatcher(Tools())
    with pytest.raises(RuntimeError, match=r"^tool error: ValueError: boom$"):
        await calls.call("explode", (), {})
    [record] = calls.calls
    assert record.is_error and record.outcome() == "cut off"  # no answer came back: it may have run


async def test_a_call_that_outlives_the_tool_timeout() -> None:
    calls = dispatcher(Tools(), tool_timeout=0.05)
    with pytest.raises(RuntimeError, match=r"^tool hang timed out after 0.05 s$"):
        await calls.call("hang", (), {})
    [record] = calls.calls
    assert record.is_error and record.outcome() == "failed"


async def test_cancel_in_flight_cuts_off_a_running_call() -> None:
    tools = Tools()
    calls = dispatcher(tools)
    running = asyncio.create_task(calls.call("hang", (), {}))
    await tools.started.wait()
    calls.cancel_in_flight()
    with pytest.raises(asyncio.CancelledError):
        await running
    [record] = calls.calls
    assert record.is_error and record.outcome() == "cut off"
    await calls.settle()  # nothing is left in flight: it returns at once


async def test_settle_cancels_and_waits_for_what_the_snippet_left_running() -> None:
    tools = Tools()
    calls = dispatcher(tools)
    running = asyncio.create_task(calls.call("hang", (), {}))
    await tools.started.wait()
    await calls.settle()
    assert running.cancelled()
    assert calls.calls[0].outcome() == "cut off"


# calls_report


def nested(tool: str, *, mutating: bool = False, answered: bool = True, is_error: bool = False) -> NestedCall:
    return NestedCall(
        tool, {"n": 1}, mutating, is_error=is_error, function=tool.replace("-", "_"), answered=answered
    )


def test_no_calls_no_report() -> None:
    assert calls_report([]) is None


def test_the_report_says_how_each_call_ended() -> None:
    refused = nested("drop", mutating=True)
    refused.refused = True
    report = calls_report(
        [
            nested("get-pod"),
            nested("fail", is_error=True),
            nested("delete-pod", mutating=True),
            nested("patch-pod", mutating=True, answered=False),
            refused,
        ]
    )
    assert report == "\n".join(
        [
            "Nested calls this snippet started before it was stopped (5):",
            "- finished: get_pod(n=1)",
            "- failed: fail(n=1)",
            "- finished: delete_pod(n=1) (mutating: its change was applied)",
            "- cut off: patch_pod(n=1) (mutating: its change may have been applied)",
            "- refused: drop(n=1)",
            "Check what the mutating calls changed before running them again.",
        ]
    )


def test_the_report_lists_every_mutating_call_and_counts_the_read_only_ones_beyond_the_cap() -> None:
    reads = [nested(f"read-{i}", is_error=i % 10 == 9) for i in range(REPORT_CALLS + 5)]
    writes = [nested(f"write-{i}", mutating=True) for i in range(2)]
    report = calls_report([*reads, *writes])
    assert report is not None
    lines = report.splitlines()
    listed = [line for line in lines if line.startswith("- ") and "more read-only" not in line]
    assert len(listed) == REPORT_CALLS
    assert "- finished: write_0(n=1) (mutating: its change was applied)" in lines
    assert "- finished: write_1(n=1) (mutating: its change was applied)" in lines
    shown = REPORT_CALLS - 2  # the read-only calls that fit beside the mutating ones: the first ones
    assert f"- finished: read_{shown - 1}(n=1)" in lines and f"- finished: read_{shown}(n=1)" not in lines
    # read_18 .. read_24 are hidden: read_19 failed, the other six finished.
    assert "- ... and 7 more read-only calls (6 finished, 1 failed)" in lines


def test_mutating_calls_are_listed_even_beyond_the_cap() -> None:
    writes = [nested(f"write-{i}", mutating=True) for i in range(REPORT_CALLS + 3)]
    report = calls_report([nested("read"), *writes])
    assert report is not None
    assert all(f"write_{i}(n=1)" in report for i in range(REPORT_CALLS + 3))
    assert "read(n=1)" not in report
    assert "- ... and 1 more read-only calls (1 finished)" in report


def test_the_report_of_a_call_with_bytes_arguments() -> None:
    call = NestedCall("upload", {"data": b"\x00"}, mutating=True, function="upload", answered=True)
    assert (calls_report([call]) or "").startswith("Nested calls this snippet started")


_SHAPES = [
    ToolDefinition(
        "get", "", {"type": "object", "properties": {"name": {}, "page": {}}, "required": ["name"]}
    ),
    SKILL_FILE_FUNCTION,  # asyncai's own: its first argument by position too (issue 48, item 2)
    SEARCH_TOOLS,
]
_SHAPES_CATALOG = build_catalog(_SHAPES[:1], skills={SKILL_FILE_FUNCTION.name: SKILL_FILE_FUNCTION})


@settings(max_examples=300, deadline=None)
@given(
    tool=st.sampled_from(_SHAPES),
    positional=st.lists(st.text(max_size=3), max_size=3),
    keywords=st.sets(st.sampled_from(["name", "page", "path", "query", "limit", "bogus"])),
)
def test_the_hosts_check_binds_a_call_as_python_binds_its_stub(
    tool: ToolDefinition, positional: list[str], keywords: set[str]
) -> None:
    """A call is refused by the host exactly when Python refuses it against the stub the type
    check uses, and an accepted call's arguments are the ones Python would bind."""
    entry = _SHAPES_CATALOG[tool.name]
    namespace: dict[str, Any] = {"Any": Any}
    exec(render_signature(tool.name, tool).replace(" -> Any: ...", ":\n    return locals()"), namespace)
    kwargs = {name: f"<{name}>" for name in keywords}
    try:
        bound = namespace[tool.name](*positional, **kwargs)
    except TypeError:
        bound = None
    if bound is not None:
        bound = asyncio.run(bound)
    try:
        arguments = validate_arguments(tool.name, entry, tuple(positional), kwargs)
    except TypeError:
        arguments = None
    expected = None if bound is None else {entry.parameters[k]: v for k, v in bound.items() if v is not None}
    assert arguments == expected
