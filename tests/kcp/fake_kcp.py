"""A fake kcp API server for tests and demos: starlette on uvicorn, loopback only.

It serves logical workspaces under ``/clusters/<workspace>/...`` with enough of the Kubernetes
API for the real ``kubectl`` binary: discovery documents, list (namespaced, all namespaces, label
and field selectors), get, create, patch (merge, strategic-as-merge, JSON patch, server-side
apply), update, the deployment ``/scale`` subresource, delete, pod logs (text/plain) and
Kubernetes ``Status`` errors (404 NotFound, 403 Forbidden for unknown workspaces, 409 conflicts).
Every request is recorded (method, path, query, content type).

Standalone demo::

    python -m tests.kcp.fake_kcp --port 18444 --kubeconfig /tmp/fake-kcp.kubeconfig

writes a kubeconfig pointing at the server and prints the base URL as its first stdout line.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import re
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from .fixture_data import FixtureObjects, build_fixture_objects

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    categories: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def discovery(self) -> list[dict[str, Any]]:
        entry: dict[str, Any] = {
            "name": self.plural,
            "singularName": self.kind.lower(),
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(self.verbs),
        }
        if self.short_names:
            entry["shortNames"] = list(self.short_names)
        if self.categories:
            entry["categories"] = list(self.categories)
        entries = [entry]
        for sub in self.subresources:
            if sub == "scale":
                entries.append(
                    {
                        "name": f"{self.plural}/scale",
                        "singularName": "",
                        "namespaced": self.namespaced,
                        "group": "autoscaling",
                        "version": "v1",
                        "kind": "Scale",
                        "verbs": ["get", "patch", "update"],
                    }
                )
            elif sub == "log":
                entries.append(
                    {
                        "name": f"{self.plural}/log",
                        "singularName": "",
                        "namespaced": True,
                        "kind": "Pod",
                        "verbs": ["get"],
                    }
                )
            else:
                entries.append(
                    {
                        "name": f"{self.plural}/{sub}",
                        "singularName": "",
                        "namespaced": self.namespaced,
                        "kind": self.kind,
                        "verbs": ["get", "patch", "update"],
                    }
                )
        return entries


CORE_TYPES = (
    ResourceType("", "v1", "namespaces", "Namespace", False, ("ns",), ("status", "finalize")),
    ResourceType("", "v1", "configmaps", "ConfigMap", True, ("cm",)),
    ResourceType("", "v1", "pods", "Pod", True, ("po",), ("log", "status"), categories=("all",)),
    ResourceType("", "v1", "events", "Event", True, ("ev",)),
    ResourceType(
        "apps", "v1", "deployments", "Deployment", True, ("deploy",), ("scale", "status"), categories=("all",)
    ),
    ResourceType(
        "tenancy.kcp.io",
        "v1alpha1",
        "workspaces",
        "Workspace",
        False,
        ("ws",),
        ("status",),
        categories=("kcp",),
    ),
)
SOCIALWEB_TYPES = (
    ResourceType("socialweb.computer", "v1alpha1", "agents", "Agent", True, ("ag",), ("status",)),
    ResourceType("socialweb.computer", "v1alpha1", "channels", "Channel", True, ("chan",)),
)


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details or {}

    def status(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            doc["details"] = self.details
        return doc


def _not_found(rt: ResourceType, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{rt.qualified} "{name}" not found', {"name": name, "kind": rt.plural})


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: dict[str, str]
    content_type: str


@dataclass
class Workspace:
    path: str
    types: tuple[ResourceType, ...]
    objects: dict[tuple[str, str], dict[tuple[str, str], dict[str, Any]]] = field(default_factory=dict)

    def type_for(self, group: str, version: str, plural: str) -> ResourceType | None:
        for rt in self.types:
            if rt.group == group and rt.version == version and rt.plural == plural:
                return rt
        return None

    def store(self, rt: ResourceType) -> dict[tuple[str, str], dict[str, Any]]:
        return self.objects.setdefault((rt.group, rt.plural), {})


# ---------------------------------------------------------------------------------------------
# patch helpers


def merge_patch(target: Any, patch: Any, strip_directives: bool = False) -> Any:
    """RFC 7386 JSON merge patch; ``strip_directives`` drops strategic-merge ``$...`` keys."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if strip_directives and key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value, strip_directives)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    return [p.replace("~1", "/").replace("~0", "~") for p in path.lstrip("/").split("/")]


