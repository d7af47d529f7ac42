"""Claude Code transcript records as pure functions: the model's messages in, JSON objects out.

One record a message, chained by ``parentUuid``:

* the user's prompt is a ``user`` record whose ``message.content`` is the text as sent;
* an assistant message is an ``assistant`` record holding an Anthropic Messages API message: a
  ``text`` block when there is text, one ``tool_use`` block per call (the OpenAI call id kept as
  the ``tool_use`` id, its arguments as ``input``), ``stop_reason`` and ``usage``;
* each tool result is a ``user`` record with one ``tool_result`` block, right after the assistant
  record or the previous result of the same message, with ``sourceToolAssistantUUID`` and the
  code-mode audit as ``toolUseResult``: Claude Code shows it and never sends it to
  the model.

An assistant's ``reasoning_content`` is kept on the record as ``reasoningContent`` so a resumed
thinking model gets it back; Claude Code ignores fields it does not know.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from asyncai.backend.config import Message
from asyncai.backend.harness import ModelTurn
from asyncai.log import json_safe

TOOL_USE_RESULT_KEY = "toolUseResult"
REASONING_KEY = "reasoningContent"


@dataclass(frozen=True)
class Links:
    """Where a record sits: its own uuid, its parent's (``None`` for the first) and when."""

    uuid: str
    parent: str | None
    timestamp: str


@dataclass(frozen=True)
class RecordContext:
    """The fields every record of one session repeats."""

    session_id: str
    cwd: str
    version: str
    git_branch: str = ""

    def common(self, links: Links) -> dict[str, Any]:
        return {
            "parentUuid": links.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": self.version,
            "gitBranch": self.git_branch,
            "uuid": links.uuid,
            "timestamp": links.timestamp,
        }


def new_uuid() -> str:
    return str(uuid.uuid4())


def timestamp_now() -> str:
    """ISO 8601 UTC with milliseconds and ``Z``, as Claude Code writes it."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def user_record(context: RecordContext, message: Message, links: Links) -> dict[str, Any]:
    return {
        **context.common(links),
        "type": "user",
        "message": {"role": "user", "content": message.content or ""},
    }


def _stop_reason(message: Message, finish_reason: str | None) -> str:
    if message.tool_calls:
        return "tool_use"
    return "max_tokens" if finish_reason == "length" else "end_turn"


def _usage(usage: dict[str, Any] | None) -> dict[str, int]:
    """Anthropic usage fields from OpenAI ones (``prompt_tokens``, ``completion_tokens``)."""

    def number(value: Any) -> int:
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    usage = usage or {}
    details = usage.get("prompt_tokens_details")
    cached = number(details.get("cached_tokens")) if isinstance(details, dict) else 0
    return {
        "input_tokens": number(usage.get("prompt_tokens")),
        "output_tokens": number(usage.get("completion_tokens")),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cached,
    }


def tool_input(arguments: str) -> dict[str, Any]:
    """A tool call's arguments as a ``tool_use`` ``input`` object (they were repaired to an object;
    anything else is kept under ``arguments`` rather than lost)."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return {"arguments": arguments}
    return value if isinstance(value, dict) else {"arguments": value}


def assistant_record(
    context: RecordContext, message: Message, turn: ModelTurn, links: Links
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if message.content:
        content.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        content.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": tool_input(call.arguments)}
        )
    record: dict[str, Any] = {
        **context.common(links),
        "type": "assistant",
        "message": {
            "id": f"msg_{uuid.uuid4().hex}",
            "type": "message",
            "role": "assistant",
            "model": turn.model,
            "content": content,
            "stop_reason": _stop_reason(message, turn.finish_reason),
            "stop_sequence": None,
            "usage": _usage(turn.usage),
        },
        "requestId": f"req_{uuid.uuid4().hex}",
    }
    if message.reasoning_content:
        record[REASONING_KEY] = message.reasoning_content
    return record


def tool_result_record(
    context: RecordContext,
    message: Message,
    *,
    is_error: bool,
    audit: dict[str, Any] | None,
    assistant_uuid: str,
    links: Links,
) -> dict[str, Any]:
    """``audit`` becomes ``toolUseResult``; a call that never ran (its arguments were unusable) has
    no nested calls."""
    block = {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id,
        "content": [{"type": "text", "text": message.content or ""}],
        "is_error": is_error,
    }
    return {
        **context.common(links),
        "type": "user",
        "message": {"role": "user", "content": [block]},
        TOOL_USE_RESULT_KEY: audit if audit is not None else {"nested_calls": []},
        "sourceToolAssistantUUID": assistant_uuid,
    }


def encode(record: dict[str, Any]) -> bytes:
    """One transcript line: compact JSON (non-ASCII kept) and a newline.

    Always JSON that Claude Code's ``JSON.parse`` reads, or the line would be skipped and the chain
    broken: NaN and infinities become strings, and a lone surrogate (which UTF-8 cannot carry) makes
    the line ASCII with ``\\u`` escapes.
    """
    try:
        text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (ValueError, TypeError, RecursionError):
        text = json.dumps(json_safe(record), ensure_ascii=False, separators=(",", ":"))
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(json.loads(text), separators=(",", ":")) + "\n").encode("ascii")
