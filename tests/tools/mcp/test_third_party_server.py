"""asyncai against an MCP server nobody on the team wrote: ``mcp-server-time`` from PyPI."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from asyncai.code_mode import CodeMode
from asyncai.tools import McpServers, stdio_spec

pytestmark = pytest.mark.anyio


def _time_server() -> str:
    local = Path(sys.executable).parent / "mcp-server-time"
    found = str(local) if local.exists() else shutil.which("mcp-server-time")
    if found is None:
        pytest.skip("mcp-server-time is not installed (it is a dev dependency: pip install -e '.[dev]')")
    return f"{found} --local-timezone UTC"


async def test_tools_schemas_and_annotations_come_through() -> None:
    async with McpServers([stdio_spec(_time_server())]) as executor:
        tools = {tool.name: tool for tool in executor.tools()}
    assert set(tools) == {"get_current_time", "convert_time"}
    assert all(tool.read_only and tool.output_schema for tool in tools.values())


async def test_code_mode_drives_the_third_party_server() -> None:
    async with (
        McpServers([stdio_spec(_time_server())]) as mcp,
        CodeMode(mcp) as code_mode,
    ):
        description = code_mode.tools()[0].description
        converted = await code_mode.call_tool(
            "run_code",
            {
                "code": 'r = await convert_time(source_timezone="UTC", time="12:00", target_timezone="Asia/Tokyo")\n'
                '[r["target"]["datetime"][11:16], r["time_difference"]]'
            },
        )
        refused = await code_mode.call_tool(
            "run_code",
            {
                "code": 'try:\n    await get_current_time(timezone="Mars/Base")\nexcept RuntimeError as e:\n    m = str(e)\nm'
            },
        )
    assert "async def convert_time(*, source_timezone: str, time: str, target_timezone: str)" in description
    assert '"target": {"timezone": str, "datetime": str' in description, (
        "the $defs of its output schema are inlined"
    )
    assert json.loads(converted.content) == ["21:00", "+9.0h"]
    assert not refused.is_error and "Invalid timezone" in refused.content
