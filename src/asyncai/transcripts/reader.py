"""Reading a Claude Code transcript back: the lines, the conversation chain, the model's messages.

The chain is found the way Claude Code finds it on ``--resume`` (the official Agent SDK's
``_build_conversation_chain``): among the conversation records, the terminals are those no record
names as its parent; each terminal leads to its nearest ``user`` or ``assistant`` record, the leaf;
the newest leaf in file order that is not a sidechain or meta record wins; the chain is its
``parentUuid`` path back to the root. Lines that are not JSON objects are skipped (a half-written
last line after a crash), and so are record types asyncai does not use (``summary``, ``system``,
``file-history-snapshot`` ...), which stay in the file untouched.

asyncai resumes that chain up to its last reply: a run that did not finish (the process died, the
model server failed) is not sent again, and the resumed session's records branch off before it.
Once they are written they are the newest leaf, so Claude Code then reads the same conversation.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from asyncai.backend.config import Message, ToolCall
from asyncai.log import dumps_compact
from asyncai.transcripts.records import REASONING_KEY

CONVERSATION_TYPES = frozenset({"user", "assistant", "progress", "system", "attachment"})
MESSAGE_TYPES = frozenset({"user", "assistant"})
INTERRUPTED_RESULT = (
    "error: the session ended before this call's result was recorded; run it again if it is still needed"
)

Record = dict[str, Any]


class TranscriptError(Exception):
    """A file that cannot be resumed; the message is one line naming it."""


@dataclass(frozen=True)
class Transcript:
    """A transcript file as read: every record, the conversation chain Claude Code would resume,
    and the part of it that asyncai resumes (up to the last finished run)."""

    path: Path
    records: list[Record]
    chain: list[Record]
    skipped_lines: int

    @property
    def session_id(self) -> str:
        return self.path.stem

    @functools.cached_property
    def resumed_chain(self) -> list[Record]:
        return finished(self.chain)

    @property
    def leaf(self) -> str | None:
        """The uuid the next record continues from (``None``: a new root)."""
        resumed = self.resumed_chain
        return resumed[-1]["uuid"] if resumed else None

    def messages(self) -> list[Message]:
        return chain_messages(self.resumed_chain)


def parse_lines(data: bytes) -> tuple[list[Record], int]:
    """The JSON objects of a JSONL file, and how many non-empty lines were not one."""
    records: list[Record] = []
    skipped = 0
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            skipped += 1
            continue
        if isinstance(value, dict):
            records.append(value)
        else:
            skipped += 1
    return records, skipped


def _is_entry(record: Record) -> bool:
    kind = record.get("type")
    return isinstance(kind, str) and kind in CONVERSATION_TYPES and isinstance(record.get("uuid"), str)


def _parent(record: Record) -> str | None:
    parent = record.get("parentUuid")
    return parent if isinstance(parent, str) else None


def _side(record: Record) -> bool:
    return bool(record.get("isSidechain") or record.get("teamName") or record.get("isMeta"))


def conversation_chain(records: Sequence[Record]) -> list[Record]:
    """The records Claude Code would resume, oldest first (see the module docstring)."""
    entries = [record for record in records if _is_entry(record)]
    by_uuid = {entry["uuid"]: entry for entry in entries}
    position = {entry["uuid"]: index for index, entry in enumerate(entries)}
    parents = {_parent(entry) for entry in entries}
    leaves: dict[str, Record] = {}
    for terminal in (entry for entry in entries if entry["uuid"] not in parents):
        node: Record | None = terminal
        seen: set[str] = set()
        while node is not None and node["uuid"] not in seen:
            seen.add(node["uuid"])
            if node.get("type") in MESSAGE_TYPES:
                leaves[node["uuid"]] = node
                break
            parent = _parent(node)
            node = by_uuid.get(parent) if parent is not None else None
    if not leaves:
        return []
    main = [leaf for leaf in leaves.values() if not _side(leaf)] or list(leaves.values())
    leaf = max(main, key=lambda entry: position[entry["uuid"]])
    chain: list[Record] = []
    seen = set()
    node = leaf
    while node is not None and node["uuid"] not in seen:
        seen.add(node["uuid"])
        chain.append(node)
        parent = _parent(node)
        node = by_uuid.get(parent) if parent is not None else None
    chain.reverse()
    return chain


def _is_reply(record: Record) -> bool:
    """An assistant record that answers the user: text and no tool call left waiting."""
    message = record.get("message")
    if record.get("type") != "assistant" or not isinstance(message, dict):
        return False
    content = message.get("content")
    blocks = content if isinstance(content, list) else [content]
    has_call = any(isinstance(block, dict) and block.get("type") == "tool_use" for block in blocks)
    return not has_call and bool(_block_text([b for b in blocks if not _is_thinking(b)]))


def _is_thinking(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") in ("thinking", "redacted_thinking")


def finished(chain: Sequence[Record]) -> list[Record]:
    """``chain`` up to its last reply: a run that did not finish (the process died, Ctrl-C, the
    model server failed) is left out, so a resumed session sends what the live one would have."""
    for end in range(len(chain), 0, -1):
        if _is_reply(chain[end - 1]):
            return list(chain[:end])
    return []


def _block_text(content: Any) -> str:
    """Text of a message or tool-result content: a string, or blocks whose non-text parts are named."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif isinstance(block, dict) and isinstance(block.get("type"), str):
            parts.append(f"[{block['type']}]")
    return "\n".join(parts)


