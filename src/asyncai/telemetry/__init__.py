"""Traces: OpenTelemetry spans for runs, model requests, snippets and nested calls (``spans``), and
their OTLP export when configured (``export``; the ``otel`` extra). Nothing is imported here, so
the command line's start does not load the OpenTelemetry API before it needs it."""