def _parent(doc: Any, parts: list[str]) -> Any:
    for part in parts[:-1]:
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def json_patch(doc: Any, ops: list[dict[str, Any]]) -> Any:
    """RFC 6902 JSON patch (add, remove, replace, test, move, copy)."""
    doc = copy.deepcopy(doc)
    for op in ops:
        kind = op.get("op")
        parts = _pointer(str(op.get("path", "")))
        try:
            if kind in ("move", "copy"):
                src = _pointer(str(op["from"]))
                holder = _parent(doc, src)
                value = copy.deepcopy(holder[int(src[-1])] if isinstance(holder, list) else holder[src[-1]])
                if kind == "move":
                    json_patch_remove(holder, src[-1])
                op = {"op": "add", "path": op["path"], "value": value}
                kind = "add"
            parent = _parent(doc, parts)
            last = parts[-1]
            if kind == "add":
                if isinstance(parent, list):
                    parent.insert(len(parent) if last == "-" else int(last), op["value"])
                else:
                    parent[last] = op["value"]
            elif kind == "replace":
                if isinstance(parent, list):
                    parent[int(last)] = op["value"]
                else:
                    if last not in parent:
                        raise KeyError(last)
                    parent[last] = op["value"]
            elif kind == "remove":
                json_patch_remove(parent, last)
            elif kind == "test":
                current = parent[int(last)] if isinstance(parent, list) else parent[last]
                if current != op.get("value"):
                    raise ValueError("test failed")
            else:
                raise ValueError(f"unknown op {kind!r}")
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            raise ApiError(
                422, "Invalid", f"the server rejected our request due to an error in our request: {exc}"
            ) from None
    return doc


def json_patch_remove(parent: Any, last: str) -> None:
    if isinstance(parent, list):
        del parent[int(last)]
    else:
        del parent[last]


# ---------------------------------------------------------------------------------------------
# selectors

_TERM_SPLIT = re.compile(r",(?![^()]*\))")
_SET_TERM = re.compile(r"^\s*([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")


