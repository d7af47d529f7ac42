"""Where spans go, decided from ``--otlp`` and the standard variables, and what a log line may show."""

from __future__ import annotations

import pytest

from asyncai.telemetry.export import requested, shown_url, traces_url
from asyncai.telemetry.spans import error_type


@pytest.mark.parametrize(
    ("otlp", "environ", "expected"),
    [
        (None, {}, None),
        ("http://collector:4318", {}, "http://collector:4318/v1/traces"),
        ("http://collector:4318/", {}, "http://collector:4318/v1/traces"),
        ("http://collector:4318/custom/path", {}, "http://collector:4318/custom/path"),
        (None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, "http://c:4318/v1/traces"),
        (None, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/t"}, "http://c:4318/t"),
        (
            None,
            {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t/x", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"},
            "http://t/x",
        ),
        ("http://flag:1", {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:2"}, "http://flag:1/v1/traces"),
        (None, {"OTEL_EXPORTER_OTLP_ENDPOINT": ""}, None),
    ],
)
def test_spans_go_where_the_flag_or_the_standard_variables_say_and_nowhere_by_default(
    otlp: str | None, environ: dict[str, str], expected: str | None
) -> None:
    assert requested(otlp, environ) == expected


def test_a_logged_endpoint_drops_what_can_hold_credentials() -> None:
    url = "https://user:s3cret@collector.example:4318/v1/traces?api_key=k3y#frag"
    assert shown_url(url) == "https://collector.example:4318/v1/traces"
    assert traces_url("http://c:4318") == "http://c:4318/v1/traces"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Traceback (most recent call last):\n  ...\nNameError: name 'x' is not defined", "NameError"),
        ("error: `names` is a built-in helper and cannot be rebound", "run_code_error"),
        ("error: run_code exceeded its wall-clock limit of 5 s", "run_code_error"),
        ("KeyError: 'a'\nduring handling, RuntimeError: tool error", "RuntimeError"),
    ],
)
def test_a_failed_snippet_span_names_the_exception_its_result_names_last(text: str, expected: str) -> None:
    assert error_type(text) == expected
