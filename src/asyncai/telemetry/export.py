"""OTLP export of the spans, set up the standard way: nothing unless asked for.

``--otlp URL`` or the standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``)
turn it on; ``OTEL_EXPORTER_OTLP_HEADERS`` and ``OTEL_SERVICE_NAME`` apply as everywhere. The
OpenTelemetry SDK and its OTLP/HTTP exporter are the ``otel`` extra: they are imported only here.
Spans leave in batches on the SDK's own thread, so a run never waits on the collector; a collector
that cannot be reached is one warning; shutdown waits at most ``SHUTDOWN_SECONDS``.
"""

from __future__ import annotations

import logging
import threading
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from asyncai.log import log_event

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

TRACES_PATH = "/v1/traces"
DEFAULT_SERVICE_NAME = "asyncai"
EXPORT_TIMEOUT_SECONDS = 2.0
"""Per export unless ``OTEL_EXPORTER_OTLP_TIMEOUT`` says otherwise (the SDK's own default, 10 s, is
what a run's exit would wait on a collector that does not answer)."""
TIMEOUT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")
SHUTDOWN_SECONDS = 3.0
"""The longest the end of a run waits for the last spans to leave (an unreachable collector)."""
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
INSTALL_HINT = "traces need the OpenTelemetry SDK: pip install 'asyncai[otel]'"


class TracingUnavailable(Exception):
    """Traces were asked for, but the ``otel`` extra is not installed."""


def traces_url(otlp: str) -> str:
    """The traces endpoint of a collector's base URL (``http://host:4318`` -> ``.../v1/traces``),
    as the exporter derives it from ``OTEL_EXPORTER_OTLP_ENDPOINT``; a URL with a path is kept."""
    parts = urllib.parse.urlsplit(otlp)
    if parts.path in ("", "/"):
        return urllib.parse.urlunsplit(parts._replace(path=TRACES_PATH))
    return otlp


def shown_url(url: str) -> str:
    """``url`` for a log line: no user info, query or fragment (they can hold credentials)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


def requested(otlp: str | None, environ: Mapping[str, str]) -> str | None:
    """Where spans go: ``--otlp``, else the standard variables; ``None``: traces are off."""
    if otlp:
        return traces_url(otlp)
    for name in ENDPOINT_VARIABLES:
        if environ.get(name):
            return environ[name] if name.endswith("TRACES_ENDPOINT") else traces_url(environ[name])
    return None


@dataclass
class Export:
    """A running export; ``shutdown`` sends what is left, within ``SHUTDOWN_SECONDS``."""

    provider: TracerProvider
    url: str

    def shutdown(self, timeout: float = SHUTDOWN_SECONDS) -> None:
        # The SDK's shutdown waits on the exporter (and its retries); a thread bounds the wait.
        worker = threading.Thread(target=self.provider.shutdown, name="asyncai-otel-shutdown", daemon=True)
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            log_event("otel.shutdown_cut", logging.WARNING, endpoint=shown_url(self.url), waited_s=timeout)


def start_export(otlp: str | None, environ: Mapping[str, str]) -> Export | None:
    """Export spans over OTLP/HTTP when asked for (see the module docstring), as the global tracer
    provider: asyncai's spans and the mcp SDK's alike. Without the SDK: ``TracingUnavailable`` when
    ``--otlp`` asked, one warning when only the environment did."""
    url = requested(otlp, environ)
    if url is None:
        return None
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        if otlp:  # asked for on this command line: an error
            raise TracingUnavailable(INSTALL_HINT) from exc
        # Only the environment asks (often set for every program on a machine): run, and say why
        # no spans leave.
        log_event("otel.unavailable", logging.WARNING, endpoint=shown_url(url), note=INSTALL_HINT)
        return None
    attributes: dict[str, Any] = {}
    named = "service.name=" in environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
    if not named or environ.get("OTEL_SERVICE_NAME"):
        attributes["service.name"] = environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME
    provider = TracerProvider(resource=Resource.create(attributes))
    # Headers (OTEL_EXPORTER_OTLP_HEADERS) come from the environment, as the SDK reads them.
    timeout = None if any(environ.get(name) for name in TIMEOUT_VARIABLES) else EXPORT_TIMEOUT_SECONDS
    exporter = OTLPSpanExporter(endpoint=url, timeout=timeout)
    provider.add_span_processor(BatchSpanProcessor(_new_warn_once(exporter, url)))
    # One warning of ours replaces the SDK's error per failed batch and warning per retry.
    logging.getLogger("opentelemetry.exporter").setLevel(logging.CRITICAL)
    logging.getLogger("opentelemetry.sdk").setLevel(logging.CRITICAL)
    trace.set_tracer_provider(provider)
    return Export(provider, url)


def _new_warn_once(exporter: SpanExporter, url: str) -> SpanExporter:
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class WarnOnce(SpanExporter):
        """``exporter``, saying once (not per batch) that spans could not be delivered."""

        def __init__(self) -> None:
            self.warned = False

        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            result = exporter.export(spans)
            if result is not SpanExportResult.SUCCESS and not self.warned:
                self.warned = True
                log_event(
                    "otel.export_failed",
                    logging.WARNING,
                    endpoint=shown_url(url),
                    note="spans are not reaching the collector; further failures are not reported",
                )
            return result

        def shutdown(self) -> None:
            exporter.shutdown()

        def force_flush(self, timeout_millis: int = 30_000) -> bool:
            return exporter.force_flush(timeout_millis)

    return WarnOnce()
