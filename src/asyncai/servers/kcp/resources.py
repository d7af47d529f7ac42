"""API discovery documents (``APIResourceList``, ``APIGroupList``) to flat resource rows."""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict


class ApiResource(TypedDict):
    name: str
    kind: str
    api_version: str
    namespaced: bool
    verbs: list[str]
    short_names: list[str]


def preferred_group_versions(group_list: Any) -> list[str]:
    """``group/version`` of each group's preferred version (first listed version as fallback)."""
    result: list[str] = []
    for group in (group_list or {}).get("groups") or []:
        preferred = group.get("preferredVersion") or {}
        gv = preferred.get("groupVersion")
        if not gv:
            versions = group.get("versions") or []
            gv = versions[0].get("groupVersion") if versions else None
        if isinstance(gv, str) and gv and gv not in result:
            result.append(gv)
    return result


def resource_rows(resource_list: Any, group_version: str | None = None) -> list[ApiResource]:
    """Top-level resources of one ``APIResourceList``; subresources (``pods/log``) are skipped."""
    doc = resource_list or {}
    api_version = str(doc.get("groupVersion") or group_version or "")
    rows: list[ApiResource] = []
    for entry in doc.get("resources") or []:
        name = entry.get("name")
        if not isinstance(name, str) or not name or "/" in name:
            continue
        rows.append(
            {
                "name": name,
                "kind": str(entry.get("kind") or ""),
                "api_version": api_version,
                "namespaced": bool(entry.get("namespaced")),
                "verbs": [str(v) for v in entry.get("verbs") or []],
                "short_names": [str(s) for s in entry.get("shortNames") or []],
            }
        )
    return rows
