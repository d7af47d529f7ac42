"""Pure parts of the kcp servers (argv builders, discovery rules, parsing) and fake helpers."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from asyncai.servers.kcp import kubectl as k
from asyncai.servers.kcp.discovery import (
    KcpSelectionError,
    KcpTarget,
    base_url,
    kubeconfig_paths,
    parse_config_view,
    select_kcp,
    unique_ids,
)
from asyncai.servers.kcp.resources import preferred_group_versions, resource_rows

from .fake_kcp import json_patch, label_selector_matches, merge_patch

KC, BASE = "/k/admin.kubeconfig", "https://kcp.example:6443"


def _target(i: str) -> KcpTarget:
    return KcpTarget(id=i, kubeconfig=f"/k/{i}", server=BASE, running=True)


def test_object_argv_builders_use_json_and_workspace_server():
    server = f"{BASE}/clusters/root:app"
    builders = [
        k.get_argv(KC, BASE, "root:app", "configmaps"),
        k.get_argv(KC, BASE, "root:app", "pods", name="p", namespace="web"),
        k.apply_argv(KC, BASE, "root:app"),
        k.patch_argv(KC, BASE, "root:app", "cm", "x", "{}", "default", "json"),
        k.scale_argv(KC, BASE, "root:app", "deployments", "api", 3, "web"),
    ]
    for argv in builders:
        assert argv[:4] == ["--kubeconfig", KC, "--server", server]
        assert argv[-2:] == ["-o", "json"]
        assert "ws" not in argv
    assert "-A" in builders[0]
    assert builders[1][4:] == ["get", "pods", "p", "-n", "web", "-o", "json"]
    assert k.get_argv(KC, BASE, ":root:app", "cm", selector="a=b")[-4:] == ["-l", "a=b", "-o", "json"]
    assert k.delete_argv(KC, BASE, "root", "cm", "x")[-1] == "--wait=false"
    assert k.logs_argv(KC, BASE, "root:app", "p", "web", "c", 5)[4:] == [
        "logs",
        "p",
        "-n",
        "web",
        "-c",
        "c",
        "--tail",
        "5",
    ]


def test_raw_argv_puts_the_workspace_in_the_path_not_the_server():
    argv = k.raw_get_argv(KC, BASE + "/", "root:app", "/apis/apps/v1")
    assert argv == ["--kubeconfig", KC, "--server", BASE, "get", "--raw", "/clusters/root:app/apis/apps/v1"]


@pytest.mark.parametrize("bad", ["root/../x", "root app", "", "ROOT", "root:app/"])
def test_bad_workspaces_are_rejected(bad):
    with pytest.raises(ValueError, match="bad workspace"):
        k.get_argv(KC, BASE, bad, "configmaps")


def test_bad_patch_type_and_replicas():
    with pytest.raises(ValueError, match="patch_type"):
        k.patch_argv(KC, BASE, "root", "cm", "x", "{}", patch_type="yaml")
    with pytest.raises(ValueError, match="replicas"):
        k.scale_argv(KC, BASE, "root", "deploy", "x", -1)


def test_error_message_drops_klog_noise():
    stderr = (
        "E1202 12:12:47.312623    4278 memcache.go:381] "
        '"Couldn\'t get current server API group list" err="unknown"\n'
        "Error from server (Forbidden): unknown\n"
    )
    assert (
        k.KubectlResult(("kubectl",), 1, "", stderr).error_message()
        == "Error from server (Forbidden): unknown"
    )
    assert k.KubectlResult(("kubectl",), 2, "", "").error_message() == "kubectl exited with status 2"


def test_resolve_kubectl_order(tmp_path):
    fake = tmp_path / "kubectl"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert k.resolve_kubectl("/explicit/kubectl", {"ASYNCAI_KUBECTL": "/env/kubectl"}) == "/explicit/kubectl"
    assert k.resolve_kubectl(None, {"ASYNCAI_KUBECTL": "/env/kubectl"}) == "/env/kubectl"
    assert k.resolve_kubectl(None, {"PATH": str(tmp_path)}) == str(fake)


@pytest.mark.anyio
async def test_run_kubectl_timeout_kills_and_missing_binary():
    started = time.monotonic()
    result = await k.run_kubectl("/bin/sleep", ["30"], timeout=0.3)
    assert result.timed_out and not result.ok and "timed out after 0.3 s" in result.error_message()
    assert time.monotonic() - started < 5
    missing = await k.run_kubectl("/nonexistent/kubectl", ["version"])
    assert missing.returncode == 127 and "cannot run kubectl" in missing.stderr
    echoed = await k.run_kubectl("/bin/cat", [], stdin=b"manifest")
    assert echoed.ok and echoed.stdout == "manifest"


def test_base_url_and_config_view():
    assert base_url("https://h:6443/clusters/root") == "https://h:6443"
    assert base_url("http://127.0.0.1:1234") == "http://127.0.0.1:1234"
    with pytest.raises(ValueError):
        base_url("not a url")
    doc = {
        "current-context": "kcp",
        "clusters": [{"name": "c", "cluster": {"server": "https://h:1/clusters/root"}}],
    }
    facts = parse_config_view(doc)
    assert (facts.context, facts.server) == ("kcp", "https://h:1/clusters/root")
    with pytest.raises(ValueError, match="current-context"):
        parse_config_view({"clusters": []})
    with pytest.raises(ValueError, match="no cluster server"):
        parse_config_view({"current-context": "x", "clusters": []})


def test_unique_ids():
    assert unique_ids(["a", "b", "a", "a"]) == ["a", "b", "a-2", "a-3"]
    assert unique_ids(["a", "a-2", "a"]) == ["a", "a-2", "a-3"]


def test_select_kcp_rule():
    one, two = [_target("a")], [_target("a"), _target("b")]
    assert select_kcp(one, None).id == "a"
    assert select_kcp(two, "b").id == "b"
    assert select_kcp(two, "/k/b").id == "b"
    with pytest.raises(KcpSelectionError, match="kcp is required: 2 kcps found: a, b"):
        select_kcp(two, None)
    with pytest.raises(KcpSelectionError, match="unknown kcp 'c': 2 kcps found: a, b"):
        select_kcp(two, "c")
    with pytest.raises(KcpSelectionError, match=r"no kcp found.*errors: /x: no such file"):
        select_kcp([], None, ["/x: no such file"])


def test_kubeconfig_paths(tmp_path):
    home = tmp_path / "home"
    (home / ".kcp").mkdir(parents=True)
    default = home / ".kcp" / "admin.kubeconfig"
    env = {"ASYNCAI_KCP_KUBECONFIGS": os.pathsep.join(["/e/one", "", "/c/two"])}
    assert kubeconfig_paths(["/c/two"], env, home) == ["/c/two", "/e/one"]
    default.write_text("")
    assert kubeconfig_paths([], {}, home) == [str(default)]
    assert kubeconfig_paths([str(default)], {}, home) == [str(default)]
    assert kubeconfig_paths(["rel"], {}, home) == [str(Path("rel").resolve()), str(default)]


def test_resource_rows_and_groups():
    doc = {
        "groupVersion": "apps/v1",
        "resources": [
            {
                "name": "deployments",
                "kind": "Deployment",
                "namespaced": True,
                "verbs": ["get"],
                "shortNames": ["deploy"],
            },
            {"name": "deployments/scale", "kind": "Scale", "namespaced": True, "verbs": ["get"]},
        ],
    }
    assert resource_rows(doc) == [
        {
            "name": "deployments",
            "kind": "Deployment",
            "api_version": "apps/v1",
            "namespaced": True,
            "verbs": ["get"],
            "short_names": ["deploy"],
        }
    ]
    groups = {
        "groups": [
            {
                "name": "a",
                "versions": [{"groupVersion": "a/v2"}, {"groupVersion": "a/v1"}],
                "preferredVersion": {"groupVersion": "a/v1"},
            },
            {"name": "b", "versions": [{"groupVersion": "b/v1beta1"}]},
        ]
    }
    assert preferred_group_versions(groups) == ["a/v1", "b/v1beta1"]


def test_fake_selectors_and_patches():
    labels = {"app": "api", "tier": "backend"}
    assert label_selector_matches("app=api,tier!=web", labels)
    assert label_selector_matches("app in (api,auth),!missing", labels)
    assert not label_selector_matches("app notin (api)", labels)
    assert not label_selector_matches("missing", labels)
    assert merge_patch({"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": 3}}) == {"a": {"c": 2, "d": 3}}
    assert merge_patch({"a": 1}, {"$retainKeys": ["a"], "b": 2}, strip_directives=True) == {"a": 1, "b": 2}
    assert json_patch(
        {"a": [1]}, [{"op": "add", "path": "/a/-", "value": 2}, {"op": "replace", "path": "/a/0", "value": 0}]
    ) == {"a": [0, 2]}
