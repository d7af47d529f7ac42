"""The bundled kcp MCP servers as real stdio subprocesses, through asyncai's own client, driving
the real kubectl (via a recording shim) against the fake kcp."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from asyncai.tools import McpServers, StdioServerSpec, ToolCallOutput

from .fake_kcp import write_kubeconfig
from .fixture_data import BUSY_NAMESPACE

pytestmark = pytest.mark.anyio

APP = "root:app"
READ_TOOLS = {
    "list_kcps",
    "list_workspaces",
    "get_api_resources",
    "list_objects",
    "get_object",
    "get_events",
    "get_logs",
}
WRITE_TOOLS = {"apply_object", "patch_object", "scale_object"}
ALL_TOOLS = READ_TOOLS | WRITE_TOOLS | {"delete_object"}
TEXT_TOOLS = {"get_logs", "delete_object"}


def _s(out: ToolCallOutput) -> dict[str, Any]:
    assert out.structured is not None, out.content
    return out.structured


def _flag(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


async def test_tools_list_annotations_and_schemas(rw, ro):
    tools = {t.name: t for t in rw.tools()}
    assert set(tools) == ALL_TOOLS
    for name in READ_TOOLS:
        assert tools[name].read_only and not tools[name].destructive, name
    for name in WRITE_TOOLS:
        assert not tools[name].read_only and not tools[name].destructive, name
    assert tools["delete_object"].destructive and not tools["delete_object"].read_only
    for name, tool in tools.items():
        if name in TEXT_TOOLS:
            assert tool.output_schema is None, name
        else:
            assert tool.output_schema is not None and tool.output_schema["type"] == "object", name
        assert tool.description.strip().splitlines()[-1].strip().startswith("Example: "), name
        assert "= await " + name + "(" in tool.description, name
    assert tools["get_api_resources"].output_schema["required"] == ["resources"]
    assert set(tools["list_kcps"].output_schema["required"]) == {"kcps", "errors"}
    assert "workspace" in tools["list_objects"].input_schema["required"]
    assert "kcp" not in tools["list_objects"].input_schema.get("required", [])

    ro_names = {t.name for t in ro.tools()}
    assert ro_names == READ_TOOLS
    assert all(t.read_only for t in ro.tools())
    out = await ro.call_tool("apply_object", {"workspace": APP, "manifest": {}})
    assert out.is_error and "unknown tool" in out.content


async def test_list_kcps(rw, kcp_env):
    out = await rw.call_tool("list_kcps", {})
    assert not out.is_error, out.content
    assert out.structured == {
        "kcps": [
            {
                "id": "fake-kcp",
                "kubeconfig": str(kcp_env.kubeconfig),
                "server": kcp_env.base_url,
                "running": True,
            }
        ],
        "errors": [],
    }
    again = await rw.call_tool("list_kcps", {"refresh": True})
    assert again.structured == out.structured


async def test_list_objects_busy_namespace_and_argv(rw, kcp_env):
    before = len(kcp_env.argv_lines())
    out = await rw.call_tool(
        "list_objects", {"workspace": APP, "resource": "configmaps", "namespace": BUSY_NAMESPACE}
    )
    assert not out.is_error, out.content
    assert out.structured is not None and json.loads(out.content) == out.structured
    items = out.structured["items"]
    assert len(items) == 360 and all(i["kind"] == "ConfigMap" for i in items)
    assert {i["metadata"]["namespace"] for i in items} == {BUSY_NAMESPACE}

    every = await rw.call_tool("list_objects", {"workspace": APP, "resource": "cm"})
    namespaces = {i["metadata"]["namespace"] for i in every.structured["items"]}
    assert {BUSY_NAMESPACE, "monitoring", "default", "ingress"} <= namespaces

    selected = await rw.call_tool(
        "list_objects",
        {"workspace": APP, "resource": "pods", "namespace": BUSY_NAMESPACE, "selector": "app=api"},
    )
    pods = selected.structured["items"]
    assert pods and all(p["metadata"]["labels"]["app"] == "api" for p in pods)

    calls = [a for a in kcp_env.argv_lines()[before:] if "get" in a]
    assert len(calls) == 3
    for argv in calls:
        assert argv[-2:] == ["-o", "json"]
        assert _flag(argv, "--server") == f"{kcp_env.base_url}/clusters/{APP}"
        assert _flag(argv, "--kubeconfig") == str(kcp_env.kubeconfig)
    assert "-A" in calls[1] and "-n" not in calls[1]
    assert _flag(calls[2], "-l") == "app=api"
    lists = [
        r
        for r in kcp_env.cluster.requests
        if r.path == f"/clusters/{APP}/api/v1/namespaces/{BUSY_NAMESPACE}/pods"
    ]
    assert any(r.query.get("labelSelector") == "app=api" for r in lists)


async def test_get_object_events_workspaces_logs(rw):
    dep = await rw.call_tool(
        "get_object",
        {"workspace": APP, "resource": "deployments", "name": "api", "namespace": BUSY_NAMESPACE},
    )
    assert not dep.is_error, dep.content
    assert dep.structured["kind"] == "Deployment" and dep.structured["metadata"]["name"] == "api"

    events = await rw.call_tool("get_events", {"workspace": APP, "namespace": BUSY_NAMESPACE})
    types = {e["type"] for e in events.structured["items"]}
    assert types == {"Normal", "Warning"}

    ws = await rw.call_tool("list_workspaces", {})
    assert not ws.is_error, ws.content
    assert sorted(w["metadata"]["name"] for w in ws.structured["workspaces"]) == ["app", "team"]
    assert all(w["kind"] == "Workspace" for w in ws.structured["workspaces"])

    pods = await rw.call_tool(
        "list_objects", {"workspace": APP, "resource": "pods", "namespace": BUSY_NAMESPACE}
    )
    pod = pods.structured["items"][0]["metadata"]["name"]
    logs = await rw.call_tool(
        "get_logs", {"workspace": APP, "pod": pod, "namespace": BUSY_NAMESPACE, "tail": 3}
    )
    assert not logs.is_error and logs.structured is None
    lines = logs.content.strip().splitlines()
    assert len(lines) == 3 and all("request handled" in line for line in lines)
    envoy = await rw.call_tool(
        "get_logs", {"workspace": APP, "pod": pod, "namespace": BUSY_NAMESPACE, "container": "envoy"}
    )
    assert envoy.content.strip() == "[info] envoy ready"


async def test_get_api_resources(rw, kcp_env):
    before = len(kcp_env.argv_lines())
    out = await rw.call_tool("get_api_resources", {"workspace": APP})
    assert not out.is_error, out.content
    rows = out.structured["resources"]
    by_name = {r["name"]: r for r in rows}
    assert by_name["agents"] == {
        "name": "agents",
        "kind": "Agent",
        "api_version": "socialweb.computer/v1alpha1",
        "namespaced": True,
        "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
        "short_names": ["ag"],
    }
    assert by_name["channels"]["kind"] == "Channel"
    assert by_name["deployments"]["api_version"] == "apps/v1"
    assert by_name["configmaps"]["api_version"] == "v1" and by_name["configmaps"]["short_names"] == ["cm"]
    assert by_name["workspaces"]["namespaced"] is False
    assert not any("/" in r["name"] for r in rows)
    raws = [a for a in kcp_env.argv_lines()[before:] if "--raw" in a]
    assert {_flag(a, "--raw") for a in raws} == {
        f"/clusters/{APP}/api/v1",
        f"/clusters/{APP}/apis",
        f"/clusters/{APP}/apis/apps/v1",
        f"/clusters/{APP}/apis/tenancy.kcp.io/v1alpha1",
        f"/clusters/{APP}/apis/socialweb.computer/v1alpha1",
    }
    assert all(_flag(a, "--server") == kcp_env.base_url for a in raws)

    team = await rw.call_tool("get_api_resources", {"workspace": "root:team"})
    assert "agents" not in {r["name"] for r in team.structured["resources"]}


async def test_errors_carry_kubectl_messages(rw):
    missing = await rw.call_tool(
        "get_object", {"workspace": APP, "resource": "configmaps", "name": "nope", "namespace": "default"}
    )
    assert missing.is_error and 'configmaps "nope" not found' in missing.content
    unknown = await rw.call_tool("list_objects", {"workspace": APP, "resource": "gizmos"})
    assert unknown.is_error and 'the server doesn\'t have a resource type "gizmos"' in unknown.content
    forbidden = await rw.call_tool("list_objects", {"workspace": "root:nope", "resource": "configmaps"})
    assert forbidden.is_error and "Forbidden" in forbidden.content and "root:nope" in forbidden.content
    raw_forbidden = await rw.call_tool("get_api_resources", {"workspace": "root:nope"})
    assert raw_forbidden.is_error and "Forbidden" in raw_forbidden.content
    bad = await rw.call_tool("list_objects", {"workspace": "root/../x", "resource": "configmaps"})
    assert bad.is_error and "bad workspace" in bad.content
    no_kcp = await rw.call_tool("list_objects", {"kcp": "elsewhere", "workspace": APP, "resource": "pods"})
    assert no_kcp.is_error and "unknown kcp 'elsewhere'" in no_kcp.content and "fake-kcp" in no_kcp.content
    log = await rw.call_tool("get_logs", {"workspace": APP, "pod": "nope", "namespace": BUSY_NAMESPACE})
    assert log.is_error and 'pods "nope" not found' in log.content


async def test_write_tools_change_the_fake(rw, kcp_env):
    cluster = kcp_env.cluster
    before = len(kcp_env.argv_lines())
    manifest = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "t-apply", "namespace": "default"},
        "data": {"k": "v1"},
    }
    applied = await rw.call_tool("apply_object", {"workspace": APP, "manifest": manifest})
    assert not applied.is_error, applied.content
    assert applied.structured["metadata"]["name"] == "t-apply"
    assert cluster.get(APP, "configmaps", "t-apply", "default")["data"] == {"k": "v1"}

    yaml_text = (
        "apiVersion: socialweb.computer/v1alpha1\nkind: Agent\nmetadata:\n  name: t-agent\n"
        f"  namespace: {BUSY_NAMESPACE}\nspec:\n  model: qwen3-27b\n  replicas: 2\n"
    )
    agent = await rw.call_tool("apply_object", {"workspace": APP, "manifest": yaml_text})
    assert not agent.is_error, agent.content
    assert cluster.get(APP, "agents", "t-agent", BUSY_NAMESPACE)["spec"] == {
        "model": "qwen3-27b",
        "replicas": 2,
    }

    merged = await rw.call_tool(
        "patch_object",
        {
            "workspace": APP,
            "resource": "configmaps",
            "name": "t-apply",
            "namespace": "default",
            "patch": {"data": {"k": "v2"}},
        },
    )
    assert not merged.is_error, merged.content
    assert merged.structured["data"] == {"k": "v2"}
    ops = json.dumps([{"op": "add", "path": "/data/extra", "value": "x"}])
    jsonp = await rw.call_tool(
        "patch_object",
        {
            "workspace": APP,
            "resource": "configmaps",
            "name": "t-apply",
            "namespace": "default",
            "patch": ops,
            "patch_type": "json",
        },
    )
    assert not jsonp.is_error, jsonp.content
    assert cluster.get(APP, "configmaps", "t-apply", "default")["data"] == {"k": "v2", "extra": "x"}
    strategic = await rw.call_tool(
        "patch_object",
        {
            "workspace": APP,
            "resource": "deployments",
            "name": "feed",
            "namespace": BUSY_NAMESPACE,
            "patch": {"metadata": {"labels": {"patched": "yes"}}},
            "patch_type": "strategic",
        },
    )
    assert not strategic.is_error, strategic.content
    assert cluster.get(APP, "deployments", "feed", BUSY_NAMESPACE)["metadata"]["labels"]["patched"] == "yes"

    scaled = await rw.call_tool(
        "scale_object",
        {
            "workspace": APP,
            "resource": "deployments",
            "name": "search",
            "namespace": BUSY_NAMESPACE,
            "replicas": 13,
        },
    )
    assert not scaled.is_error, scaled.content
    assert cluster.get(APP, "deployments", "search", BUSY_NAMESPACE)["spec"]["replicas"] == 13
    assert any(r.method == "PATCH" and r.path.endswith("/deployments/search/scale") for r in cluster.requests)

    deleted = await rw.call_tool(
        "delete_object",
        {"workspace": APP, "resource": "configmaps", "name": "t-apply", "namespace": "default"},
    )
    assert not deleted.is_error and deleted.structured is None
    assert 'configmap "t-apply" deleted' in deleted.content
    assert cluster.get(APP, "configmaps", "t-apply", "default") is None
    again = await rw.call_tool(
        "delete_object",
        {"workspace": APP, "resource": "configmaps", "name": "t-apply", "namespace": "default"},
    )
    assert again.is_error and 'configmaps "t-apply" not found' in again.content

    argvs = kcp_env.argv_lines()[before:]
    verbs = [a[4] for a in argvs]
    assert verbs == ["apply", "apply", "patch", "patch", "patch", "scale", "delete", "delete"]
    for argv in argvs:
        assert _flag(argv, "--server") == f"{kcp_env.base_url}/clusters/{APP}"
        assert "ws" not in argv
        if argv[4] != "delete":
            assert argv[-2:] == ["-o", "json"]


async def test_concurrent_calls(rw):
    calls = [
        rw.call_tool("list_objects", {"workspace": APP, "resource": r, "namespace": BUSY_NAMESPACE})
        for r in ("configmaps", "pods", "events", "deployments", "agents")
    ]
    outs = await asyncio.gather(*calls)
    assert [o.is_error for o in outs] == [False] * 5
    counts = [len(o.structured["items"]) for o in outs]
    assert counts[0] == 360 and counts[1] == 84 and counts[2] == 150 and counts[4] >= 3


async def test_two_kcps_require_the_kcp_argument(kcp_env, tmp_path):
    second = write_kubeconfig(tmp_path / "second.kubeconfig", kcp_env.base_url, "kcp-b")
    twin = write_kubeconfig(tmp_path / "twin.kubeconfig", kcp_env.base_url, "fake-kcp")
    broken = tmp_path / "broken.kubeconfig"
    broken.write_text("this: [is not a kubeconfig")
    missing = tmp_path / "missing.kubeconfig"
    spec = kcp_env.spec(True, kubeconfigs=(kcp_env.kubeconfig, second, broken, missing))
    async with McpServers([spec], tool_timeout=60) as ex:
        listed = await ex.call_tool("list_kcps", {})
        assert [k["id"] for k in _s(listed)["kcps"]] == ["fake-kcp", "kcp-b"]
        errors = _s(listed)["errors"]
        assert len(errors) == 2 and str(broken) in errors[0] and str(missing) in errors[1]
        out = await ex.call_tool("list_objects", {"workspace": APP, "resource": "agents"})
        assert out.is_error and "kcp is required: 2 kcps found: fake-kcp, kcp-b" in out.content
        ok = await ex.call_tool("list_objects", {"kcp": "kcp-b", "workspace": APP, "resource": "agents"})
        assert not ok.is_error and len(_s(ok)["items"]) >= 3

    # two kubeconfigs with the same current-context get distinct ids
    spec = kcp_env.spec(False, kubeconfigs=(kcp_env.kubeconfig, twin))
    async with McpServers([spec], tool_timeout=60) as ex:
        listed = await ex.call_tool("list_kcps", {})
        assert [k["id"] for k in _s(listed)["kcps"]] == ["fake-kcp", "fake-kcp-2"]


async def test_default_kubeconfig_and_env(kcp_env, tmp_path):
    home = tmp_path / "home"
    (home / ".kcp").mkdir(parents=True)
    write_kubeconfig(home / ".kcp" / "admin.kubeconfig", kcp_env.base_url, "from-home")
    extra = write_kubeconfig(tmp_path / "env.kubeconfig", kcp_env.base_url, "from-env")
    script = Path(sys.executable).parent / "socialweb-computer-kcp-readonly"
    spec = StdioServerSpec(
        name="kcp-env",
        command=str(script),
        args=("--kubectl", str(kcp_env.kubectl)),
        env={"HOME": str(home), "ASYNCAI_KCP_KUBECONFIGS": str(extra)},
    )
    async with McpServers([spec], tool_timeout=60) as ex:
        listed = await ex.call_tool("list_kcps", {})
        assert [k["id"] for k in _s(listed)["kcps"]] == ["from-env", "from-home"]


def test_fake_kcp_standalone(tmp_path):
    kubeconfig = tmp_path / "demo.kubeconfig"
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.kcp.fake_kcp", "--port", "0", "--kubeconfig", str(kubeconfig)],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        assert first.startswith("http://127.0.0.1:")
        assert f"server: {first}/clusters/root" in kubeconfig.read_text()
        assert proc.stdout.readline().startswith(f"kubeconfig: {kubeconfig}")
    finally:
        proc.terminate()
        proc.wait(10)
