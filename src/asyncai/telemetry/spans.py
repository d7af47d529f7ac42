"""The spans of a run, named and attributed after OpenTelemetry's GenAI conventions.

    invoke_agent asyncai            the agent run (``backend.openai``)
      chat MODEL                    each model request, streamed or not
      execute_tool run_code         each snippet (``code_mode.engine``)
        execute_tool TOOL           each nested call; the mcp SDK's own ``MCP send tools/call``
          MCP send tools/call TOOL  span is its child, and carries the trace to the server

Only ``opentelemetry-api`` is used here: without a configured tracer provider every span is a
no-op costing well under a microsecond. Code and arguments go into span events only when
``Tracing.content`` is on (they can hold secrets); results never do.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, StatusCode, Tracer, TracerProvider

from asyncai.code_mode.catalog.stubs import RUN_CODE
from asyncai.tools.types import ToolCallOutput
from asyncai.version import __version__

AGENT_NAME = "asyncai"
PROVIDER_NAME = "openai"
"""``gen_ai.provider.name``: the wire protocol; the server behind it may be any OpenAI-compatible one."""
_EXCEPTION_NAME = re.compile(r"\b([A-Z][A-Za-z0-9_]*(?:Error|Exception|Exit|Interrupt))\b")


def _tracer(provider: TracerProvider | None) -> Tracer:
    if provider is None:  # the global provider, as configured now or later (a proxy until then)
        return trace.get_tracer(AGENT_NAME, __version__)
    return provider.get_tracer(AGENT_NAME, __version__)


@dataclass(frozen=True)
class Tracing:
    """Where asyncai's spans go: ``provider`` (``None``: the global one, which exports nothing
    unless configured); ``content`` puts snippet code and call arguments into span events."""

    provider: TracerProvider | None = None
    content: bool = False
    tracer: Tracer = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tracer", _tracer(self.provider))


DEFAULT_TRACING = Tracing()


@contextlib.contextmanager
def agent_run(tracing: Tracing, model: str, conversation: str | None) -> Iterator[Span]:
    """The agent run's span, current while it lasts: the snippets it runs nest under it."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": AGENT_NAME,
        "gen_ai.provider.name": PROVIDER_NAME,
        "gen_ai.request.model": model,
    }
    if conversation:
        attributes["gen_ai.conversation.id"] = conversation
    with tracing.tracer.start_as_current_span(
        f"invoke_agent {AGENT_NAME}", kind=SpanKind.INTERNAL, attributes=attributes
    ) as span:
        yield span


def start_chat(tracing: Tracing, model: str, round_number: int, *, streamed: bool) -> Span:
    """A model request's span; not made current, so a snippet that starts while the reply streams
    still nests under the run, not under the request."""
    return tracing.tracer.start_span(
        f"chat {model}",
        kind=SpanKind.CLIENT,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": PROVIDER_NAME,
            "gen_ai.request.model": model,
            "asyncai.round": round_number,
            "asyncai.streamed": streamed,
        },
    )


def end_chat(
    span: Span,
    *,
    usage: Mapping[str, Any] | None = None,
    finish_reason: str | None = None,
    tool_calls: int = 0,
    error: BaseException | None = None,
) -> None:
    if span.is_recording():
        if usage:
            tokens = {
                "gen_ai.usage.input_tokens": usage.get("prompt_tokens"),
                "gen_ai.usage.output_tokens": usage.get("completion_tokens"),
            }
            span.set_attributes({key: value for key, value in tokens.items() if isinstance(value, int)})
        if finish_reason:
            span.set_attribute("gen_ai.response.finish_reasons", [finish_reason])
        span.set_attribute("asyncai.tool_calls", tool_calls)
        if error is not None:
            span.set_attribute("error.type", type(error).__name__)
            span.set_status(StatusCode.ERROR, str(error))
    span.end()


def start_snippet(tracing: Tracing) -> Span:
    """A ``run_code`` span, child of the current context: the agent run, or in ``serve-mcp`` the
    SDK's span of the client's ``tools/call``, which continues its trace."""
    return tracing.tracer.start_span(
        f"execute_tool {RUN_CODE}",
        kind=SpanKind.INTERNAL,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": RUN_CODE,
            "gen_ai.tool.type": "function",
        },
    )


