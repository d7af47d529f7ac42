"""Tool descriptions for the kcp servers; each ends with a one-line Python example for code mode."""

from __future__ import annotations

DESCRIPTIONS: dict[str, str] = {
    "list_kcps": (
        "List the kcp servers this MCP server knows (from its kubeconfigs) and whether each "
        "answers.\n"
        "\n"
        'Returns {"kcps": [{"id", "kubeconfig", "server", "running"}], "errors": [unreadable '
        "kubeconfigs]}.\n"
        'Example: kcps = await list_kcps(); ids = [k["id"] for k in kcps["kcps"]]'
    ),
    "list_workspaces": (
        "List the child workspaces (tenancy.kcp.io Workspace objects) of a workspace.\n"
        "\n"
        'A child\'s path is "<parent>:<metadata.name>"; its phase is status.phase.\n'
        'Example: ws = await list_workspaces(workspace="root"); paths = ["root:" + '
        'w["metadata"]["name"] for w in ws["workspaces"]]'
    ),
    "get_api_resources": (
        "List the resource types a workspace serves (core, built-in and bound APIs such as "
        "socialweb.computer).\n"
        "\n"
        "Each row: name (plural), kind, api_version, namespaced, verbs, short_names; "
        "subresources are left out.\n"
        'Example: rs = await get_api_resources(workspace="root:app"); kinds = [r["kind"] for r '
        'in rs["resources"] if r["api_version"].startswith("socialweb.computer/")]'
    ),
    "list_objects": (
        "List objects of one resource type in a workspace (kubectl get -o json, all namespaces "
        "unless given).\n"
        "\n"
        'Returns the full kubectl List document: {"apiVersion", "kind": "List", "items": '
        "[...]}.\n"
        'Example: cms = await list_objects(workspace="root:app", resource="configmaps", '
        'namespace="default")'
    ),
    "get_object": (
        "Get one object (kubectl get <resource> <name> -o json); returns the full object.\n"
        "\n"
        'Example: dep = await get_object(workspace="root:app", resource="deployments", '
        'name="api", namespace="web")'
    ),
    "get_events": (
        "List events (kubectl get events -o json), all namespaces unless one is given.\n"
        "\n"
        "Each item has type (Normal/Warning), reason, message, involvedObject, count, "
        "lastTimestamp.\n"
        'Example: ev = await get_events(workspace="root:app", namespace="web"); warn = [e for e '
        'in ev["items"] if e["type"] == "Warning"]'
    ),
    "get_logs": (
        "Fetch a pod's logs as plain text (kubectl logs).\n"
        "\n"
        'Example: text = await get_logs(workspace="root:app", pod="api-7d9f1c8b-x2k4q", '
        'namespace="web", tail=100)'
    ),
    "apply_object": (
        "Create or update objects (kubectl apply -f - -o json); returns the applied object (a "
        "List for several).\n"
        "\n"
        'Example: cm = await apply_object(workspace="root:app", manifest={"apiVersion": "v1", '
        '"kind": "ConfigMap", "metadata": {"name": "demo", "namespace": "default"}, "data": '
        '{"k": "v"}})'
    ),
    "patch_object": (
        "Patch one object (kubectl patch --type merge|strategic|json -o json); returns the "
        "patched object.\n"
        "\n"
        'Example: cm = await patch_object(workspace="root:app", resource="configmaps", '
        'name="demo", namespace="default", patch={"data": {"k": "v2"}})'
    ),
    "scale_object": (
        "Set the replicas of a scalable object (kubectl scale --replicas N -o json); returns the "
        "object.\n"
        "\n"
        'Example: dep = await scale_object(workspace="root:app", resource="deployments", '
        'name="api", namespace="web", replicas=3)'
    ),
    "delete_object": (
        "Delete one object (kubectl delete --wait=false); returns kubectl's text, e.g. "
        "'configmap \"demo\" deleted'.\n"
        "\n"
        'Example: msg = await delete_object(workspace="root:app", resource="configmaps", '
        'name="demo", namespace="default")'
    ),
}