def label_selector_matches(selector: str, labels: dict[str, str]) -> bool:
    for raw in _TERM_SPLIT.split(selector):
        term = raw.strip()
        if not term:
            continue
        set_match = _SET_TERM.match(term)
        if set_match:
            key, op, values = set_match.groups()
            allowed = {v.strip() for v in values.split(",")}
            present = key in labels and labels[key] in allowed
            if present != (op == "in"):
                return False
        elif "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key.strip()) == value.strip():
                return False
        elif "=" in term:
            key, value = term.replace("==", "=").split("=", 1)
            if labels.get(key.strip()) != value.strip():
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def _dig(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def field_selector_matches(selector: str, obj: dict[str, Any]) -> bool:
    for raw in selector.split(","):
        term = raw.strip()
        if not term:
            continue
        negate = "!=" in term
        key, value = term.replace("!=", "=").replace("==", "=").split("=", 1)
        actual = _dig(obj, key.strip())
        equal = ("" if actual is None else str(actual)) == value.strip()
        if equal == negate:
            return False
    return True


# ---------------------------------------------------------------------------------------------
# the cluster


class FakeKcp:
    """State of every workspace plus the request log; ``app`` is the ASGI application."""

    def __init__(self, fixture: FixtureObjects | None = None) -> None:
        self.workspaces: dict[str, Workspace] = {}
        self.requests: list[RecordedRequest] = []
        self.logs: dict[tuple[str, str, str, str], str] = {}
        self.base_url = "http://127.0.0.1"
        self._rv = 1000
        self._uid = 0
        self._lock = threading.Lock()
        if fixture is not None:
            self.load(fixture)
        self.app = Starlette(
            routes=[Route("/{path:path}", self.handle, methods=["GET", "POST", "PUT", "PATCH", "DELETE"])]
        )

    # -- state -----------------------------------------------------------------------------

    def load(self, fixture: FixtureObjects) -> None:
        for path, with_socialweb in fixture.workspaces.items():
            types = CORE_TYPES + (SOCIALWEB_TYPES if with_socialweb else ())
            self.workspaces[path] = Workspace(path, types)
        for path, obj in fixture.objects:
            self.put_object(path, obj)
        self.logs.update(fixture.logs)

    def next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    def next_uid(self) -> str:
        self._uid += 1
        return f"00000000-0000-4000-8000-{self._uid:012d}"

    def type_of(self, ws: Workspace, obj: dict[str, Any]) -> ResourceType:
        api_version = str(obj.get("apiVersion", ""))
        group, _, version = api_version.rpartition("/")
        for rt in ws.types:
            if rt.group == group and rt.version == version and rt.kind == obj.get("kind"):
                return rt
        raise ApiError(
            404, "NotFound", f"the server could not find the requested resource ({obj.get('kind')})"
        )

    def put_object(self, path: str, obj: dict[str, Any]) -> dict[str, Any]:
        ws = self.workspaces[path]
        rt = self.type_of(ws, obj)
        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", self.next_uid())
        meta.setdefault("creationTimestamp", "2026-11-20T08:00:00Z")
        meta["resourceVersion"] = self.next_rv()
        if rt.namespaced:
            meta.setdefault("namespace", "default")
        key = (meta.get("namespace", "") if rt.namespaced else "", meta["name"])
        ws.store(rt)[key] = obj
        return obj

    def get(self, path: str, plural: str, name: str, namespace: str = "") -> dict[str, Any] | None:
        ws = self.workspaces[path]
        for rt in ws.types:
            if rt.plural == plural:
                return ws.store(rt).get((namespace if rt.namespaced else "", name))
        return None

    def objects(self, path: str, plural: str, namespace: str | None = None) -> list[dict[str, Any]]:
        ws = self.workspaces[path]
        for rt in ws.types:
            if rt.plural == plural:
                return [
                    o for (ns, _), o in sorted(ws.store(rt).items()) if namespace is None or ns == namespace
                ]
        return []

    def set_base_url(self, base_url: str) -> None:
        self.base_url = base_url
        for path in self.workspaces:
            for obj in self.objects(path, "workspaces"):
                child = f"{path}:{obj['metadata']['name']}"
                obj.setdefault("spec", {})["URL"] = f"{base_url}/clusters/{child}"

    # -- HTTP ------------------------------------------------------------------------------

    async def handle(self, request: Request) -> Response:
        query = dict(parse_qsl(request.url.query, keep_blank_values=True))
        path = request.url.path
        self.requests.append(
            RecordedRequest(request.method, path, query, request.headers.get("content-type", ""))
        )
        body = await request.body()
        try:
            with self._lock:
                return self.dispatch(
                    request.method, path, query, request.headers.get("content-type", ""), body
                )
        except ApiError as exc:
            return JSONResponse(exc.status(), status_code=exc.code)

    def dispatch(self, method: str, path: str, query: dict[str, str], ctype: str, body: bytes) -> Response:
        if path in ("/version", "/healthz", "/readyz", "/livez"):
            return self.version() if path == "/version" else PlainTextResponse("ok")
        match = re.fullmatch(r"/clusters/([^/]+)(/.*)?", path)
        if not match:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        ws_path, rest = match.group(1), match.group(2) or "/"
        ws = self.workspaces.get(ws_path)
        if ws is None:
            raise ApiError(
                403,
                "Forbidden",
                f'access to workspace "{ws_path}" denied: '
                "the workspace does not exist or you lack permission",
            )
        if rest in ("/version", "/healthz", "/readyz", "/livez"):
            return self.version() if rest == "/version" else PlainTextResponse("ok")
        segs = [s for s in rest.split("/") if s]
        if segs[:2] == ["openapi", "v3"]:
            return JSONResponse(self.openapi_v3(ws, "/".join(segs[2:])))
        if segs == ["api"]:
            return JSONResponse(
                {
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
                }
            )
        if segs == ["apis"]:
            return JSONResponse(self.group_list(ws))
        if segs[:2] == ["api", "v1"]:
            group, version, tail = "", "v1", segs[2:]
        elif segs and segs[0] == "apis" and len(segs) >= 3:
            group, version, tail = segs[1], segs[2], segs[3:]
        elif segs and segs[0] == "apis" and len(segs) == 2:
            return JSONResponse(self.group(ws, segs[1]))
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if not tail:
            return JSONResponse(self.resource_list(ws, group, version))
        return self.resource_request(ws, group, version, tail, method, query, ctype, body)

    def version(self) -> JSONResponse:
        return JSONResponse(
            {
                "major": "1",
                "minor": "33",
                "gitVersion": "v1.33.3+kcp-v0.28.0",
                "platform": "linux/amd64",
                "goVersion": "go1.24.4",
            }
        )

    def openapi_v3(self, ws: Workspace, gv_path: str) -> dict[str, Any]:
        """Just enough OpenAPI v3 for kubectl to see server-side field validation (no schemas)."""
        paths = {f"api/{rt.version}" if not rt.group else f"apis/{rt.group}/{rt.version}" for rt in ws.types}
        if not gv_path:
            prefix = f"/clusters/{ws.path}/openapi/v3"
            return {"paths": {p: {"serverRelativeURL": f"{prefix}/{p}?hash=fake"} for p in sorted(paths)}}
        if gv_path not in paths:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        doc_paths: dict[str, Any] = {}
        for rt in ws.types:
            if (f"api/{rt.version}" if not rt.group else f"apis/{rt.group}/{rt.version}") != gv_path:
                continue
            scope = "/namespaces/{namespace}" if rt.namespaced else ""
            gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
            param = {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}
            doc_paths[f"/{gv_path}{scope}/{rt.plural}/{{name}}"] = {
                "patch": {
                    "operationId": f"patch{rt.kind}",
                    "parameters": [param],
                    "responses": {"200": {"description": "OK"}},
                    "x-kubernetes-action": "patch",
                    "x-kubernetes-group-version-kind": gvk,
                }
            }
        return {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": "v1.33.3+kcp"},
            "paths": doc_paths,
            "components": {"schemas": {}},
        }

    def group_list(self, ws: Workspace) -> dict[str, Any]:
        groups: dict[str, list[str]] = {}
        for rt in ws.types:
            if rt.group:
                versions = groups.setdefault(rt.group, [])
                if rt.version not in versions:
                    versions.append(rt.version)
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [self._group_doc(g, vs) for g, vs in groups.items()],
        }

    @staticmethod
    def _group_doc(group: str, versions: list[str]) -> dict[str, Any]:
        docs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": docs, "preferredVersion": docs[0]}

    def group(self, ws: Workspace, group: str) -> dict[str, Any]:
        versions = [rt.version for rt in ws.types if rt.group == group]
        if not versions:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return {"kind": "APIGroup", "apiVersion": "v1", **self._group_doc(group, sorted(set(versions)))}

    def resource_list(self, ws: Workspace, group: str, version: str) -> dict[str, Any]:
        types = [rt for rt in ws.types if rt.group == group and rt.version == version]
        if not types:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": [entry for rt in types for entry in rt.discovery()],
        }

    def resource_request(
        self,
        ws: Workspace,
        group: str,
        version: str,
        tail: list[str],
        method: str,
        query: dict[str, str],
        ctype: str,
        body: bytes,
    ) -> Response:
        namespace: str | None = None
        if tail[0] == "namespaces" and len(tail) >= 3 and ws.type_for(group, version, tail[2]) is not None:
            namespace, tail = tail[1], tail[2:]
        rt = ws.type_for(group, version, tail[0])
        if rt is None or len(tail) > 3:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if namespace is not None and not rt.namespaced:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        name = tail[1] if len(tail) >= 2 else None
        sub = tail[2] if len(tail) == 3 else None
        store = ws.store(rt)
        if name is None:
            if method == "GET":
                return JSONResponse(self.list_doc(rt, store, namespace, query))
            if method == "POST":
                return JSONResponse(self.create(ws, rt, namespace, self._json(body)), status_code=201)
            raise ApiError(405, "MethodNotAllowed", f"method {method} not allowed on a collection")
        key = (namespace or "" if rt.namespaced else "", name)
        if rt.namespaced and namespace is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        obj = store.get(key)
        if sub == "log" and rt.plural == "pods":
            return self.pod_log(ws, obj, rt, name, query)
        if sub == "scale" and "scale" in rt.subresources:
            return self.scale(ws, rt, obj, name, method, ctype, body)
        if sub is not None and sub not in rt.subresources:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if method == "GET":
            if obj is None:
                raise _not_found(rt, name)
            return JSONResponse(obj)
        if method == "DELETE":
            if obj is None:
                raise _not_found(rt, name)
            del store[key]
            return JSONResponse(obj)
        if method == "PUT":
            if obj is None:
                raise _not_found(rt, name)
            new = self._json(body)
            return JSONResponse(self.update(ws, rt, obj, new))
        if method == "PATCH":
            return self.patch(ws, rt, namespace, name, obj, ctype, body)
        raise ApiError(405, "MethodNotAllowed", f"method {method} not allowed")

    @staticmethod
    def _json(body: bytes) -> Any:
        try:
            return json.loads(body or b"null")
        except ValueError as exc:
            raise ApiError(
                400, "BadRequest", f"the body of the request was in an unknown format: {exc}"
            ) from None

    def list_doc(
        self,
        rt: ResourceType,
        store: dict[tuple[str, str], dict[str, Any]],
        namespace: str | None,
        query: dict[str, str],
    ) -> dict[str, Any]:
        if query.get("watch") in ("true", "1"):
            raise ApiError(405, "MethodNotAllowed", "watch is not supported by the fake kcp")
        labels = query.get("labelSelector", "")
        fields = query.get("fieldSelector", "")
        items = []
        for (ns, _), obj in sorted(store.items()):
            if namespace is not None and ns != namespace:
                continue
            if labels and not label_selector_matches(labels, obj.get("metadata", {}).get("labels") or {}):
                continue
            if fields and not field_selector_matches(fields, obj):
                continue
            items.append(obj)
        return {
            "apiVersion": rt.api_version,
            "kind": f"{rt.kind}List",
            "metadata": {"resourceVersion": str(self._rv)},
            "items": items,
        }

    def create(self, ws: Workspace, rt: ResourceType, namespace: str | None, obj: Any) -> dict[str, Any]:
        if (
            not isinstance(obj, dict)
            or not isinstance(obj.get("metadata"), dict)
            or not obj["metadata"].get("name")
        ):
            raise ApiError(
                422, "Invalid", f"{rt.kind} is invalid: metadata.name: Required value: name is required"
            )
        if obj.get("kind") not in (None, rt.kind):
            raise ApiError(400, "BadRequest", f"the kind {obj.get('kind')!r} does not match {rt.kind!r}")
        obj = dict(obj)
        obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
        meta = obj["metadata"] = dict(obj["metadata"])
        if rt.namespaced:
            meta["namespace"] = namespace or meta.get("namespace") or "default"
        key = (meta.get("namespace", ""), meta["name"])
        if key in ws.store(rt):
            raise ApiError(
                409,
                "AlreadyExists",
                f'{rt.qualified} "{meta["name"]}" already exists',
                {"name": meta["name"]},
            )
        meta.pop("resourceVersion", None)
        meta["uid"] = self.next_uid()
        meta["creationTimestamp"] = "2026-12-01T12:00:00Z"
        meta["generation"] = 1
        return self.put_object(ws.path, obj)

    def update(self, ws: Workspace, rt: ResourceType, old: dict[str, Any], new: Any) -> dict[str, Any]:
        if not isinstance(new, dict):
            raise ApiError(400, "BadRequest", "the body of the request must be an object")
        new = copy.deepcopy(new)
        new["apiVersion"], new["kind"] = rt.api_version, rt.kind
        meta = new.setdefault("metadata", {})
        old_meta = old["metadata"]
        for keep in ("name", "namespace", "uid", "creationTimestamp"):
            if keep in old_meta:
                meta[keep] = old_meta[keep]
        generation = int(old_meta.get("generation", 1))
        meta["generation"] = generation + 1 if new.get("spec") != old.get("spec") else generation
        return self.put_object(ws.path, new)

    def patch(
        self,
        ws: Workspace,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        obj: dict[str, Any] | None,
        ctype: str,
        body: bytes,
    ) -> Response:
        media = ctype.split(";")[0].strip()
        patch = self._json(body)
        if media == "application/apply-patch+yaml":
            if obj is None:
                return JSONResponse(self.create(ws, rt, namespace, patch), status_code=201)
            return JSONResponse(self.update(ws, rt, obj, merge_patch(obj, patch)))
        if obj is None:
            raise _not_found(rt, name)
        if media == "application/merge-patch+json":
            new = merge_patch(obj, patch)
        elif media == "application/strategic-merge-patch+json":
            new = merge_patch(obj, patch, strip_directives=True)
        elif media == "application/json-patch+json":
            if not isinstance(patch, list):
                raise ApiError(400, "BadRequest", "a JSON patch must be a list of operations")
            new = json_patch(obj, patch)
        else:
            raise ApiError(
                415, "UnsupportedMediaType", f"the media type {media!r} is not supported for patch"
            )
        return JSONResponse(self.update(ws, rt, obj, new))

    def scale(
        self,
        ws: Workspace,
        rt: ResourceType,
        obj: dict[str, Any] | None,
        name: str,
        method: str,
        ctype: str,
        body: bytes,
    ) -> Response:
        if obj is None:
            raise _not_found(rt, name)
        if method in ("PUT", "PATCH"):
            doc = self._json(body)
            if method == "PATCH" and ctype.startswith("application/json-patch+json"):
                doc = json_patch(self._scale_doc(obj), doc)
            replicas = _dig(doc, "spec.replicas")
            if not isinstance(replicas, int) or replicas < 0:
                raise ApiError(
                    422, "Invalid", f"Scale.autoscaling {name!r} is invalid: spec.replicas: Invalid value"
                )
            new = merge_patch(obj, {"spec": {"replicas": replicas}})
            obj = self.update(ws, rt, obj, new)
        elif method != "GET":
            raise ApiError(405, "MethodNotAllowed", f"method {method} not allowed on scale")
        return JSONResponse(self._scale_doc(obj))

    @staticmethod
    def _scale_doc(obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        replicas = int(_dig(obj, "spec.replicas") or 0)
        match_labels = _dig(obj, "spec.selector.matchLabels") or {}
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                "name": meta["name"],
                "namespace": meta.get("namespace", ""),
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
                "creationTimestamp": meta.get("creationTimestamp"),
            },
            "spec": {"replicas": replicas},
            "status": {
                "replicas": int(_dig(obj, "status.replicas") or 0),
                "selector": ",".join(f"{k}={v}" for k, v in match_labels.items()),
            },
        }

    def pod_log(
        self, ws: Workspace, pod: dict[str, Any] | None, rt: ResourceType, name: str, query: dict[str, str]
    ) -> Response:
        if pod is None:
            raise _not_found(rt, name)
        containers = [c["name"] for c in _dig(pod, "spec.containers") or []]
        container = query.get("container") or (containers[0] if containers else "")
        if container not in containers:
            raise ApiError(400, "BadRequest", f"container {container} is not valid for pod {name}")
        text = self.logs.get((ws.path, pod["metadata"]["namespace"], name, container), "")
        tail = query.get("tailLines")
        if tail is not None:
            lines = text.splitlines(keepends=True)
            text = "".join(lines[-int(tail) :]) if int(tail) > 0 else ""
        return PlainTextResponse(text)