def end_snippet(
    span: Span,
    tracing: Tracing,
    *,
    code: str | None,
    output: ToolCallOutput | None,
    audit: Mapping[str, Any] | None = None,
    paused: bool = False,
    error: str | None = None,
) -> None:
    """End a ``run_code`` span with what the snippet did: ``output`` went to the model (``None``:
    it ``paused`` for an approval, or ended without a result, ``error`` saying why)."""
    if span.is_recording():
        audit = output.audit if output is not None and output.audit is not None else (audit or {})
        calls = list(audit.get("nested_calls") or [])
        attributes: dict[str, Any] = {
            "asyncai.nested_calls": len(calls),
            "asyncai.bytes_into_sandbox": sum(int(call.get("bytes") or 0) for call in calls),
        }
        if code is not None:
            attributes["asyncai.snippet.chars"] = len(code)
        if output is not None:
            attributes["asyncai.bytes_to_model"] = len(output.content.encode())
        if paused:
            attributes["asyncai.paused"] = True
        if audit.get("eager_statements"):
            attributes["asyncai.eager_statements"] = int(audit["eager_statements"])
        speculative = audit.get("speculative_calls")
        if isinstance(speculative, Mapping):
            for key in ("launched", "claimed", "cancelled"):
                attributes[f"asyncai.speculative.{key}"] = int(speculative.get(key) or 0)
        span.set_attributes(attributes)
        if tracing.content and code is not None:
            span.add_event("asyncai.snippet", {"code": code})
        if error is None and output is not None and output.is_error:
            error = error_type(output.content)
        if error is not None:
            span.set_attribute("error.type", error)
            span.set_status(StatusCode.ERROR, error)
    span.end()


@dataclass
class SnippetRecord:
    """What ``snippet`` ends its span with, filled in by the run."""

    output: ToolCallOutput | None = None
    audit: Mapping[str, Any] | None = None
    paused: bool = False


@contextlib.contextmanager
def snippet(tracing: Tracing, code: str | None) -> Iterator[tuple[Span, SnippetRecord]]:
    """A ``run_code`` span around one run of ``code`` (see ``start_snippet``)."""
    span = start_snippet(tracing)
    record = SnippetRecord()
    try:
        yield span, record
    except BaseException as exc:
        end_snippet(span, tracing, code=code, output=None, audit=record.audit, error=ended_by(exc))
        raise
    end_snippet(span, tracing, code=code, output=record.output, audit=record.audit, paused=record.paused)


def ended_by(exc: BaseException) -> str:
    """A snippet's ``error.type`` when it ended without a result: ``cancelled``, or the exception."""
    return "cancelled" if isinstance(exc, asyncio.CancelledError) else type(exc).__name__


def error_type(text: str) -> str:
    """The exception a failed snippet's result names last (``NameError``), else ``run_code_error``."""
    names = _EXCEPTION_NAME.findall(text[-2_000:])
    return names[-1] if names else "run_code_error"


@contextlib.contextmanager
def nested_call(
    tracing: Tracing,
    parent: Span | None,
    tool: str,
    server: str,
    arguments: Mapping[str, Any],
    *,
    mutating: bool,
    speculative: bool = False,
) -> Iterator[Span]:
    """A nested call's span, child of the snippet's ``parent`` and current while the call runs, so
    the mcp SDK's client span nests under it and the trace reaches the server in ``_meta``."""
    if parent is not None and not parent.is_recording():
        # Traces are off: no span of its own (a nested call must not pay for one), but a trace the
        # snippet is part of (a serve-mcp client's) still reaches the server.
        if not parent.get_span_context().is_valid:
            yield parent
            return
        token = otel_context.attach(trace.set_span_in_context(parent))
        try:
            yield parent
        finally:
            otel_context.detach(token)
        return
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
        "asyncai.mutating": mutating,
    }
    if server:
        attributes["asyncai.server"] = server
    if speculative:
        attributes["asyncai.speculative"] = True
    parent_context = trace.set_span_in_context(parent) if parent is not None else None
    span = tracing.tracer.start_span(f"execute_tool {tool}", context=parent_context, attributes=attributes)
    if tracing.content:
        span.add_event("asyncai.arguments", {"arguments": json.dumps(arguments, default=repr)})
    token = otel_context.attach(trace.set_span_in_context(span))
    try:
        yield span
    except BaseException as exc:
        if not span_has_error(span):
            span.set_attribute("error.type", type(exc).__name__)
            span.set_status(StatusCode.ERROR, type(exc).__name__)
        raise
    finally:
        otel_context.detach(token)
        span.end()


def end_nested(span: Span, *, result_bytes: int, is_error: bool, refused: bool) -> None:
    """What a nested call's span records of its outcome (its result's size, never the result)."""
    if not span.is_recording():
        return
    span.set_attributes({"asyncai.result_bytes": result_bytes, "asyncai.refused": refused})
    if refused or is_error:
        kind = "refused" if refused else "tool_error"
        span.set_attribute("error.type", kind)
        span.set_status(StatusCode.ERROR, kind)


def span_has_error(span: Span) -> bool:
    attributes = getattr(span, "attributes", None)
    return isinstance(attributes, Mapping) and "error.type" in attributes