def _user_messages(content: Any) -> list[Message]:
    if not isinstance(content, list):
        return [Message("user", _block_text(content))]
    results: list[Message] = []
    texts: list[Any] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            call_id = block.get("tool_use_id")
            text = _block_text(block.get("content"))
            results.append(Message("tool", text, tool_call_id=str(call_id)))
        elif not _is_thinking(block):
            texts.append(block)
    if texts:
        results.append(Message("user", _block_text(texts)))
    return results


def _assistant_message(record: Record, content: Any) -> Message:
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in content if isinstance(content, list) else [content]:
        if isinstance(block, str):
            texts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif isinstance(block, dict) and block.get("type") == "tool_use":
            arguments = block.get("input") if isinstance(block.get("input"), dict) else {}
            calls.append(ToolCall(str(block.get("id")), str(block.get("name")), dumps_compact(arguments)))
    reasoning = record.get(REASONING_KEY)
    return Message(
        "assistant",
        "".join(texts) or None,
        tool_calls=tuple(calls),
        reasoning_content=reasoning if isinstance(reasoning, str) and reasoning else None,
    )


def _merge(previous: Message, message: Message) -> Message:
    """Consecutive records of one role are one message (Claude Code writes one assistant record
    per content block, and joins consecutive user records)."""
    texts = [text for text in (previous.content, message.content) if text]
    separator = "\n\n" if message.role == "user" else ""
    reasoning = "".join(r for r in (previous.reasoning_content, message.reasoning_content) if r)
    return Message(
        message.role,
        separator.join(texts) or None,
        tool_calls=previous.tool_calls + message.tool_calls,
        reasoning_content=reasoning or None,
    )


def paired(messages: Iterable[Message]) -> list[Message]:
    """Messages where every tool call is answered right after its assistant message and no result
    lacks its call: a call left unanswered (the session ended mid-call) gets an error result, and
    an orphan result is dropped, as Claude Code does."""
    result: list[Message] = []
    waiting: list[str] = []

    def close_calls() -> None:
        result.extend(Message("tool", INTERRUPTED_RESULT, tool_call_id=call_id) for call_id in waiting)
        waiting.clear()

    for message in messages:
        if message.role == "tool":
            if message.tool_call_id in waiting:
                waiting.remove(message.tool_call_id)
                result.append(message)
            continue
        close_calls()
        result.append(message)
        waiting = [call.id for call in message.tool_calls]
    close_calls()
    return result


def chain_messages(chain: Sequence[Record]) -> list[Message]:
    """The chat messages of a conversation chain, as the model saw them."""
    messages: list[Message] = []
    for record in chain:
        body = record.get("message")
        if record.get("type") not in MESSAGE_TYPES or not isinstance(body, dict):
            continue
        content = body.get("content")
        new = (
            [_assistant_message(record, content)]
            if record["type"] == "assistant"
            else _user_messages(content)
        )
        for message in new:
            last = messages[-1] if messages else None
            if last is not None and last.role == message.role and message.role != "tool":
                messages[-1] = _merge(last, message)
            else:
                messages.append(message)
    return paired(messages)


def load_transcript(path: Path) -> Transcript:
    """Read ``path``; ``TranscriptError`` when it cannot be read or holds no conversation."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TranscriptError(f"cannot read session file {path}: {exc.strerror or exc}") from None
    records, skipped = parse_lines(data)
    chain = conversation_chain(records)
    if not chain:
        raise TranscriptError(f"{path} is not a Claude Code transcript: it has no user or assistant records")
    return Transcript(path=path, records=records, chain=chain, skipped_lines=skipped)
