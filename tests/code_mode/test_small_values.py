"""Small results cross as values (faster), large ones as text parsed in the sandbox: a snippet must
not be able to tell which way a result came, whatever the text holds."""

from __future__ import annotations

import json

import pytest

from asyncai.code_mode import CodeMode, CodeModeLimits
from asyncai.code_mode.engine import crossing
from asyncai.tools.types import ToolCallOutput
from tests.fakes.executors import ECHO, FakeToolSource

pytestmark = pytest.mark.anyio

TEXTS = [
    '{"ok": true}',
    '{"a": {"b": [1, {"c": "d"}]}, "e": -0.0, "f": 0.1, "g": 1E5}',
    '{"k": 1, "k": 2}',
    "42",
    " 42 ",
    "-7",
    "123456789.123456789",
    "9223372036854775807",
    "18446744073709551616",
    "1e400",
    "NaN",
    "Infinity",
    "null",
    "true",
    "",
    "hello",
    "héllo ✓ 日本",
    '"quoted"',
    '"\\ud800"',
    '{"\\udc00": 1}',
    "lone \ud800 surrogate",
    '{"x": "\\u0000"}',
    "[1, 2.5, null, false]",
    "[" * 40 + "]" * 40,
    "{not json",
]


def _structured(text: str) -> dict[str, object] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _handler(_: FakeToolSource, name: str, arguments: dict[str, object]) -> ToolCallOutput:
    text = TEXTS[int(str(arguments["text"]))]
    structured = _structured(text) if name == "echo" and str(arguments["text"]).startswith("0") else None
    return ToolCallOutput(text, structured=structured)


async def _seen(small_value_chars: int, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setattr(crossing, "SMALL_VALUE_CHARS", small_value_chars)
    seen = []
    limits = CodeModeLimits(code_timeout=5.0, tool_timeout=2.0, max_memory=256 * 1024 * 1024)
    async with CodeMode(FakeToolSource([ECHO], _handler), limits) as code_mode:
        for index in range(len(TEXTS)):
            for prefix in ("", "0"):  # "0..." also sends the text as structuredContent
                code = f'r = await echo(text="{prefix}{index}")\n[type(r).__name__, r]'
                output = await code_mode.call_tool("run_code", {"code": code})
                seen.append(f"{index}{prefix}: {output.is_error} {output.content}")
    return seen


async def test_a_snippet_sees_the_same_value_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    taken = [text for text in TEXTS if crossing.Payload("text", text).as_host_reply()[0] == "value"]
    assert len(taken) >= 15, "the value path is not exercised"
    as_values = await _seen(crossing.SMALL_VALUE_CHARS, monkeypatch)
    as_text = await _seen(0, monkeypatch)
    assert as_values == as_text
