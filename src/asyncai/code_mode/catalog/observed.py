"""Shapes learned from real results, for tools that declare no output schema.

Most community MCP servers declare none and answer JSON text, so their stubs say ``-> Any`` and a
small model guesses the shape. What such a tool actually returned is remembered as a schema
inferred from the value (keys, which ones were sometimes missing, types; never the values),
merged across calls, kept per server and tool in the state directory, and shown in the next
process's stubs as ``Returns (observed): ...``. A declared schema always wins, and nothing ever
fails because of an observation: a value that contradicts the shape widens it.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from asyncai.files import write_private
from asyncai.log import log_event
from asyncai.tools.types import ToolDefinition

MAX_DEPTH = 4
MAX_PROPERTIES = 30
"""Keys kept per object: the sketch shows 12, and a bounded file stays small."""
MAX_ITEMS_LOOKED_AT = 20
MAX_ENTRIES = 500
"""Tools remembered; the least recently seen go first."""
MAX_RESULT_CHARS = 1_000_000
"""A larger result is not parsed on the host to learn its shape (the event loop comes first)."""
TTL_SECONDS = 30 * 24 * 3600.0
SHAPES_FILE = "shapes.json"


def infer(value: Any, depth: int = 0) -> dict[str, Any]:
    """A JSON schema for ``value``'s shape (no values)."""
    if value is None:
        return {"type": "null"}
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if depth >= MAX_DEPTH:
        return {"type": "object"} if isinstance(value, dict) else {"type": "array"}
    if isinstance(value, dict):
        keys = list(value)[:MAX_PROPERTIES]
        return {
            "type": "object",
            "properties": {str(key): infer(value[key], depth + 1) for key in keys},
            "required": [str(key) for key in keys],
        }
    if isinstance(value, list):
        items: dict[str, Any] | None = None
        for item in value[:MAX_ITEMS_LOOKED_AT]:
            items = infer(item, depth + 1) if items is None else merge(items, infer(item, depth + 1))
        return {"type": "array", "items": items} if items is not None else {"type": "array"}
    return {}


def _members(schema: dict[str, Any]) -> list[dict[str, Any]]:
    return list(schema["anyOf"]) if "anyOf" in schema else [schema]


def merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """One schema that fits what both describe: objects merge their keys (required only when in
    both), arrays their items, other types become a union."""
    members = _members(a)
    for new in _members(b):
        same = next((m for m in members if m.get("type") == new.get("type")), None)
        if same is None:
            members.append(new)
            continue
        merged = dict(same)
        if new.get("type") == "object" and ("properties" in same or "properties" in new):
            properties = dict(same.get("properties", {}))
            for key, sub in new.get("properties", {}).items():
                properties[key] = merge(properties[key], sub) if key in properties else sub
            merged["properties"] = dict(list(properties.items())[:MAX_PROPERTIES])
            merged["required"] = [k for k in same.get("required", []) if k in new.get("required", [])]
        elif new.get("type") == "array" and "items" in new:
            merged["items"] = merge(same["items"], new["items"]) if "items" in same else new["items"]
        members[members.index(same)] = merged
    return members[0] if len(members) == 1 else {"anyOf": members}


class ObservedShapes:
    """Observed shapes by ``server/tool``, in one file (0600) under the state directory."""

    def __init__(self, path: Path, clock: Any = time.time) -> None:
        self.path = path
        self.clock = clock
        self._entries: dict[str, dict[str, Any]] = {}
        self._changed = False
        self._load()

    @staticmethod
    def key(tool: ToolDefinition) -> str:
        return f"{tool.server}/{tool.name}"

    def _load(self) -> None:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:  # a broken file only means nothing was learned yet
            log_event("shapes.unreadable", logging.WARNING, path=str(self.path), error=str(exc))
            return
        now = self.clock()
        if isinstance(data, dict):
            self._entries = {
                key: entry
                for key, entry in data.items()
                if isinstance(entry, dict) and now - float(entry.get("seen", 0)) < TTL_SECONDS
            }

    def schema(self, tool: ToolDefinition) -> dict[str, Any] | None:
        entry = self._entries.get(self.key(tool))
        schema = entry.get("schema") if entry else None
        return schema if isinstance(schema, dict) else None

    def observe(self, tool: ToolDefinition, text: str) -> None:
        """Learn from a successful result's text, when it is a JSON object or array; never raises."""
        if tool.output_schema is not None or len(text) > MAX_RESULT_CHARS or text[:1] not in "{[":
            return
        try:
            shape = infer(json.loads(text))
            key = self.key(tool)
            known = self.schema(tool)
            merged = merge(known, shape) if known is not None else shape
        except (ValueError, RecursionError, KeyError, TypeError):
            return
        if merged != known:
            self._changed = True
        self._entries[key] = {"schema": merged, "seen": self.clock()}

    def save(self) -> None:
        """Write the file if something was learned (atomically, readable only by the user)."""
        if not self._changed:
            return
        kept = sorted(self._entries.items(), key=lambda item: item[1].get("seen", 0))[-MAX_ENTRIES:]
        try:
            write_private(self.path, json.dumps(dict(kept), separators=(",", ":")))
        except OSError as exc:
            log_event("shapes.not_saved", logging.WARNING, path=str(self.path), error=str(exc))
            return
        self._changed = False
