"""Traces: OpenTelemetry spans for runs, model requests, snippets and nested calls (``spans``), and
their OTLP export when configured (``export``; the ``otel`` extra)."""

from asyncai.telemetry.spans import NO_CONTENT, Tracing

__all__ = ["NO_CONTENT", "Tracing"]
