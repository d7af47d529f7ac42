"""The runtime: per-thread history and scope, concurrency across threads, coalesced follow-ups."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from asyncai.backend import (
    BackendConfig,
    Message,
    ModelServerError,
    OpenAiCompatibleBackend,
    RunResult,
    SessionHarness,
)
from asyncai.runtime import RunReply, RunRequest, Runtime
from asyncai.tools.types import ToolCallOutput, ToolSource
from tests.fakes.executors import FakeScopes, FakeToolSource
from tests.fakes.openai_server import ScriptedOpenAI, call, text_reply, tool_reply

pytestmark = pytest.mark.anyio

WAIT = 5.0  # a safety net against hangs, never a synchronisation device


@dataclass
class RunCall:
    history: list[Message]
    user_text: str
    executor: ToolSource
    note: str | None
    thread_id: str | None
    run_id: int | str | None


@dataclass
class FakeBackend:
    """A backend whose runs are scripted by an async hook; records every call."""

    hook: Callable[[RunCall], Awaitable[str]] | None = None
    calls: list[RunCall] = field(default_factory=list)
    active: dict[str, int] = field(default_factory=dict)
    max_active_per_thread: int = 0

    async def run(
        self,
        *,
        history: Sequence[Message],
        user_text: str,
        executor: ToolSource,
        note: str | None = None,
        thread_id: str | None = None,
        run_id: int | str | None = None,
        session: SessionHarness | None = None,
    ) -> RunResult:
        record = RunCall(list(history), user_text, executor, note, thread_id, run_id)
        self.calls.append(record)
        key = thread_id or ""
        self.active[key] = self.active.get(key, 0) + 1
        self.max_active_per_thread = max(self.max_active_per_thread, self.active[key])
        try:
            reply = await self.hook(record) if self.hook else f"reply to {user_text}"
        finally:
            self.active[key] -= 1
        user_message = f"{user_text}\n\n{note}" if note else user_text
        return RunResult(reply=reply, messages=(Message("user", user_message), Message("assistant", reply)))


async def test_threads_keep_history_and_scope() -> None:
    backend = FakeBackend()
    executor = FakeToolSource(note="[vars: x]")
    runtime = Runtime(backend, FakeScopes(executor))
    first = await runtime.submit(RunRequest("t1", "hello"))
    second = await runtime.submit(RunRequest("t1", "again"))
    other = await runtime.submit(RunRequest("t2", "elsewhere"))
    assert (first.run, second.run, other.run) == (1, 2, 3)
    assert first.reply == "reply to hello" and first.texts == ("hello",) and first.ok
    assert backend.calls[0].history == []
    assert backend.calls[1].history == [
        Message("user", "hello\n\n[vars: x]"),
        Message("assistant", "reply to hello"),
    ]
    assert backend.calls[2].history == []
    assert backend.calls[0].executor is backend.calls[1].executor is executor.scopes["t1"]
    assert backend.calls[2].executor is executor.scopes["t2"]
    assert backend.calls[0].note == "[vars: x]"
    assert [(c.thread_id, c.run_id) for c in backend.calls] == [("t1", 1), ("t1", 2), ("t2", 3)]
    assert runtime.history("t1")[-1] == Message("assistant", "reply to again")
    assert second.to_json() == {"thread": "t1", "reply": "reply to again", "run": 2}


async def test_run_scope_is_fresh_per_run_and_closed() -> None:
    backend = FakeBackend()
    executor = FakeToolSource()
    runtime = Runtime(backend, FakeScopes(executor, per_run=True))
    await runtime.submit(RunRequest("t", "a"))
    await runtime.submit(RunRequest("t", "b"))
    first, second = executor.run_scopes_made
    assert first is not second and first.closed and second.closed
    assert [c.executor for c in backend.calls] == [first, second]


async def test_executor_without_scopes_is_used_directly() -> None:
    backend = FakeBackend()
    executor = FakeToolSource()
    await Runtime(backend, executor).submit(RunRequest("t", "a"))
    assert backend.calls[0].executor is executor and not executor.closed


async def test_two_threads_run_concurrently() -> None:
    started = {"a": asyncio.Event(), "b": asyncio.Event()}

    async def hook(call: RunCall) -> str:
        me = call.thread_id or ""
        other = "b" if me == "a" else "a"
        started[me].set()
        # Each run finishes only once the other thread's run has started: sequential runs would
        # time out here instead of passing.
        await asyncio.wait_for(started[other].wait(), WAIT)
        return f"done {me}"

    runtime = Runtime(FakeBackend(hook), FakeScopes(FakeToolSource()))
    replies = await asyncio.gather(runtime.submit(RunRequest("a", "x")), runtime.submit(RunRequest("b", "y")))
    assert [r.reply for r in replies] == ["done a", "done b"]


async def test_busy_thread_coalesces_queued_messages_into_one_run() -> None:
    first_started = asyncio.Event()
    release = asyncio.Event()

    async def hook(call: RunCall) -> str:
        if call.run_id == 1:
            first_started.set()
            await asyncio.wait_for(release.wait(), WAIT)
        return f"answer to {call.user_text!r}"

    delivered: list[RunReply] = []
    backend = FakeBackend(hook)
    runtime = Runtime(backend, FakeScopes(FakeToolSource()), on_reply=delivered.append)
    first = runtime.post(RunRequest("t", "first"))
    await asyncio.wait_for(first_started.wait(), WAIT)
    assert runtime.busy("t")
    queued = [runtime.post(RunRequest("t", text)) for text in ("a", "b", "c")]
    other = runtime.post(RunRequest("u", "independent"))
    release.set()
    first_reply = await first
    replies = await asyncio.gather(*queued)
    await other
    await runtime.wait_idle()
    assert first_reply.run == 1 and first_reply.texts == ("first",)
    assert replies[0] is replies[1] is replies[2]
    follow_up = replies[0]
    assert follow_up.texts == ("a", "b", "c")
    assert follow_up.reply == "answer to 'a\\n\\nb\\n\\nc'"
    t_calls = [c for c in backend.calls if c.thread_id == "t"]
    assert [c.user_text for c in t_calls] == ["first", "a\n\nb\n\nc"]
    assert t_calls[1].history == [Message("user", "first"), Message("assistant", "answer to 'first'")]
    assert backend.max_active_per_thread == 1
    assert [(r.thread_id, r.texts) for r in delivered if r.thread_id == "t"] == [
        ("t", ("first",)),
        ("t", ("a", "b", "c")),
    ]
    assert len(delivered) == 3
    assert not runtime.busy("t")


async def test_failed_run_keeps_thread_usable() -> None:
    async def hook(call: RunCall) -> str:
        if call.run_id == 1:
            raise ModelServerError("cannot connect to the model server at http://x (check)", url="http://x")
        return "recovered"

    backend = FakeBackend(hook)
    delivered: list[dict[str, Any]] = []

    async def on_reply(reply: RunReply) -> None:
        delivered.append(reply.to_json())

    runtime = Runtime(backend, FakeToolSource(), on_reply=on_reply)
    failed = await runtime.submit(RunRequest("t", "first"))
    assert not failed.ok and failed.reply == ""
    assert failed.error == "cannot connect to the model server at http://x (check)"
    ok = await runtime.submit(RunRequest("t", "second"))
    assert ok.reply == "recovered"
    assert backend.calls[1].history == []  # the failed exchange is not history
    assert delivered == [
        {
            "thread": "t",
            "reply": "",
            "run": 1,
            "error": "cannot connect to the model server at http://x (check)",
        },
        {"thread": "t", "reply": "recovered", "run": 2},
    ]


async def test_on_reply_failure_does_not_break_delivery() -> None:
    def on_reply(reply: RunReply) -> None:
        raise OSError("stdout closed")

    runtime = Runtime(FakeBackend(), FakeToolSource(), on_reply=on_reply)
    reply = await runtime.submit(RunRequest("t", "x"))
    assert reply.reply == "reply to x"


async def test_aclose_cancels_in_flight_and_waiting() -> None:
    started = asyncio.Event()

    async def hook(call: RunCall) -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    runtime = Runtime(FakeBackend(hook), FakeToolSource())
    running = runtime.post(RunRequest("t", "a"))
    waiting = runtime.post(RunRequest("t", "b"))
    await asyncio.wait_for(started.wait(), WAIT)
    waiting_too = runtime.post(RunRequest("t", "c"))
    await runtime.aclose()
    assert running.cancelled() and waiting_too.cancelled()
    assert waiting.cancelled() or waiting.done()
    with pytest.raises(RuntimeError):
        runtime.post(RunRequest("t", "d"))


async def test_runtime_with_real_backend_keeps_thread_history_and_repl_scope() -> None:
    def handler(scope: FakeToolSource, name: str, args: dict[str, Any]) -> ToolCallOutput:
        scope.state["runs"] = scope.state.get("runs", 0) + 1
        return ToolCallOutput(str(scope.state["runs"]))

    executor = FakeToolSource(handler=handler)
    script = [
        tool_reply(call("run_code", {"code": "x = 1"})),
        text_reply("stored x"),
        tool_reply(call("run_code", {"code": "x"})),
        text_reply("x is 1"),
    ]
    with ScriptedOpenAI(script) as server:
        config = BackendConfig(base_url=server.base_url, model="m", system_prompt="SYS", backoff_base=0.001)
        async with OpenAiCompatibleBackend(config) as backend:
            runtime = Runtime(backend, FakeScopes(executor))
            first = await runtime.submit(RunRequest("t1", "store x"))
            second = await runtime.submit(RunRequest("t1", "what is x?"))
    assert (first.reply, second.reply) == ("stored x", "x is 1")
    assert second.result is not None and second.result.rounds == 2
    third_request = server.requests[2]["messages"]
    # The thread's history is every message of the earlier run, its run_code call and result included.
    first_call = server.requests[1]["messages"][2]
    assert first_call["tool_calls"][0]["function"]["arguments"] == '{"code":"x = 1"}'
    assert third_request == [
        {"role": "system", "content": "SYS"},
        {"role": "user", "content": "store x"},
        first_call,
        {"role": "tool", "tool_call_id": first_call["tool_calls"][0]["id"], "content": "1"},
        {"role": "assistant", "content": "stored x"},
        {"role": "user", "content": "what is x?"},
    ]
    assert [m["content"] for m in server.requests[3]["messages"] if m["role"] == "tool"] == ["1", "2"]
    assert runtime.history("t1")[-1] == Message("assistant", "x is 1")
    assert [c.scope for c in executor.log.calls] == ["thread:t1", "thread:t1"]
