"""The kcp servers driven through code mode: each demo question takes one run_code that filters the
large kubectl result inside the sandbox, and writes are logged at warn."""

from __future__ import annotations

import json

import pytest

from asyncai.code_mode import CodeMode
from asyncai.tools import McpServers
from tests.fakes.logs import captured_log

from .demo import QUESTIONS

pytestmark = pytest.mark.anyio


async def test_socialweb_kinds_in_one_run_code(rw: McpServers) -> None:
    async with CodeMode(rw) as code_mode:
        output = await code_mode.call_tool("run_code", {"code": QUESTIONS[0].program})
    assert (json.loads(output.content), output.is_error) == (["Agent", "Channel"], False)
    nested = (output.audit or {})["nested_calls"]
    assert [call["tool"] for call in nested] == ["get_api_resources"]


async def test_configmap_names_filtered_from_a_large_list_in_one_run_code(rw: McpServers) -> None:
    async with CodeMode(rw) as code_mode:
        output = await code_mode.call_tool("run_code", {"code": QUESTIONS[1].program})
    assert not output.is_error, output.content
    by_namespace = json.loads(output.content)
    assert len(by_namespace["web"]) > 300 and all(isinstance(name, str) for name in by_namespace["web"])
    (nested,) = (output.audit or {})["nested_calls"]
    assert nested["tool"] == "list_objects"
    assert nested["bytes"] > 10 * len(output.content), "the large result must stay in the sandbox"


async def test_mutating_calls_are_logged_at_warn(rw: McpServers) -> None:
    program = (
        'manifest = {"apiVersion": "v1", "kind": "ConfigMap", '
        '"metadata": {"name": "demo-note", "namespace": "default"}, "data": {"k": "v"}}\n'
        'await apply_object(workspace="root:app", manifest=manifest)\n'
        'await patch_object(workspace="root:app", resource="configmaps", name="demo-note", namespace="default", '
        'patch={"data": {"k": "w"}})\n'
        'got = await get_object(workspace="root:app", resource="configmaps", name="demo-note", namespace="default")\n'
        'await delete_object(workspace="root:app", resource="configmaps", name="demo-note", namespace="default")\n'
        'got["data"]["k"]'
    )
    with captured_log() as stream:
        async with CodeMode(rw) as code_mode:
            output = await code_mode.call_tool("run_code", {"code": program})
    assert (output.content, output.is_error) == ("w", False)
    calls = [json.loads(line) for line in stream.getvalue().splitlines()]
    warned = [(line["event"], line["tool"]) for line in calls if line.get("mutating") is True]
    assert all(line["level"] == "warn" for line in calls)
    assert [tool for event, tool in warned if event == "mcp.tool_call"] == [
        "apply_object",
        "patch_object",
        "delete_object",
    ]
    audit = {call["tool"]: call["mutating"] for call in (output.audit or {})["nested_calls"]}
    assert audit == {"apply_object": True, "patch_object": True, "get_object": False, "delete_object": True}
