"""The NDJSON log: every line is valid JSON, previews honour their limit."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from asyncai.log import decoded_or_preview, log_event, preview
from tests.fakes.logs import captured_log


@pytest.fixture
def log_stream() -> Iterator[io.StringIO]:
    with captured_log(verbose=True) as stream:
        yield stream


def _strict_lines(stream: io.StringIO) -> list[dict[str, object]]:
    def refuse(constant: str) -> object:
        raise ValueError(f"{constant} is not JSON")

    return [json.loads(line, parse_constant=refuse) for line in stream.getvalue().splitlines()]


def test_decoded_or_preview_decodes_short_json() -> None:
    assert decoded_or_preview('{"a": [1, 2]}') == {"a": [1, 2]}


def test_decoded_or_preview_honours_its_limit_for_text_that_is_not_json() -> None:
    text = "x" * 3000
    assert decoded_or_preview(text, limit=5000) == text
    assert decoded_or_preview(text, limit=100) == preview(text, 100)


def test_decoded_or_preview_of_too_deeply_nested_json_is_a_preview() -> None:
    text = "[" * 999 + "]" * 999
    assert decoded_or_preview(text) == text


@pytest.mark.parametrize(
    ("text", "logged"),
    [("NaN", "nan"), ("1e999", "inf"), ("-Infinity", "-inf"), ('{"x": [Infinity]}', {"x": ["inf"]})],
)
def test_non_finite_numbers_still_give_a_valid_json_line(
    log_stream: io.StringIO, text: str, logged: object
) -> None:
    log_event("mcp.tool_result", logging.INFO, content=decoded_or_preview(text), bytes=len(text))
    [line] = _strict_lines(log_stream)
    assert line["event"] == "mcp.tool_result" and line["bytes"] == len(text)
    assert line["content"] == logged


def test_non_finite_floats_become_strings(log_stream: io.StringIO) -> None:
    log_event("e", logging.WARNING, ratio=float("nan"), nested={"hi": [float("inf"), 1.5]})
    [line] = _strict_lines(log_stream)
    assert line["ratio"] == "nan" and line["nested"] == {"hi": ["inf", 1.5]}
    assert line["level"] == "warn"


def test_finite_values_are_written_unchanged(log_stream: io.StringIO) -> None:
    log_event("e", logging.INFO, n=1.5, text="café", items=[1, None, True])
    [line] = _strict_lines(log_stream)
    assert (line["n"], line["text"], line["items"]) == (1.5, "café", [1, None, True])
