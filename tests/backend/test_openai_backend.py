"""``OpenAiCompatibleBackend`` against the scripted loopback server."""

from __future__ import annotations

import io
import json
import socket
from typing import Any

import pytest

from asyncai.backend import (
    FINAL_ROUND_INSTRUCTION,
    NO_ANSWER_TEXT,
    BackendConfig,
    Message,
    ModelServerError,
    OpenAiCompatibleBackend,
    RunResult,
)
from asyncai.log import dumps_compact
from asyncai.tools.types import ToolCallOutput
from tests.fakes.executors import ECHO, RUN_CODE, FakeToolSource, nested_audit
from tests.fakes.logs import events
from tests.fakes.openai_server import ScriptedOpenAI, ScriptEntry, call, text_reply, tool_reply

pytestmark = pytest.mark.anyio


def config(server: ScriptedOpenAI, **overrides: Any) -> BackendConfig:
    values: dict[str, Any] = {
        "base_url": server.base_url,
        "model": "fake-model",
        "system_prompt": "SYSTEM",
        "backoff_base": 0.001,
        "request_timeout": 10.0,
    }
    values.update(overrides)
    return BackendConfig(**values)


async def run(
    server: ScriptedOpenAI,
    executor: FakeToolSource,
    user_text: str = "question",
    *,
    history: list[Message] | None = None,
    note: str | None = None,
    **overrides: Any,
) -> RunResult:
    async with OpenAiCompatibleBackend(config(server, **overrides)) as backend:
        return await backend.run(history=history or [], user_text=user_text, executor=executor, note=note)


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "tool"]


def assistant_calls(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for m in body["messages"] if m["role"] == "assistant" for c in m.get("tool_calls", [])]


async def test_tool_round_then_answer() -> None:
    executor = FakeToolSource(outputs=[ToolCallOutput('{"answer": 2}')])
    script = [tool_reply(call("run_code", {"code": "1 + 1"}, id="abc")), text_reply("It is 2.")]
    with ScriptedOpenAI(script) as server:
        result = await run(server, executor)
    assert result.reply == "It is 2."
    assert result.rounds == 2 and not result.final_round_forced
    assert [(c.name, c.arguments) for c in executor.log.calls] == [("run_code", {"code": "1 + 1"})]
    first, second = server.requests
    assert [t["function"]["name"] for t in first["tools"]] == ["run_code"]
    assert first["tools"][0]["function"]["parameters"] == RUN_CODE.input_schema
    assert first["messages"] == [
        {"role": "system", "content": "SYSTEM"},
        {"role": "user", "content": "question"},
    ]
    assert second["messages"][2] == {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "abc",
                "type": "function",
                "function": {"name": "run_code", "arguments": '{"code":"1 + 1"}'},
            }
        ],
    }
    assert second["messages"][3] == {"role": "tool", "tool_call_id": "abc", "content": '{"answer": 2}'}
    assert result.messages[-1] == Message("assistant", "It is 2.")
    assert [m.to_wire() for m in result.messages] == [
        *second["messages"][1:],
        {"role": "assistant", "content": "It is 2."},
    ]


async def test_forced_final_round_withdraws_tools() -> None:
    executor = FakeToolSource()
    script = [
        tool_reply(call("run_code", {"code": "explore()"})),
        tool_reply(call("run_code", {"code": "explore(2)"})),
        tool_reply(call("run_code", {"code": "more()"}), content="Partial: 3 pods."),
    ]
    with ScriptedOpenAI(script) as server:
        result = await run(server, executor, max_rounds=3)
    assert result.reply == "Partial: 3 pods."
    assert result.final_round_forced and result.rounds == 3
    assert len(server.requests) == 3
    assert "tools" in server.requests[0] and "tools" in server.requests[1]
    assert "tools" not in server.requests[2]
    assert server.requests[2]["messages"][-1] == {"role": "user", "content": FINAL_ROUND_INSTRUCTION}
    assert len(executor.log.calls) == 2  # the final round's call was ignored


async def test_final_round_without_text_gets_fallback() -> None:
    script = [tool_reply(call("run_code", {"code": "x"})), tool_reply(call("run_code", {"code": "y"}))]
    with ScriptedOpenAI(script) as server:
        result = await run(server, FakeToolSource(), max_rounds=2)
    assert result.final_round_forced
    # Never an empty reply: it says what happened, and what the last tool result was.
    assert (
        result.reply
        == "(no answer was produced: the model returned no text; the last tool result was: ok run_code)"
    )
    assert result.reply.startswith(NO_ANSWER_TEXT[:-1])


