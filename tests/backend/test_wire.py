"""Pure wire functions: argument repair, id repair, stream accumulation, request bodies."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from asyncai.backend import BackendConfig, Message, wire
from asyncai.backend.calls import assistant_message, prepare_calls, repair_ids
from asyncai.backend.decoding import ArgumentsError, parse_arguments
from asyncai.backend.unfinished import unfinished_reply
from asyncai.backend.wire import RawToolCall, StreamAccumulator
from asyncai.log import dumps_compact
from tests.fakes.executors import ECHO, RUN_CODE

TOOLS = {RUN_CODE.name: RUN_CODE, ECHO.name: ECHO}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"code": "1 + 1"}', {"code": "1 + 1"}),
        ({"code": "x"}, {"code": "x"}),
        ('```json\n{"code": "y"}\n```', {"code": "y"}),
        ('```\n{"code": "y"}\n```', {"code": "y"}),
        ('{"code": "z"} I will now run this.', {"code": "z"}),
        ('Here you go: {"code": "z"}', {"code": "z"}),
        ("{'code': 'q', 'restart': True,}", {"code": "q", "restart": True}),
        (json.dumps(json.dumps({"code": "twice"})), {"code": "twice"}),
        ('  {"code": "ws"}  \n', {"code": "ws"}),
    ],
)
def test_parse_arguments_repairs(raw: Any, expected: dict[str, Any]) -> None:
    assert parse_arguments(raw) == expected


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        (None, "empty"),
        ("code = 1 + 1", "not a JSON object"),
        ('{"code": "unterminated', "not a JSON object"),
        ("[1, 2]", "a JSON array, not an object"),
        ('"just text"', "a JSON string, not an object"),
        ("42", "a JSON number, not an object"),
        ("null", "a JSON null, not an object"),
        (["a"], "a JSON list, not an object"),
    ],
)
def test_parse_arguments_errors(raw: Any, reason: str) -> None:
    result = parse_arguments(raw)
    assert isinstance(result, ArgumentsError)
    assert result.reason == reason


def test_argument_preview_is_bounded() -> None:
    result = parse_arguments("x" * 5000)
    assert isinstance(result, ArgumentsError)
    assert len(result.preview) < 300
    assert "more chars" in result.preview


def test_repair_ids() -> None:
    assert repair_ids(["a", None, "a", "call_1", None]) == ["a", "call_2", "call_3", "call_1", "call_4"]
    assert repair_ids(["x"], used={"x"}) == ["call_1"]
    assert repair_ids([None, None], used={"call_1"}) == ["call_2", "call_3"]


def test_prepare_calls_errors_and_repairs() -> None:
    calls = [
        RawToolCall(id="c1", name="run_code", arguments="not json"),
        RawToolCall(id="c1", name="run_code", arguments=""),
        RawToolCall(id=None, name="nope", arguments="{}"),
        RawToolCall(id=None, name=None, arguments="{}"),
        RawToolCall(id="c5", name="run_code", arguments={"code": "1"}),
        RawToolCall(id="c6", name="noargs", arguments=""),
    ]
    noargs = RUN_CODE.__class__(name="noargs", description="", input_schema={"type": "object"})
    prepared = prepare_calls(calls, {**TOOLS, "noargs": noargs})
    assert [p.id for p in prepared] == ["c1", "call_1", "call_2", "call_3", "c5", "c6"]
    assert prepared[0].error == (
        'error: the arguments for run_code were not a JSON object: not json. Send {"code": "..."} as JSON.'
    )
    assert prepared[1].error == 'error: the arguments for run_code were empty. Send {"code": "..."} as JSON.'
    assert prepared[2].error == (
        "error: unknown tool 'nope'. Available tools: echo, noargs, run_code. "
        'Call run_code with Python code: {"code": "..."}.'
    )
    assert prepared[3].error is not None and "no function name" in prepared[3].error
    assert prepared[4].ok and prepared[4].arguments == {"code": "1"}
    assert prepared[4].arguments_json == '{"code":"1"}'
    assert prepared[5].ok and prepared[5].arguments == {}
    assert all(p.arguments is None for p in prepared[:4])
    assert all(p.arguments_json == "{}" for p in prepared[:4])


def test_assistant_message_omits_null_content_next_to_calls() -> None:
    [call] = prepare_calls([RawToolCall(id="a", name="run_code", arguments='{"code":"1"}')], TOOLS)
    assert "content" not in assistant_message(None, [call]).to_wire()
    assert "content" not in assistant_message("", [call]).to_wire()
    assert assistant_message("thinking", [call]).to_wire()["content"] == "thinking"
    assert assistant_message(None, []).to_wire() == {"role": "assistant", "content": ""}


def test_tool_specs_are_sorted_and_stable() -> None:
    specs = wire.tool_specs([RUN_CODE, ECHO])
    assert [s["function"]["name"] for s in specs] == ["echo", "run_code"]
    assert dumps_compact(specs) == dumps_compact(wire.tool_specs([ECHO, RUN_CODE]))
    assert specs[1]["function"]["parameters"] == RUN_CODE.input_schema


def test_request_body_without_tools_has_no_tools_key() -> None:
    config = BackendConfig(base_url="http://x/v1", model="m", system_prompt="SYS")
    body = wire.build_request_body(
        config,
        history=[Message("user", "hi"), Message("assistant", "hello")],
        run_messages=[Message("user", "q")],
        tools=None,
        final_instruction="answer now",
    )
    assert "tools" not in body
    assert body["messages"] == [
        {"role": "system", "content": "SYS"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "q"},
        {"role": "user", "content": "answer now"},
    ]
    assert body["model"] == "m" and body["stream"] is False


def test_user_message_text_appends_note_paragraph() -> None:
    assert wire.user_message_text("q", None) == "q"
    assert wire.user_message_text("q", "  ") == "q"
    assert wire.user_message_text("q", "[vars: a]\n") == "q\n\n[vars: a]"


def test_chat_url() -> None:
    assert BackendConfig(base_url="http://h/v1/", model="m").chat_url == "http://h/v1/chat/completions"
    assert BackendConfig(base_url="http://h/v1/chat/completions", model="m").chat_url.endswith(
        "/v1/chat/completions"
    )


def _chunk(delta: dict[str, Any] | None = None, finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}]}


def _call_delta(index: int | None, **fields: Any) -> dict[str, Any]:
    function = {k: fields.pop(k) for k in ("name", "arguments") if k in fields}
    delta: dict[str, Any] = {"function": function, **fields}
    if index is not None:
        delta["index"] = index
    return _chunk({"tool_calls": [delta]})


def test_stream_split_deltas_and_resent_names() -> None:
    acc = StreamAccumulator()
    acc.feed(_chunk({"role": "assistant", "content": None}))
    acc.feed(_call_delta(0, id="a", name="run_code", arguments=""))
    for piece in '{"code": "1+1"}':
        acc.feed(_call_delta(0, name="run_code", arguments=piece))
    acc.feed(_chunk(finish="stop"))
    acc.feed({"choices": [], "usage": {"total_tokens": 3}})
    turn = acc.result()
    assert turn.content is None
    assert turn.tool_calls == (RawToolCall(id="a", name="run_code", arguments='{"code": "1+1"}'),)
    assert turn.finish_reason == "stop"
    assert turn.usage == {"total_tokens": 3}


def test_stream_all_calls_at_index_zero() -> None:
    acc = StreamAccumulator()
    acc.feed(_call_delta(0, id="a", name="echo", arguments='{"text": "a"}'))
    acc.feed(_call_delta(0, id="b", name="echo", arguments=""))
    acc.feed(_call_delta(0, arguments='{"text"'))
    acc.feed(_call_delta(0, arguments=': "b"}'))
    acc.feed(_call_delta(0, id="c", name="run_code", arguments='{"code": "c"}'))
    calls = acc.result().tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("a", "echo", '{"text": "a"}'),
        ("b", "echo", '{"text": "b"}'),
        ("c", "run_code", '{"code": "c"}'),
    ]


def test_stream_fresh_id_per_chunk_stays_one_call() -> None:
    acc = StreamAccumulator()
    acc.feed(_call_delta(0, id="x1", name="run_code", arguments='{"co'))
    acc.feed(_call_delta(0, id="x2", arguments='de": "1"}'))
    acc.feed(_call_delta(0, id="x3", arguments=""))
    [call] = acc.result().tool_calls
    assert call.id == "x1" and call.arguments == '{"code": "1"}'


def test_stream_arguments_as_object_and_missing_index() -> None:
    acc = StreamAccumulator()
    acc.feed(_call_delta(None, id=None, name="echo", arguments={"text": "a"}))
    acc.feed(_call_delta(None, name="echo", arguments={"text": "b"}))
    calls = acc.result().tool_calls
    assert [(c.id, c.arguments) for c in calls] == [(None, {"text": "a"}), (None, {"text": "b"})]


def test_stream_content_and_reasoning() -> None:
    acc = StreamAccumulator()
    for piece in ["He", "llo"]:
        acc.feed(_chunk({"content": piece}))
    acc.feed(_chunk({"reasoning_content": "hmm"}))
    turn = acc.result()
    assert turn.content == "Hello" and turn.reasoning_content == "hmm" and turn.tool_calls == ()


def test_stream_error_chunk_raises() -> None:
    with pytest.raises(wire.ResponseFormatError, match="boom"):
        StreamAccumulator().feed({"error": {"message": "boom"}})


def test_parse_completion_shapes() -> None:
    body = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                    "tool_calls": [{"id": 7, "function": {"name": " echo ", "arguments": {"text": "x"}}}],
                },
                "finish_reason": "stop",
            }
        ]
    }
    turn = wire.parse_completion(body)
    assert turn.content == "ab"
    assert turn.tool_calls == (RawToolCall(id="7", name="echo", arguments={"text": "x"}),)
    legacy = {
        "choices": [{"message": {"content": None, "function_call": {"name": "echo", "arguments": "{}"}}}]
    }
    assert wire.parse_completion(legacy).tool_calls[0].name == "echo"
    with pytest.raises(wire.ResponseFormatError):
        wire.parse_completion({"choices": []})
    with pytest.raises(wire.ResponseFormatError, match="overloaded"):
        wire.parse_completion({"error": {"message": "overloaded"}})


_PROSE = st.text(st.characters(exclude_characters="`", exclude_categories=["Cs"]), max_size=80)
_PROGRAMS = st.sampled_from(["x = 1", "print(x)", "import json", "for i in xs:\n    n += i", "await f(a=1)"])
_VALUES = st.sampled_from(["{'a': 1}", "[1, 2]", "a.txt\nb.txt", "42", "'text'"])


@given(_PROSE, st.booleans())
def test_prose_is_an_answer_unless_empty_or_cut_at_a_colon(prose: str, code_is_no_answer: bool) -> None:
    reply = prose.strip()
    expected = "empty" if not reply else "cut_short" if reply.endswith(":") else None
    assert unfinished_reply(reply, code_is_no_answer=code_is_no_answer) == expected


@given(_PROSE, st.sampled_from(["python", "py", ""]), _PROGRAMS, _VALUES, st.booleans())
def test_a_fenced_program_is_no_answer_only_where_code_is_none(
    prose: str, lang: str, program: str, value: str, code_is_no_answer: bool
) -> None:
    shown_value = f"{prose}\n```{lang}\n{value}\n```\ndone."
    assert unfinished_reply(shown_value, code_is_no_answer=code_is_no_answer) is None
    shown_program = f"{prose}\n```{lang}\n{program}\n```\ndone."
    expected = "code" if code_is_no_answer else None
    assert unfinished_reply(shown_program, code_is_no_answer=code_is_no_answer) == expected
    in_json = f"{prose}\n```json\n{program}\n```\ndone."
    assert unfinished_reply(in_json, code_is_no_answer=code_is_no_answer) is None