# ---------------------------------------------------------------------------------------------
# serving


def build_fixture_cluster(seed: int = 5) -> FakeKcp:
    """The demo/benchmark cluster: workspaces root, root:app (busy), root:team."""
    return FakeKcp(build_fixture_objects(seed))


@contextlib.contextmanager
def serve(port: int = 0, cluster: FakeKcp | None = None) -> Iterator[tuple[str, FakeKcp]]:
    """Serve ``cluster`` (default: the fixture cluster) on 127.0.0.1 in a background thread.

    Yields ``(base_url, cluster)``; the server stops when the context exits.
    """
    kcp = cluster if cluster is not None else build_fixture_cluster()
    config = uvicorn.Config(kcp.app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="fake-kcp", daemon=True)
    thread.start()
    deadline = time.monotonic() + 15.0
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            thread.join(5.0)
            raise RuntimeError("fake kcp server did not start")
        time.sleep(0.01)  # bounded readiness poll, not a synchronisation sleep
    bound = server.servers[0].sockets[0].getsockname()[1]
    base_url = f"http://127.0.0.1:{bound}"
    kcp.set_base_url(base_url)
    try:
        yield base_url, kcp
    finally:
        server.should_exit = True
        thread.join(10.0)


def kubeconfig_text(base_url: str, context: str = "fake-kcp", workspace: str = "root") -> str:
    """A YAML kubeconfig (as kubectl and kcp write them) pointing at ``base_url/clusters/<workspace>``."""
    return (
        "apiVersion: v1\n"
        "kind: Config\n"
        "clusters:\n"
        f"- name: {context}\n"
        "  cluster:\n"
        f"    server: {base_url}/clusters/{workspace}\n"
        "contexts:\n"
        f"- name: {context}\n"
        "  context:\n"
        f"    cluster: {context}\n"
        "    user: kcp-admin\n"
        f"current-context: {context}\n"
        "users:\n"
        "- name: kcp-admin\n"
        "  user:\n"
        "    token: fake-admin-token\n"
    )


def write_kubeconfig(
    path: str | Path, base_url: str, context: str = "fake-kcp", workspace: str = "root"
) -> Path:
    out = Path(path)
    out.write_text(kubeconfig_text(base_url, context, workspace))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.kcp.fake_kcp", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: pick a free one)")
    parser.add_argument("--kubeconfig", help="write a kubeconfig pointing at the server here")
    parser.add_argument("--context", default="fake-kcp", help="context name in the kubeconfig")
    parser.add_argument("--seed", type=int, default=5, help="fixture seed")
    args = parser.parse_args(argv)
    with serve(args.port, build_fixture_cluster(args.seed)) as (base_url, _):
        path = write_kubeconfig(args.kubeconfig, base_url, args.context) if args.kubeconfig else None
        print(base_url, flush=True)  # first line: the base URL (the kubeconfig, if asked for, exists now)
        if path is not None:
            print(
                f"kubeconfig: {path} (context {args.context}, workspaces root, root:app, root:team)",
                flush=True,
            )
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main(sys.argv[1:])
