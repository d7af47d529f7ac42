"""``serve-mcp`` continues the trace its client sends in ``_meta``, and passes it on to the servers
it wraps: the real SDK client in a span of the test's own, serve-mcp exporting to a real receiver."""

from __future__ import annotations

import json

import mcp.types as mt
import pytest
from mcp import Client
from mcp.client.stdio import stdio_client
from opentelemetry.sdk.trace import TracerProvider

from tests.fakes.otlp_receiver import OtlpReceiver, children, one
from tests.serve.helpers import stdio_params
from tests.telemetry.test_traces import SERVER

pytestmark = pytest.mark.anyio


async def test_serve_mcp_continues_the_clients_trace_down_to_the_wrapped_server() -> None:
    client_tracer = TracerProvider().get_tracer("the-client")  # not global: only its context travels
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "", "OTEL_SERVICE_NAME": "serve-under-test"}
    with OtlpReceiver() as receiver:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.url
        async with Client(stdio_client(stdio_params("--mcp-stdio", SERVER, env=env))) as client:
            with client_tracer.start_as_current_span("client asks") as asking:
                result = await client.call_tool(
                    "run_code", {"code": "[await echo(text='x'), await trace_id()]"}
                )
        spans = receiver.wait_for(lambda spans: any(s.name == "execute_tool run_code" for s in spans))
    assert isinstance(result.content[0], mt.TextContent)
    trace_id = format(asking.get_span_context().trace_id, "032x")
    assert json.loads(result.content[0].text) == ["x", trace_id]  # the wrapped server saw it too

    handled = one(spans, "tools/call run_code")  # the SDK's server span, continuing the client's
    assert handled.trace_id == trace_id and handled.service == "serve-under-test"
    assert handled.parent_id == format(asking.get_span_context().span_id, "016x")
    [snippet] = children(spans, handled)
    assert snippet.name == "execute_tool run_code" and snippet.attributes["asyncai.nested_calls"] == 2
    under = children(spans, snippet)
    nested = sorted(span.name for span in under if not span.attributes.get("asyncai.speculative"))
    assert nested == ["execute_tool echo", "execute_tool trace_id"]
    # Both calls are literal and read-only: launched once the snippet passed its scan, then claimed,
    # so each was sent once, under its launch's span.
    sent = [child for call in under for child in children(spans, call)]
    assert sorted(span.name for span in sent) == ["MCP send tools/call echo", "MCP send tools/call trace_id"]
    assert all(span.trace_id == trace_id for span in sent)
