"""The operations behind the kcp tools: discovery cache, kcp selection, kubectl calls, parsing.

Every failure is a ``KcpError`` whose message is one for the caller (kubectl's own stderr for
kubectl failures); the MCP layer turns it into an ``is_error`` result.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any, NotRequired

from mcp.server.mcpserver.exceptions import ToolError
from typing_extensions import TypedDict

from asyncai.servers.kcp import kubectl as k
from asyncai.servers.kcp.discovery import Discovery, KcpSelectionError, KcpTarget, discover, select_kcp
from asyncai.servers.kcp.resources import ApiResource, preferred_group_versions, resource_rows


class KcpError(ToolError):
    """A tool call failed; the message is for the caller (MCPServer turns it into an error result)."""


class KcpInfo(TypedDict):
    id: str
    kubeconfig: str
    server: str
    running: bool


class KcpList(TypedDict):
    kcps: list[KcpInfo]
    errors: list[str]


class WorkspaceList(TypedDict):
    workspaces: list[dict[str, Any]]


class ApiResourceList(TypedDict):
    resources: list[ApiResource]
    errors: NotRequired[list[str]]


def _as_text(value: Any, what: str) -> str:
    """An object or array becomes JSON text; text is passed on for kubectl to parse (JSON or YAML)."""
    if isinstance(value, dict | list):
        return json.dumps(value)
    if isinstance(value, str) and value.strip():
        return value
    raise KcpError(f"{what} must be a non-empty JSON/YAML string or an object")


class KcpService:
    def __init__(
        self, kubectl: str | None, kubeconfigs: Sequence[str], timeout: float = k.DEFAULT_TIMEOUT
    ) -> None:
        self.kubectl = kubectl
        self.kubeconfigs = list(kubeconfigs)
        self.timeout = timeout
        self._discovery: Discovery | None = None
        self._lock = asyncio.Lock()

    def _binary(self) -> str:
        if not self.kubectl:
            raise KcpError(
                "kubectl not found: pass --kubectl PATH to the server, set ASYNCAI_KUBECTL, or put it on PATH"
            )
        return self.kubectl

    async def discovery(self, refresh: bool = False) -> Discovery:
        async with self._lock:
            if self._discovery is None or refresh:
                self._discovery = await discover(self._binary(), self.kubeconfigs)
            return self._discovery

    async def target(self, kcp: str | None) -> KcpTarget:
        found = await self.discovery()
        try:
            return select_kcp(found.kcps, kcp, found.errors)
        except KcpSelectionError as exc:
            raise KcpError(str(exc)) from None

    async def run(self, args: list[str], stdin: bytes | None = None, workspace: str | None = None) -> str:
        result = await k.run_kubectl(self._binary(), args, stdin=stdin, timeout=self.timeout)
        if result.ok:
            return result.stdout
        message = result.error_message()
        if workspace and "(Forbidden)" in message:
            message += f"\n(hint: workspace {workspace!r} may not exist, or access to it is denied)"
        raise KcpError(message)

    async def run_json(
        self, args: list[str], stdin: bytes | None = None, workspace: str | None = None
    ) -> Any:
        out = await self.run(args, stdin, workspace)
        try:
            return json.loads(out)
        except ValueError:
            raise KcpError(f"kubectl printed something that is not JSON: {out[:200]!r}") from None

    async def _object(
        self, args: list[str], stdin: bytes | None = None, workspace: str | None = None
    ) -> dict[str, Any]:
        doc = await self.run_json(args, stdin, workspace)
        if not isinstance(doc, dict):
            raise KcpError(f"kubectl printed JSON that is not an object: {type(doc).__name__}")
        return doc

    @staticmethod
    def _argv(build: Any, *args: Any, **kwargs: Any) -> list[str]:
        try:
            argv: list[str] = build(*args, **kwargs)
        except ValueError as exc:
            raise KcpError(str(exc)) from None
        return argv

    # -- tools ------------------------------------------------------------------------------

    async def list_kcps(self, refresh: bool = False) -> KcpList:
        found = await self.discovery(refresh)
        kcps: list[KcpInfo] = [
            {"id": t.id, "kubeconfig": t.kubeconfig, "server": t.server, "running": t.running}
            for t in found.kcps
        ]
        return {"kcps": kcps, "errors": list(found.errors)}

    async def list_workspaces(self, kcp: str | None, workspace: str = "root") -> WorkspaceList:
        t = await self.target(kcp)
        argv = self._argv(k.get_argv, t.kubeconfig, t.server, workspace, "workspaces.tenancy.kcp.io")
        doc = await self._object(argv, workspace=workspace)
        return {"workspaces": list(doc.get("items") or [])}

    async def get_api_resources(self, kcp: str | None, workspace: str) -> ApiResourceList:
        t = await self.target(kcp)

        def raw(path: str) -> list[str]:
            return self._argv(k.raw_get_argv, t.kubeconfig, t.server, workspace, path)

        core, groups = await asyncio.gather(
            self.run_json(raw("/api/v1"), workspace=workspace),
            self.run_json(raw("/apis"), workspace=workspace),
        )
        versions = preferred_group_versions(groups)
        outcomes = await asyncio.gather(
            *(self.run_json(raw(f"/apis/{gv}"), workspace=workspace) for gv in versions),
            return_exceptions=True,
        )
        resources = resource_rows(core, "v1")
        errors: list[str] = []
        for gv, outcome in zip(versions, outcomes, strict=True):
            if isinstance(outcome, KcpError):
                errors.append(f"{gv}: {outcome}")
            elif isinstance(outcome, BaseException):
                raise outcome
            else:
                resources += resource_rows(outcome, gv)
        result: ApiResourceList = {"resources": resources}
        if errors:
            result["errors"] = errors
        return result

    async def list_objects(
        self,
        kcp: str | None,
        workspace: str,
        resource: str,
        namespace: str | None = None,
        selector: str | None = None,
    ) -> dict[str, Any]:
        t = await self.target(kcp)
        argv = self._argv(
            k.get_argv, t.kubeconfig, t.server, workspace, resource, namespace=namespace, selector=selector
        )
        return await self._object(argv, workspace=workspace)

    async def get_object(
        self, kcp: str | None, workspace: str, resource: str, name: str, namespace: str | None = None
    ) -> dict[str, Any]:
        t = await self.target(kcp)
        argv = self._argv(
            k.get_argv, t.kubeconfig, t.server, workspace, resource, name=name, namespace=namespace
        )
        return await self._object(argv, workspace=workspace)

    async def get_events(
        self, kcp: str | None, workspace: str, namespace: str | None = None
    ) -> dict[str, Any]:
        return await self.list_objects(kcp, workspace, "events", namespace)

    async def get_logs(
        self,
        kcp: str | None,
        workspace: str,
        pod: str,
        namespace: str | None = None,
        container: str | None = None,
        tail: int | None = None,
    ) -> str:
        t = await self.target(kcp)
        argv = self._argv(k.logs_argv, t.kubeconfig, t.server, workspace, pod, namespace, container, tail)
        return await self.run(argv, workspace=workspace)

    async def apply_object(self, kcp: str | None, workspace: str, manifest: Any) -> dict[str, Any]:
        t = await self.target(kcp)
        text = _as_text(manifest, "manifest")
        argv = self._argv(k.apply_argv, t.kubeconfig, t.server, workspace)
        return await self._object(argv, stdin=text.encode(), workspace=workspace)

    async def patch_object(
        self,
        kcp: str | None,
        workspace: str,
        resource: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        patch_type: str = "merge",
    ) -> dict[str, Any]:
        t = await self.target(kcp)
        text = _as_text(patch, "patch")
        argv = self._argv(
            k.patch_argv, t.kubeconfig, t.server, workspace, resource, name, text, namespace, patch_type
        )
        return await self._object(argv, workspace=workspace)

    async def scale_object(
        self,
        kcp: str | None,
        workspace: str,
        resource: str,
        name: str,
        replicas: int,
        namespace: str | None = None,
    ) -> dict[str, Any]:
        t = await self.target(kcp)
        argv = self._argv(
            k.scale_argv, t.kubeconfig, t.server, workspace, resource, name, replicas, namespace
        )
        return await self._object(argv, workspace=workspace)

    async def delete_object(
        self, kcp: str | None, workspace: str, resource: str, name: str, namespace: str | None = None
    ) -> str:
        t = await self.target(kcp)
        argv = self._argv(k.delete_argv, t.kubeconfig, t.server, workspace, resource, name, namespace)
        return (await self.run(argv, workspace=workspace)).strip()
