"""An independent oracle: a transcript read the way Claude Code reads it on ``--resume``, and the
model's OpenAI messages in the same Anthropic shape, so tests can compare the two.

Written from the transcript guide (section 1.5), not from ``asyncai.transcripts``: keep it that way,
or the check proves nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CHAIN_TYPES = {"user", "assistant", "progress", "system", "attachment"}


def records(path: Path) -> list[dict[str, Any]]:
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue  # Claude Code skips corrupt lines
        if isinstance(value, dict):
            found.append(value)
    return found


def chain(path: Path) -> list[dict[str, Any]]:
    """Newest non-sidechain leaf in file order, then ``parentUuid`` back to the root."""
    entries = [r for r in records(path) if r.get("type") in CHAIN_TYPES and isinstance(r.get("uuid"), str)]
    by_uuid = {e["uuid"]: e for e in entries}
    named_as_parent = {e.get("parentUuid") for e in entries}
    leaves = []
    for terminal in [e for e in entries if e["uuid"] not in named_as_parent]:
        node: dict[str, Any] | None = terminal
        while node is not None and node["type"] not in ("user", "assistant"):
            node = by_uuid.get(node.get("parentUuid"))
        if node is not None and not node.get("isSidechain"):
            leaves.append(node)
    leaf = max(leaves, key=entries.index)
    path_back = []
    node = leaf
    while node is not None:
        path_back.append(node)
        node = by_uuid.get(node.get("parentUuid"))
    return path_back[::-1]


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def conversation(path: Path) -> list[dict[str, Any]]:
    """The API messages Claude Code would send: chain records, consecutive same roles merged."""
    messages: list[dict[str, Any]] = []
    for record in chain(path):
        if record["type"] not in ("user", "assistant"):
            continue
        role = record["message"]["role"]
        blocks = _blocks(record["message"]["content"])
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"] += blocks
        else:
            messages.append({"role": role, "content": blocks})
    return messages


def from_openai(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI chat messages (system left out) in the Anthropic shape ``conversation`` returns;
    tool results have no ``is_error`` on the OpenAI side, so it is left out of both for comparing."""
    converted: list[dict[str, Any]] = []
    for message in messages:
        role = message["role"]
        if role == "system":
            continue
        if role == "tool":
            role = "user"
            blocks = [
                {
                    "type": "tool_result",
                    "tool_use_id": message["tool_call_id"],
                    "content": [{"type": "text", "text": message["content"]}],
                }
            ]
        elif role == "assistant":
            blocks = [{"type": "text", "text": message["content"]}] if message.get("content") else []
            blocks += [
                {
                    "type": "tool_use",
                    "id": c["id"],
                    "name": c["function"]["name"],
                    "input": json.loads(c["function"]["arguments"]),
                }
                for c in message.get("tool_calls", [])
            ]
        else:
            blocks = [{"type": "text", "text": message["content"]}]
        if converted and converted[-1]["role"] == role:
            converted[-1]["content"] += blocks
        else:
            converted.append({"role": role, "content": blocks})
    return converted


def without_is_error(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "role": m["role"],
            "content": [{k: v for k, v in b.items() if k != "is_error"} for b in m["content"]],
        }
        for m in messages
    ]
