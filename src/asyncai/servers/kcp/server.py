"""``socialweb-computer-kcp-readonly`` / ``-readwrite``: stdio MCP servers for kcp workspaces.

Both serve the read tools; the read-write server adds ``apply_object``, ``patch_object``,
``scale_object`` and ``delete_object``. Object tools return kubectl's ``-o json`` document as
structured content (compact JSON text); ``get_logs`` and ``delete_object`` return plain text.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from asyncai.log import dumps_compact
from asyncai.servers.kcp import kubectl as k
from asyncai.servers.kcp.descriptions import DESCRIPTIONS
from asyncai.servers.kcp.discovery import kubeconfig_paths
from asyncai.servers.kcp.service import ApiResourceList, KcpList, KcpService, WorkspaceList

READ = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
WRITE_IDEMPOTENT = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
DELETE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)

INSTRUCTIONS = (
    "Tools for kcp (multi-tenant Kubernetes control plane) logical workspaces such as root:app. "
    "Object tools return kubectl's full -o json document. The kcp argument may be omitted when "
    "list_kcps finds exactly one kcp."
)

Kcp = Annotated[
    str | None, Field(description="kcp id from list_kcps; optional when exactly one kcp is discovered")
]
WorkspacePath = Annotated[str, Field(description="kcp workspace path, e.g. root:app")]
Resource = Annotated[
    str,
    Field(description="resource type as kubectl accepts it: configmaps, pods, deployments.apps, agents, ..."),
]
Namespace = Annotated[str | None, Field(description="namespace; omitted: all namespaces for lists")]
ObjectNamespace = Annotated[
    str | None, Field(description="namespace of the object; omitted: kubectl's default namespace")
]
JsonDoc = Annotated[CallToolResult, dict[str, Any]]


def _json_result(data: Any) -> CallToolResult:
    text = TextContent(type="text", text=dumps_compact(data))
    return CallToolResult(content=[text], structured_content=data)


def build_server(service: KcpService, read_write: bool) -> MCPServer:
    name = "socialweb-computer-kcp-readwrite" if read_write else "socialweb-computer-kcp-readonly"
    server = MCPServer(name, version="0.1.0", instructions=INSTRUCTIONS)

    @server.tool(description=DESCRIPTIONS["list_kcps"], annotations=READ)
    async def list_kcps(
        refresh: Annotated[
            bool | None, Field(description="true: rediscover instead of using the cache")
        ] = None,
    ) -> Annotated[CallToolResult, KcpList]:
        return _json_result(await service.list_kcps(bool(refresh)))

    @server.tool(description=DESCRIPTIONS["list_workspaces"], annotations=READ)
    async def list_workspaces(
        kcp: Kcp = None,
        workspace: Annotated[str | None, Field(description="parent workspace path; default root")] = None,
    ) -> Annotated[CallToolResult, WorkspaceList]:
        return _json_result(await service.list_workspaces(kcp, workspace or "root"))

    @server.tool(description=DESCRIPTIONS["get_api_resources"], annotations=READ)
    async def get_api_resources(
        kcp: Kcp = None, *, workspace: WorkspacePath
    ) -> Annotated[CallToolResult, ApiResourceList]:
        return _json_result(await service.get_api_resources(kcp, workspace))

    @server.tool(description=DESCRIPTIONS["list_objects"], annotations=READ)
    async def list_objects(
        kcp: Kcp = None,
        *,
        workspace: WorkspacePath,
        resource: Resource,
        namespace: Namespace = None,
        selector: Annotated[str | None, Field(description="label selector, e.g. app=api,tier!=web")] = None,
    ) -> JsonDoc:
        return _json_result(await service.list_objects(kcp, workspace, resource, namespace, selector))

    @server.tool(description=DESCRIPTIONS["get_object"], annotations=READ)
    async def get_object(
        kcp: Kcp = None,
        *,
        workspace: WorkspacePath,
        resource: Resource,
        name: Annotated[str, Field(description="object name")],
        namespace: ObjectNamespace = None,
    ) -> JsonDoc:
        return _json_result(await service.get_object(kcp, workspace, resource, name, namespace))

    @server.tool(description=DESCRIPTIONS["get_events"], annotations=READ)
    async def get_events(
        kcp: Kcp = None, *, workspace: WorkspacePath, namespace: Namespace = None
    ) -> JsonDoc:
        return _json_result(await service.get_events(kcp, workspace, namespace))

    @server.tool(description=DESCRIPTIONS["get_logs"], annotations=READ, structured_output=False)
    async def get_logs(
        kcp: Kcp = None,
        *,
        workspace: WorkspacePath,
        pod: Annotated[str, Field(description="pod name")],
        namespace: ObjectNamespace = None,
        container: Annotated[
            str | None, Field(description="container name; default: the pod's default")
        ] = None,
        tail: Annotated[int | None, Field(description="only the last N lines", ge=0)] = None,
    ) -> str:
        return await service.get_logs(kcp, workspace, pod, namespace, container, tail)

    if not read_write:
        return server

    @server.tool(description=DESCRIPTIONS["apply_object"], annotations=WRITE_IDEMPOTENT)
    async def apply_object(
        kcp: Kcp = None,
        *,
        workspace: WorkspacePath,
        manifest: Annotated[
            dict[str, Any] | str,
            Field(
                description=(
                    "the object (JSON object) or its manifest as JSON or YAML text "
                    "(several YAML documents allowed)"
                ),
            ),
        ],
    ) -> JsonDoc:
        return _json_result(await service.apply_object(kcp, workspace, manifest))

    @server.tool(description=DESCRIPTIONS["patch_object"], annotations=WRITE)
    async def patch_object(
        kcp: Kcp = None,
        *,
        workspace: WorkspacePath,
        resource: Resource,
        name: Annotated[str, Field(description="object name")],
        patch: Annotated[
            dict[str, Any] | list[Any] | str,
            Field(description="the patch: an object (merge/strategic), a list of ops (json), or JSON text"),
        ],
        namespace: ObjectNamespace = None,
        patch_type: Annotated[
            Literal["strategic", "merge", "json"] | None, Field(description="patch type; default merge")
        ] = None,
    ) -> JsonDoc:
        result = await service.patch_object(
            kcp, workspace, resource, name, patch, namespace, patch_type or "merge"
        )
        return _json_result(result)

    @server.tool(description=DESCRIPTIONS["scale_object"], annotations=WRITE_IDEMPOTENT)
    async def scale_object(
        kcp: Kcp = None,
        *,
        workspace: WorkspacePath,
        resource: Resource,
        name: Annotated[str, Field(description="object name")],
        replicas: Annotated[int, Field(description="desired replicas", ge=0)],
        namespace: ObjectNamespace = None,
    ) -> JsonDoc:
        return _json_result(await service.scale_object(kcp, workspace, resource, name, replicas, namespace))

    @server.tool(description=DESCRIPTIONS["delete_object"], annotations=DELETE, structured_output=False)
    async def delete_object(
        kcp: Kcp = None,
        *,
        workspace: WorkspacePath,
        resource: Resource,
        name: Annotated[str, Field(description="object name")],
        namespace: ObjectNamespace = None,
    ) -> str:
        return await service.delete_object(kcp, workspace, resource, name, namespace)

    return server


def parse_args(argv: Sequence[str] | None, read_write: bool) -> argparse.Namespace:
    kind = "read-write" if read_write else "read-only"
    parser = argparse.ArgumentParser(
        prog=f"socialweb-computer-kcp-{'readwrite' if read_write else 'readonly'}",
        description=f"A {kind} stdio MCP server for kcp workspaces (drives kubectl).",
    )
    parser.add_argument(
        "--kubeconfig",
        action="append",
        default=[],
        metavar="PATH",
        help="a kcp kubeconfig (repeatable); also $ASYNCAI_KCP_KUBECONFIGS and ~/.kcp/admin.kubeconfig",
    )
    parser.add_argument(
        "--kubectl", metavar="PATH", help="kubectl binary (default: $ASYNCAI_KUBECTL, then PATH)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=k.DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help="per kubectl call (default 60)",
    )
    return parser.parse_args(argv)


def create_server(argv: Sequence[str] | None = None, read_write: bool = False) -> MCPServer:
    args = parse_args(argv, read_write)
    paths = kubeconfig_paths(args.kubeconfig, os.environ, Path.home())
    service = KcpService(k.resolve_kubectl(args.kubectl), paths, timeout=args.timeout)
    return build_server(service, read_write)


def main_readonly(argv: Sequence[str] | None = None) -> None:
    create_server(argv, read_write=False).run()


def main_readwrite(argv: Sequence[str] | None = None) -> None:
    create_server(argv, read_write=True).run()