async def test_no_tools_means_no_tools_key_and_no_forcing() -> None:
    with ScriptedOpenAI([text_reply("hi")]) as server:
        result = await run(server, FakeToolSource(tools=[]), max_rounds=1)
    assert result.reply == "hi" and not result.final_round_forced
    assert "tools" not in server.requests[0]
    assert server.requests[0]["messages"][-1] == {"role": "user", "content": "question"}


async def test_malformed_arguments_become_errors_or_repairs() -> None:
    executor = FakeToolSource(handler=lambda scope, name, args: ToolCallOutput(f"ran {args['code']}"))
    bad = tool_reply(
        {"name": "run_code", "arguments": "print(1)", "id": "c1"},
        {"name": "run_code", "arguments": "", "id": "c2"},
        {"name": "run_code", "arguments": {"code": "as_object"}, "id": "c3"},
        {"name": "run_code", "arguments": '```json\n{"code": "fenced"}\n```', "id": "c4"},
        {"name": "run_code", "arguments": '{"code": "prose"} Running it now.', "id": "c5"},
        {"name": "run_code", "arguments": "[1, 2]", "id": "c6"},
        {"name": "kubectl", "arguments": "{}", "id": "c7"},
    )
    with ScriptedOpenAI([bad, text_reply("done")]) as server:
        result = await run(server, executor)
    assert result.reply == "done"
    assert [c.arguments for c in executor.log.calls] == [
        {"code": "as_object"},
        {"code": "fenced"},
        {"code": "prose"},
    ]
    tools = {m["tool_call_id"]: m["content"] for m in tool_messages(server.requests[1])}
    assert tools["c1"] == (
        'error: the arguments for run_code were not a JSON object: print(1). Send {"code": "..."} as JSON.'
    )
    assert tools["c2"] == 'error: the arguments for run_code were empty. Send {"code": "..."} as JSON.'
    assert tools["c3"] == "ran as_object"
    assert tools["c4"] == "ran fenced"
    assert tools["c5"] == "ran prose"
    assert tools["c6"].startswith(
        "error: the arguments for run_code were a JSON array, not an object: [1, 2]."
    )
    assert tools["c7"] == (
        "error: unknown tool 'kubectl'. Available tools: run_code. "
        'Call run_code with Python code: {"code": "..."}.'
    )
    stored = {c["id"]: c["function"]["arguments"] for c in assistant_calls(server.requests[1])}
    assert stored == {
        "c1": "{}",
        "c2": "{}",
        "c3": '{"code":"as_object"}',
        "c4": '{"code":"fenced"}',
        "c5": '{"code":"prose"}',
        "c6": "{}",
        "c7": "{}",
    }
    assert "content" not in server.requests[1]["messages"][2]  # content: null next to tool calls


async def test_missing_and_duplicate_ids_are_repaired_consistently() -> None:
    executor = FakeToolSource(tools=[ECHO], handler=lambda s, n, a: ToolCallOutput(a["text"]))
    first = tool_reply(
        call("echo", {"text": "a"}, id=None),
        call("echo", {"text": "b"}, id=""),
        call("echo", {"text": "c"}, id="dup"),
        call("echo", {"text": "d"}, id="dup"),
    )
    second = tool_reply(call("echo", {"text": "e"}, id="dup"))
    with ScriptedOpenAI([first, second, text_reply("ok")]) as server:
        await run(server, executor)
    body = server.requests[2]
    ids = [c["id"] for c in assistant_calls(body)]
    assert len(ids) == len(set(ids)) == 5
    assert ids[2] == "dup"
    pairs = [(m["tool_call_id"], m["content"]) for m in tool_messages(body)]
    assert pairs == list(zip(ids, ["a", "b", "c", "d", "e"], strict=True))


async def test_finish_reason_is_not_trusted() -> None:
    executor = FakeToolSource()
    script = [
        tool_reply(call("run_code", {"code": "1"}), finish_reason="stop"),
        text_reply("answer", finish_reason="tool_calls"),
    ]
    with ScriptedOpenAI(script) as server:
        result = await run(server, executor)
    assert len(executor.log.calls) == 1
    assert result.reply == "answer" and result.rounds == 2


