"""An OTLP/HTTP trace receiver on loopback: decodes ``ExportTraceServiceRequest`` protobuf (the
format every OTLP exporter sends) with ``opentelemetry-proto`` and keeps the spans for assertions.
As a program (``python -m tests.fakes.otlp_receiver``) it prints its URL, serves until its stdin
closes, then prints how many spans it got.

    with OtlpReceiver() as receiver:
        run(..., env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
        spans = receiver.wait_for(lambda spans: any(s.name == "invoke_agent asyncai" for s in spans))
"""

from __future__ import annotations

import http.server
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue


@dataclass
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    status_code: int
    service: str
    scope: str

    @property
    def error_type(self) -> Any:
        return self.attributes.get("error.type")


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    return getattr(value, kind) if kind else None


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs if isinstance(pair, KeyValue)}


@dataclass
class OtlpReceiver:
    """``url`` is the base URL (as ``OTEL_EXPORTER_OTLP_ENDPOINT``); ``requests`` counts exports."""

    spans: list[ReceivedSpan] = field(default_factory=list)
    requests: int = 0
    paths: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._changed = threading.Condition()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                receiver._receive(self.path, dict(self.headers), body)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def _receive(self, path: str, headers: dict[str, str], body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        received = []
        for resource_spans in request.resource_spans:
            service = str(_attributes(resource_spans.resource.attributes).get("service.name", ""))
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    received.append(
                        ReceivedSpan(
                            name=span.name,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex(),
                            kind=span.kind,
                            attributes=_attributes(span.attributes),
                            events=[(event.name, _attributes(event.attributes)) for event in span.events],
                            status_code=span.status.code,
                            service=service,
                            scope=scope_spans.scope.name,
                        )
                    )
        with self._changed:
            self.requests += 1
            self.paths.append(path)
            self.headers.append({name.lower(): value for name, value in headers.items()})
            self.spans.extend(received)
            self._changed.notify_all()

    def wait_for(
        self, done: Callable[[list[ReceivedSpan]], bool], timeout: float = 30.0
    ) -> list[ReceivedSpan]:
        """The spans so far, once ``done`` holds for them (an ``AssertionError`` after ``timeout``)."""
        with self._changed:
            if not self._changed.wait_for(lambda: done(list(self.spans)), timeout):
                raise AssertionError(
                    f"the receiver did not get the spans awaited: {[s.name for s in self.spans]}"
                )
            return list(self.spans)

    def __enter__(self) -> OtlpReceiver:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def children(spans: list[ReceivedSpan], parent: ReceivedSpan) -> list[ReceivedSpan]:
    return [span for span in spans if span.parent_id == parent.span_id and span.trace_id == parent.trace_id]


def one(spans: list[ReceivedSpan], name: str) -> ReceivedSpan:
    found = [span for span in spans if span.name == name]
    assert len(found) == 1, f"{len(found)} spans named {name!r}: {[s.name for s in spans]}"
    return found[0]


def main() -> None:
    with OtlpReceiver() as receiver:
        print(receiver.url, flush=True)
        sys.stdin.read()
        print(len(receiver.spans), flush=True)


if __name__ == "__main__":
    main()
