"""A library user's own ``TracerProvider`` (``CodeMode(tracer_provider=...)``): the spans a snippet
makes in process, with the SDK's in-memory exporter, and what each failure is called."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from asyncai.code_mode import CodeMode
from tests.code_mode.conftest import TEST_LIMITS, FakeExecutor, run

pytestmark = pytest.mark.anyio


@pytest.fixture
def fake() -> FakeExecutor:
    return FakeExecutor()


@pytest.fixture
def exported() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
async def code_mode(fake: FakeExecutor, exported: InMemorySpanExporter) -> AsyncIterator[CodeMode]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    async with CodeMode(fake, TEST_LIMITS, mutations="deny", tracer_provider=provider) as executor:
        yield executor


def _named(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


async def test_a_snippet_under_the_callers_span_with_its_nested_calls_and_what_each_failure_is(
    code_mode: CodeMode, exported: InMemorySpanExporter
) -> None:
    outer = TracerProvider().get_tracer("the-embedder")
    with outer.start_as_current_span("handle a request") as request:
        output = await run(
            code_mode,
            "p = await pods()\n"
            "try:\n    await fail(message='no')\nexcept RuntimeError:\n    pass\n"
            "try:\n    await delete_item(name='x')\nexcept PermissionError:\n    pass\n"
            "len(p['items'])",
        )
        failed = await run(code_mode, "undefined_name + 1")
    assert output.content == "10" and failed.is_error
    spans = exported.get_finished_spans()
    ok, broken = _named(spans, "execute_tool run_code")
    for snippet in (ok, broken):  # the embedder's span is the parent: its trace goes on
        assert snippet.parent is not None and snippet.parent.span_id == request.get_span_context().span_id
    assert ok.attributes is not None and ok.attributes["asyncai.nested_calls"] == 3
    assert "error.type" not in ok.attributes
    assert broken.attributes is not None and broken.attributes["error.type"] == "NameError"
    assert broken.status.status_code == trace.StatusCode.ERROR

    calls = {span.name: span for span in spans if span.parent and span.parent.span_id == ok.context.span_id}
    assert set(calls) == {"execute_tool pods", "execute_tool fail", "execute_tool delete-item"}
    assert calls["execute_tool pods"].attributes == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "pods",
        "asyncai.mutating": False,
        "asyncai.server": "functions",
        "asyncai.result_bytes": (calls["execute_tool pods"].attributes or {})["asyncai.result_bytes"],
        "asyncai.refused": False,
    }
    assert (calls["execute_tool fail"].attributes or {})["error.type"] == "tool_error"
    deleted = calls["execute_tool delete-item"].attributes or {}
    assert (deleted["asyncai.mutating"], deleted["asyncai.refused"], deleted["error.type"]) == (
        True,
        True,
        "refused",
    )