@pytest.mark.parametrize(
    "quirks",
    [
        {"arg_chunk": 1},
        {"arg_chunk": 1, "all_index_zero": True},
        {"arg_chunk": 3, "all_index_zero": True, "resend_name": True},
        {"arg_chunk": 2, "fresh_ids": True},
    ],
)
async def test_streaming_tool_calls(quirks: dict[str, Any]) -> None:
    executor = FakeToolSource(tools=[ECHO, RUN_CODE], handler=lambda s, n, a: ToolCallOutput(json.dumps(a)))
    script = [
        tool_reply(call("echo", {"text": "first"}), call("run_code", {"code": "x = [1, 2]"}), **quirks),
        text_reply("streamed answer", content_chunk=2),
    ]
    with ScriptedOpenAI(script) as server:
        result = await run(server, executor, stream=True)
    assert result.reply == "streamed answer"
    assert sorted((c.name, json.dumps(c.arguments)) for c in executor.log.calls) == [
        ("echo", '{"text": "first"}'),
        ("run_code", '{"code": "x = [1, 2]"}'),
    ]
    assert server.requests[0]["stream"] is True
    assert server.requests[0]["stream_options"] == {"include_usage": True}
    calls = assistant_calls(server.requests[1])
    assert [c["function"]["name"] for c in calls] == ["echo", "run_code"]
    assert len({c["id"] for c in calls}) == 2


async def test_stream_requested_but_server_answers_json() -> None:
    with ScriptedOpenAI([text_reply("plain", stream=False)]) as server:
        result = await run(server, FakeToolSource(), stream=True)
    assert result.reply == "plain"


async def test_calls_in_one_message_run_concurrently_in_call_order() -> None:
    executor = FakeToolSource(
        tools=[ECHO], handler=lambda s, n, a: ToolCallOutput(a["text"].upper()), concurrency_gate=2
    )
    script = [tool_reply(call("echo", {"text": "one"}), call("echo", {"text": "two"})), text_reply("ok")]
    with ScriptedOpenAI(script) as server:
        await run(server, executor)
    assert executor.log.max_active == 2
    assert [m["content"] for m in tool_messages(server.requests[1])] == ["ONE", "TWO"]


async def test_tool_exception_becomes_error_result() -> None:
    def boom(scope: FakeToolSource, name: str, args: dict[str, Any]) -> ToolCallOutput:
        raise RuntimeError("sandbox died")

    script = [tool_reply(call("run_code", {"code": "1"})), text_reply("sorry")]
    with ScriptedOpenAI(script) as server:
        result = await run(server, FakeToolSource(handler=boom))
    assert result.reply == "sorry"
    [message] = tool_messages(server.requests[1])
    assert message["content"] == "error: tool run_code failed: RuntimeError: sandbox died"


async def test_429_then_success_is_retried() -> None:
    script: list[ScriptEntry] = [
        {"status": 429, "headers": {"Retry-After": "0"}},
        {"status": 503},
        text_reply("finally"),
    ]
    with ScriptedOpenAI(script) as server:
        result = await run(server, FakeToolSource())
    assert result.reply == "finally"
    assert len(server.requests) == 3
    assert server.requests[0] == server.requests[2]


async def test_persistent_500_is_a_clear_error() -> None:
    script = [{"status": 500, "error": "CUDA out of memory"}] * 3
    with ScriptedOpenAI(script) as server:
        with pytest.raises(ModelServerError) as caught:
            await run(server, FakeToolSource(), max_retries=2)
        assert len(server.requests) == 3
    message = str(caught.value)
    assert "\n" not in message
    assert f"{server.base_url}/chat/completions" in message
    assert "HTTP 500: CUDA out of memory" in message and "after 3 attempts" in message
    assert caught.value.status == 500


@pytest.mark.parametrize(
    ("status", "hint"), [(401, "check --api-key"), (404, "check --base-url"), (400, "--model")]
)
async def test_client_errors_are_not_retried(status: int, hint: str) -> None:
    with ScriptedOpenAI([{"status": status}, text_reply("never")]) as server:
        with pytest.raises(ModelServerError, match=hint) as caught:
            await run(server, FakeToolSource())
        assert len(server.requests) == 1
    assert caught.value.status == status


async def test_a_long_error_body_is_cut_to_the_preview_limit() -> None:
    with (
        ScriptedOpenAI([{"status": 400, "error": "e" * 1000}]) as server,
        pytest.raises(ModelServerError) as caught,
    ):
        await run(server, FakeToolSource())
    detail = str(caught.value).split("HTTP 400: ", 1)[1].split(" ", 1)[0]
    assert detail == "e" * 297 + "..."


async def test_connection_refused_names_the_url() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    backend = OpenAiCompatibleBackend(
        BackendConfig(base_url=url, model="m", max_retries=1, backoff_base=0.001)
    )
    async with backend:
        with pytest.raises(ModelServerError) as caught:
            await backend.run(history=[], user_text="hi", executor=FakeToolSource())
    message = str(caught.value)
    assert f"{url}/chat/completions" in message
    assert "is the server running? is --base-url right?" in message
    assert caught.value.status is None


