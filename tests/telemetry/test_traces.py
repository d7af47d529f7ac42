"""A run is a trace: the agent with the scripted model and a real MCP server, exporting over OTLP to
a real receiver on loopback (``tests/fakes/otlp_receiver.py``), and the tree of spans it sends."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from tests.cli.conftest import asyncai
from tests.cli.helpers import assert_one_line_usage_error
from tests.fakes.openai_server import ScriptedOpenAI, call, text_reply, tool_reply
from tests.fakes.otlp_receiver import OtlpReceiver, ReceivedSpan, children, one

SERVER = f"{sys.executable} {Path(__file__).parent.parent / 'fakes' / 'mcp_test_server.py'} --name notes"
SECRET_TEXT = "alpha-7f3a9c"
COLLECTOR_TOKEN = "collector-t0ken-5d1e"
SNIPPET = f"""import asyncio
a, b = await asyncio.gather(echo(text="{SECRET_TEXT}"), echo(text="beta"))
try:
    await write_note(text="a note")
except PermissionError:
    pass
carried = await trace_id()
[len(a) + len(b), carried]"""


def _run(receiver: OtlpReceiver, *flags: str, stream: bool = True) -> tuple[list[ReceivedSpan], str, str]:
    script = [tool_reply(call("run_code", {"code": SNIPPET})), text_reply("done")]
    with ScriptedOpenAI(script) as model:
        result = asyncai(
            "--mcp-stdio",
            SERVER,
            "--mutations",
            "deny",
            "--base-url",
            model.base_url,
            "--model",
            "m",
            *(["--stream"] if stream else []),
            *flags,
            "-p",
            "go",
            env={
                "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
                "OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer {COLLECTOR_TOKEN}",
                "OTEL_SERVICE_NAME": "agent-under-test",
            },
        )
        tool_message = model.requests[1]["messages"][-1]["content"]
    assert (result.status, result.stdout) == (0, "done\n"), result.stderr
    # The standard headers variable reaches the collector, and the token nothing else.
    assert {headers.get("authorization") for headers in receiver.headers} == {f"Bearer {COLLECTOR_TOKEN}"}
    assert receiver.paths and set(receiver.paths) == {"/v1/traces"}
    assert COLLECTOR_TOKEN not in result.stderr + result.stdout
    # Every span has ended and been flushed by the time the command exits: no waiting needed.
    return receiver.spans, tool_message, result.stderr


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "not-streamed"])
def test_an_agent_run_is_one_trace_of_the_run_its_model_requests_its_snippet_and_nested_calls(
    stream: bool,
) -> None:
    with OtlpReceiver() as receiver:
        spans, tool_message, _ = _run(receiver, stream=stream)
    run = one(spans, "invoke_agent asyncai")
    assert run.parent_id == "" and run.service == "agent-under-test"
    # The servers' start-up is a trace of its own; everything the run did is in the run's trace.
    start = one(spans, "start MCP servers")
    assert start.trace_id != run.trace_id and start.attributes["asyncai.servers"] == ["mcp_test_server"]
    assert "MCP send server/discover" in {span.name for span in children(spans, start)}
    ours = [span for span in spans if span.trace_id != start.trace_id]
    assert {span.trace_id for span in ours} == {run.trace_id}
    assert {span.name for span in ours} >= {"chat m", "execute_tool run_code", "MCP send tools/call echo"}
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.request.model"] == "m"

    chats = [span for span in children(spans, run) if span.name == "chat m"]
    assert [chat.attributes["asyncai.round"] for chat in chats] == [1, 2]
    for chat in chats:
        assert chat.kind == SpanKind.CLIENT.value + 1  # protobuf kinds count from UNSPECIFIED
        assert chat.attributes["gen_ai.usage.input_tokens"] == 10
        assert chat.attributes["gen_ai.usage.output_tokens"] == 5
        assert chat.attributes["asyncai.streamed"] is stream
    assert [chat.attributes["asyncai.tool_calls"] for chat in chats] == [1, 0]

    snippet = one(spans, "execute_tool run_code")
    assert snippet.parent_id == run.span_id
    assert snippet.attributes["gen_ai.tool.name"] == "run_code"
    assert snippet.attributes["asyncai.nested_calls"] == 4
    assert snippet.attributes["asyncai.snippet.chars"] == len(SNIPPET)
    assert snippet.attributes["asyncai.bytes_to_model"] == len(tool_message.encode())
    assert snippet.attributes["asyncai.bytes_into_sandbox"] > 0
    assert "error.type" not in snippet.attributes

    under = children(spans, snippet)
    speculative = sorted(span.name for span in under if span.attributes.get("asyncai.speculative"))
    nested = sorted((span for span in under if not span.attributes.get("asyncai.speculative")), key=_name)
    assert [span.name for span in nested] == [
        "execute_tool echo",
        "execute_tool echo",
        "execute_tool trace_id",
        "execute_tool write_note",
    ]
    # The literal read-only calls started early (streamed: as their lines arrived; not streamed:
    # once the snippet passed its scan), and were claimed.
    assert speculative == ["execute_tool echo", "execute_tool echo", "execute_tool trace_id"]
    assert snippet.attributes["asyncai.speculative.claimed"] == 3
    echo, note = nested[0], nested[3]
    assert echo.attributes["asyncai.server"] == "mcp_test_server"
    assert echo.attributes["asyncai.mutating"] is False and echo.attributes["asyncai.refused"] is False
    assert echo.attributes["asyncai.result_bytes"] > 0 and "error.type" not in echo.attributes
    assert note.attributes["asyncai.mutating"] is True and note.attributes["asyncai.refused"] is True
    assert note.attributes["error.type"] == "refused" and note.status_code == StatusCode.ERROR.value

    # The mcp SDK's client span is a nested call's child (the call's own, or its speculative
    # launch's), and the server got the trace in _meta: trace_id() answered the run's trace id.
    sent = [span for span in spans if span.name.startswith("MCP send tools/call")]
    assert len(sent) == 4 - 1  # write_note was refused: nothing was sent
    by_id = {span.span_id: span for span in under}
    for span in sent:
        assert span.scope == "mcp-python-sdk"
        assert by_id[span.parent_id].name == "execute_tool " + span.name.rsplit(" ", 1)[1]
    assert json.loads(tool_message)[1] == run.trace_id


def _name(span: ReceivedSpan) -> str:
    return span.name


def test_no_code_or_arguments_in_any_span_without_trace_content_and_both_with_it() -> None:
    with OtlpReceiver() as receiver:
        spans, _, _ = _run(receiver)
    everything = json.dumps([[span.attributes, span.events] for span in spans])
    assert SECRET_TEXT not in everything and "write_note(" not in everything
    assert COLLECTOR_TOKEN not in everything
    assert all(span.events == [] for span in spans if span.scope == "asyncai")

    with OtlpReceiver() as receiver:
        spans, _, _ = _run(receiver, "--trace-content")
    snippet = one(spans, "execute_tool run_code")
    assert snippet.events == [("asyncai.snippet", {"code": SNIPPET})]
    echoes = [span for span in spans if span.name == "execute_tool echo"]
    assert {json.loads(span.events[0][1]["arguments"])["text"] for span in echoes} == {SECRET_TEXT, "beta"}
    # Only in those events: the echoed result (the same text) is in no span.
    content_events = ("asyncai.snippet", "asyncai.arguments")
    rest = [[span.attributes, [e for e in span.events if e[0] not in content_events]] for span in spans]
    assert SECRET_TEXT not in json.dumps(rest)


def test_a_dead_collector_is_one_warning_and_the_same_exit_status() -> None:
    with OtlpReceiver() as receiver:
        dead = receiver.url  # closed when the block ends: nothing listens there any more
    script = [tool_reply(call("run_code", {"code": "1 + 1"})), text_reply("two")]
    with ScriptedOpenAI(script) as model:
        result = asyncai(
            "--base-url",
            model.base_url,
            "--model",
            "m",
            "--otlp",
            dead,
            "-p",
            "add",
        )
    assert (result.status, result.stdout) == (0, "two\n"), result.stderr
    warnings = [line for line in result.log() if line["level"] == "warn"]
    assert [line["event"] for line in warnings] == ["otel.export_failed"], result.stderr
    assert warnings[0]["endpoint"] == f"{dead}/v1/traces"
    said = [line for line in result.stderr.splitlines() if not line.startswith("session: ")]
    assert len(said) == 1, result.stderr


def test_asking_for_traces_without_the_otel_extra_is_a_one_line_error_and_the_environment_a_warning(
    tmp_path: Path,
) -> None:
    # A package earlier on the path that fails to import stands in for an SDK not installed.
    missing = tmp_path / "opentelemetry" / "sdk"
    missing.mkdir(parents=True)
    (missing / "__init__.py").write_text("raise ImportError(\"No module named 'opentelemetry.sdk'\")\n")
    result = asyncai(
        "--otlp", "http://127.0.0.1:9", "run-code", "-c", "1 + 1", env={"PYTHONPATH": str(tmp_path)}
    )
    assert_one_line_usage_error(result, "traces need the OpenTelemetry SDK: pip install 'asyncai[otel]'")
    plain = asyncai("run-code", "-c", "1 + 1", env={"PYTHONPATH": str(tmp_path)})
    assert (plain.status, plain.stdout, plain.stderr) == (0, "2\n", "")  # nothing asked: nothing needed
    # A machine-wide OTEL_EXPORTER_OTLP_ENDPOINT does not stop a program without the extra: it warns.
    environment = {"PYTHONPATH": str(tmp_path), "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    warned = asyncai("run-code", "-c", "1 + 1", env=environment)
    assert (warned.status, warned.stdout) == (0, "2\n"), warned.stderr
    [line] = warned.log()
    assert line["event"] == "otel.unavailable" and "pip install 'asyncai[otel]'" in line["note"]
