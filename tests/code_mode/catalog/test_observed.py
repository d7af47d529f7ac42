"""Shapes learned from real results: inferred without values, merged across calls, kept in a
0600 file, shown by the next process as ``Returns (observed)``; a declared schema always wins."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from asyncai import CodeMode, CodeModeLimits, McpServers, ObservedShapes, stdio_spec
from asyncai.code_mode.catalog.observed import TTL_SECONDS, infer, merge
from asyncai.code_mode.catalog.stubs import observed_sketch
from asyncai.tools.types import ToolDefinition

pytestmark = pytest.mark.anyio

SERVER = f"{sys.executable} {Path(__file__).parents[2] / 'fakes' / 'json_text_server.py'}"
TOOL = ToolDefinition("status", "", {"type": "object"}, server="status-page")


def test_a_shape_keeps_keys_and_types_never_values() -> None:
    shape = infer({"region": "eu-secret", "count": 3, "items": [{"id": 1}, {"id": 2, "extra": 1.5}]})
    assert "eu-secret" not in json.dumps(shape)
    assert observed_sketch(shape) == '{"region": str, "count": int, "items": [{"id": int, "extra"?: float}]}'


def test_merging_marks_missing_keys_and_widens_contradicting_types() -> None:
    merged = merge(infer({"a": 1, "b": "x"}), infer({"a": "one", "c": None}))
    assert merged["required"] == ["a"]  # only "a" was in both
    assert observed_sketch(merged) == '{"a": int|str, "b"?: str, "c"?: None}'
    assert observed_sketch(merge(infer([1]), infer({"k": 1}))) == '[int]|{"k": int}'


def test_the_file_is_private_expires_and_a_declared_schema_wins(tmp_path: Path) -> None:
    path = tmp_path / "state" / "shapes.json"
    now = [1_000_000.0]
    shapes = ObservedShapes(path, clock=lambda: now[0])
    shapes.observe(TOOL, '{"up": true}')
    shapes.observe(TOOL, "not json")  # ignored, never an error
    declared = ToolDefinition("typed", "", {"type": "object"}, output_schema={"type": "object"}, server="s")
    shapes.observe(declared, '{"up": true}')
    shapes.save()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = ObservedShapes(path, clock=lambda: now[0])
    assert again.schema(TOOL) == {
        "type": "object",
        "properties": {"up": {"type": "boolean"}},
        "required": ["up"],
    }
    assert again.schema(declared) is None
    now[0] += TTL_SECONDS + 1
    assert ObservedShapes(path, clock=lambda: now[0]).schema(TOOL) is None
    path.write_text("{broken")
    assert ObservedShapes(path).schema(TOOL) is None  # a warning, and nothing learned


async def test_a_second_process_shows_the_observed_shape_of_a_json_text_tool(tmp_path: Path) -> None:
    path = tmp_path / "shapes.json"
    limits = CodeModeLimits(max_memory=256 * 2**20)
    async with McpServers([stdio_spec(SERVER)]) as mcp:
        async with CodeMode(mcp, limits, observed_shapes=ObservedShapes(path)) as first:
            assert "Returns (observed)" not in first.tools()[0].description
            out = await first.call_tool("run_code", {"code": 'r = await status(region="eu")\nr["region"]'})
            assert out.content == "eu"
        async with CodeMode(mcp, limits, observed_shapes=ObservedShapes(path)) as second:
            description = second.tools()[0].description
            described: Any = await second.call_tool(
                "run_code", {"code": 'await describe_tool(name="status")'}
            )
    expected = (
        'Returns (observed): {"region": str, "services": [{"name": str, "up": bool, "latency_ms"?: float}], '
        '"incident": None}'
    )
    assert expected in description and expected in described.content
    assert "async def status(*, region: str) -> Any:" in description  # the type check still trusts nothing
