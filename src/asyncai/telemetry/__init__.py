"""Traces: OpenTelemetry spans for runs, model requests, snippets and nested calls (``spans``), and
their OTLP export when configured (``export``; the ``otel`` extra)."""

from asyncai.telemetry.spans import DEFAULT_TRACING, Tracing

__all__ = ["DEFAULT_TRACING", "Tracing"]