async def test_non_completion_body_is_a_clear_error() -> None:
    script: list[ScriptEntry] = [{"raw": "<html>nginx</html>", "media_type": "text/html"}]
    with (
        ScriptedOpenAI(script) as server,
        pytest.raises(ModelServerError, match="did not send a chat completion"),
    ):
        await run(server, FakeToolSource())


async def test_api_key_is_sent_as_bearer() -> None:
    with ScriptedOpenAI([text_reply("hi")]) as server:
        await run(server, FakeToolSource(), api_key="sk-test")
    assert server.request_headers[0]["authorization"] == "Bearer sk-test"


async def test_prefix_is_byte_stable_and_note_goes_to_newest_user_message() -> None:
    note = "[run_code variables still in scope: pods: list[80]]"
    executor = FakeToolSource()
    script = [tool_reply(call("run_code", {"code": "len(pods)"})), text_reply("80 pods"), text_reply("80")]
    history = [Message("user", "list pods"), Message("assistant", "I stored them in pods.")]
    with ScriptedOpenAI(script) as server:
        await run(server, executor, "how many?", history=history, note=note)
        await run(server, executor, "how many?", history=history, note="[a different note]", max_rounds=1)
    first, second, third = server.requests
    tools_bytes = dumps_compact(first["tools"]).encode()
    assert b'"tools":' + tools_bytes in server.raw_requests[0]
    assert b'"tools":' + tools_bytes in server.raw_requests[1]
    assert (
        first["messages"][0]
        == second["messages"][0]
        == third["messages"][0]
        == {
            "role": "system",
            "content": "SYSTEM",
        }
    )
    assert note not in json.dumps(first["messages"][0]) and note not in json.dumps(first["tools"])
    assert first["messages"][1:] == [
        {"role": "user", "content": "list pods"},
        {"role": "assistant", "content": "I stored them in pods."},
        {"role": "user", "content": f"how many?\n\n{note}"},
    ]
    assert second["messages"][: len(first["messages"])] == first["messages"]
    # max_rounds=1: the only round is the tool-free final round; the note stays in the run's user message
    assert "tools" not in third
    assert third["messages"][-2]["content"] == "how many?\n\n[a different note]"


async def test_turn_summary_and_log_events(log_stream: io.StringIO) -> None:
    executor = FakeToolSource(
        outputs=[
            ToolCallOutput("abc", audit=nested_audit(100, 250)),
            ToolCallOutput("défg", audit=nested_audit(50)),
            ToolCallOutput('{"n": 1}', is_error=True),
        ]
    )
    script = [
        tool_reply(call("run_code", {"code": "a"}), call("run_code", {"code": "b"})),
        tool_reply(call("run_code", {"code": "c"})),
        text_reply("done"),
    ]
    with ScriptedOpenAI(script) as server:
        async with OpenAiCompatibleBackend(config(server)) as backend:
            await backend.run(history=[], user_text="q", executor=executor, thread_id="t1", run_id=7)
    [summary] = events(log_stream, "model.turn_summary")
    assert summary["level"] == "info"
    assert {k: summary[k] for k in summary if k not in ("ts", "level", "event")} == {
        "rounds": 3,
        "run_code_calls": 3,
        "nested_calls": 3,
        "bytes_in": 400,
        "bytes_out": 3 + 5 + 8,
        "final_round_forced": False,
        "tool_errors": 1,
        "repaired": 0,
        "thread": "t1",
        "run": 7,
    }
    requests = events(log_stream, "model.request")
    assert [(r["round"], r["message_count"], r["tools"]) for r in requests] == [
        (1, 2, ["run_code"]),
        (2, 5, ["run_code"]),
        (3, 7, ["run_code"]),
    ]
    calls = events(log_stream, "model.tool_call")
    assert [(c["tool"], c["arguments"]) for c in calls] == [
        ("run_code", {"code": "a"}),
        ("run_code", {"code": "b"}),
        ("run_code", {"code": "c"}),
    ]
    results = events(log_stream, "model.tool_result")
    assert [(r["tool"], r["is_error"], r["content"]) for r in results] == [
        ("run_code", False, "abc"),
        ("run_code", False, "défg"),
        ("run_code", True, {"n": 1}),
    ]


async def test_turn_summary_on_failure_and_forced_round(log_stream: io.StringIO) -> None:
    with ScriptedOpenAI([tool_reply(call("run_code", {"code": "x"})), text_reply("ok")]) as server:
        await run(server, FakeToolSource(), max_rounds=2)
    with ScriptedOpenAI([{"status": 500}]) as server, pytest.raises(ModelServerError):
        await run(server, FakeToolSource(), max_retries=0)
    forced, failed = events(log_stream, "model.turn_summary")
    assert forced["final_round_forced"] is True and forced["rounds"] == 2
    assert "HTTP 500" in failed["error"]
