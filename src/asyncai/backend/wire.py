"""The OpenAI chat-completions wire format as pure functions: no I/O, no clocks, no logging.

Everything here is written against what real local servers send, not only against the spec
(see the wire guide, section 3.2): parallel calls all at ``index`` 0, missing, ``null``, integer or
duplicate ids, function names resent on every chunk, ``finish_reason`` that disagrees with the
calls, and ``content: null`` next to tool calls. What a model writes inside a reply is read by the
modules beside this one: ``decoding`` (call arguments), ``calls`` (calls made ready to run),
``text_calls`` (calls written as text), ``programs`` (programs written in a reply), ``unfinished``
(replies that are no answer) and ``overflow`` (a request too long for the model's context).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from asyncai.backend.config import BackendConfig, Message
from asyncai.log import dumps_compact
from asyncai.tools.types import ToolDefinition

# --------------------------------------------------------------------------------------------------
# Requests


def tool_specs(tools: Iterable[ToolDefinition]) -> list[dict[str, Any]]:
    """OpenAI function tools for ``tools``, sorted by name so the request prefix is byte-stable."""
    return [
        {
            "type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": tool.input_schema},
        }
        for tool in sorted(tools, key=lambda t: t.name)
    ]


def user_message_text(user_text: str, note: str | None) -> str:
    """The newest user message: the user's text, then the per-run note as its own paragraph
    (at the end, so the cached prefix stays the same)."""
    if note and note.strip():
        return f"{user_text}\n\n{note.strip()}"
    return user_text


def build_request_body(
    config: BackendConfig,
    *,
    history: Sequence[Message],
    run_messages: Sequence[Message],
    tools: Sequence[Mapping[str, Any]] | None,
    final_instruction: str | None = None,
) -> dict[str, Any]:
    """One chat-completions request body.

    The system prompt comes first, then the thread's earlier messages, then this run's messages.
    ``tools=None`` (or empty) leaves the ``tools`` key out entirely; ``final_instruction`` is appended
    as a user message (the tool-free final round).
    """
    messages: list[dict[str, Any]] = [{"role": "system", "content": config.system_prompt}]
    messages.extend(m.to_wire() for m in history)
    messages.extend(m.to_wire() for m in run_messages)
    if final_instruction is not None:
        messages.append({"role": "user", "content": final_instruction})
    body: dict[str, Any] = {"model": config.model, "messages": messages}
    if tools:
        body["tools"] = [dict(t) for t in tools]
    if config.temperature is not None:
        body["temperature"] = config.temperature
    if config.max_tokens is not None:
        body["max_tokens"] = config.max_tokens
    body["stream"] = config.stream
    if config.stream:
        body["stream_options"] = {"include_usage": True}
    for key, value in config.extra_body.items():
        body.setdefault(key, value)
    return body


# --------------------------------------------------------------------------------------------------
# Responses


@dataclass(frozen=True)
class RawToolCall:
    """A tool call as the server sent it, before any repair."""

    id: str | None
    name: str | None
    arguments: Any


@dataclass(frozen=True)
class AssistantTurn:
    """One parsed assistant answer (streamed or not)."""

    content: str | None
    tool_calls: tuple[RawToolCall, ...] = ()
    finish_reason: str | None = None
    reasoning_content: str | None = None
    usage: dict[str, Any] | None = None


class ResponseFormatError(ValueError):
    """The server's answer is not a chat completion; the message says what was wrong."""


def _norm_id(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    text = str(value).strip()
    return text or None


def _norm_name(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    return value.strip() or None


def _text(value: Any) -> str | None:
    """Message content: a string, ``null``, or a list of ``{"type": "text", "text": ...}`` parts."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [p.get("text", "") for p in value if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "".join(parts)
    return str(value)


def _error_message(body: Mapping[str, Any]) -> str | None:
    error = body.get("error")
    if error is None:
        return None
    if isinstance(error, Mapping):
        return str(error.get("message") or dumps_compact(error))
    return str(error)


def parse_completion(body: Any) -> AssistantTurn:
    """Parse a non-streaming chat-completions response body."""
    if not isinstance(body, Mapping):
        raise ResponseFormatError(f"expected a JSON object, got {type(body).__name__}")
    if (error := _error_message(body)) is not None:
        raise ResponseFormatError(f"the server returned an error: {error}")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise ResponseFormatError("the response has no choices")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, Mapping):
        raise ResponseFormatError("the first choice has no message")
    calls: list[RawToolCall] = []
    for raw in message.get("tool_calls") or []:
        if not isinstance(raw, Mapping):
            continue
        function = raw.get("function")
        function = function if isinstance(function, Mapping) else {}
        name = _norm_name(function.get("name"))
        calls.append(RawToolCall(id=_norm_id(raw.get("id")), name=name, arguments=function.get("arguments")))
    legacy = message.get("function_call")
    if not calls and isinstance(legacy, Mapping):
        name = _norm_name(legacy.get("name"))
        calls.append(RawToolCall(id=None, name=name, arguments=legacy.get("arguments")))
    usage = body.get("usage")
    return AssistantTurn(
        content=_text(message.get("content")),
        tool_calls=tuple(calls),
        finish_reason=choice.get("finish_reason") if isinstance(choice.get("finish_reason"), str) else None,
        reasoning_content=_text(message.get("reasoning_content")),
        usage=dict(usage) if isinstance(usage, Mapping) else None,
    )


def sse_data(line: str) -> str | None:
    """The payload of an SSE ``data:`` line, or ``None`` for comments, blank lines and other fields."""
    if not line.startswith("data:"):
        return None
    return line[5:].strip()


@dataclass
class _PartialCall:
    id: str | None = None
    name: str | None = None
    arg_parts: list[str] = field(default_factory=list)
    arg_object: Any = None

    def arguments(self) -> Any:
        if self.arg_object is not None and not "".join(self.arg_parts).strip():
            return self.arg_object
        return "".join(self.arg_parts)

    def complete(self) -> bool:
        """Whether the arguments so far already form one whole JSON value."""
        if self.arg_object is not None:
            return True
        text = "".join(self.arg_parts).strip()
        if not text:
            return False
        try:
            json.loads(text)
        except ValueError:
            return False
        return True


def _starts_new_call(current: _PartialCall, call_id: str | None, name: str | None, no_index: bool) -> bool:
    """Whether a tool-call delta at an occupied slot begins another call (see StreamAccumulator)."""
    if name is None:
        return False
    if call_id is None or current.id is None or call_id == current.id:
        # Without a new id, only a server that sends no index at all can mean a new call.
        return no_index and current.name is not None and current.complete()
    return name != current.name or current.complete()


class StreamAccumulator:
    """Reassembles streamed ``chat.completion.chunk`` objects into one :class:`AssistantTurn`.

    Calls are keyed by ``index``; a chunk at an occupied index starts a new call when it carries a
    new non-empty id together with a function name and the current call is either for another
    tool or already holds complete JSON (servers that send every call at index 0), but not when a
    server merely sends a fresh id or resends the name on every chunk. Names are assigned, never
    appended.
    """

    def __init__(self) -> None:
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[_PartialCall] = []
        self._by_index: dict[int, int] = {}
        self._last: int | None = None
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.saw_content = False
        self.on_arguments: Callable[[int, str | None, str], None] | None = None
        """Told ``(position, name, arguments so far)`` as each call's arguments stream in."""

    def feed(self, chunk: Any) -> str:
        """Take one chunk; the reply text it added (``""`` when none)."""
        added = ""
        if not isinstance(chunk, Mapping):
            raise ResponseFormatError(f"a stream chunk is not a JSON object: {type(chunk).__name__}")
        if (error := _error_message(chunk)) is not None:
            raise ResponseFormatError(f"the server returned an error: {error}")
        usage = chunk.get("usage")
        if isinstance(usage, Mapping):
            self.usage = dict(usage)
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, Mapping) or choice.get("index", 0) not in (0, None):
                continue
            delta = choice.get("delta")
            if not isinstance(delta, Mapping):
                delta = choice.get("message") if isinstance(choice.get("message"), Mapping) else {}
            assert isinstance(delta, Mapping)
            content = _text(delta.get("content"))
            if content is not None:
                self._content.append(content)
                self.saw_content = True
                added += content
            reasoning = _text(delta.get("reasoning_content"))
            if reasoning:
                self._reasoning.append(reasoning)
            for raw in delta.get("tool_calls") or []:
                if isinstance(raw, Mapping):
                    self._feed_call(raw)
            if isinstance(choice.get("finish_reason"), str):
                self.finish_reason = choice["finish_reason"]
        return added

    def _feed_call(self, raw: Mapping[str, Any]) -> None:
        function = raw.get("function")
        function = function if isinstance(function, Mapping) else {}
        call_id = _norm_id(raw.get("id"))
        name = _norm_name(function.get("name"))
        index = raw.get("index")
        position: int | None
        if isinstance(index, int) and not isinstance(index, bool):
            position = self._by_index.get(index)
        else:
            index = None
            position = self._last
        if position is not None and _starts_new_call(self._calls[position], call_id, name, index is None):
            position = None
        if position is None:
            self._calls.append(_PartialCall())
            position = len(self._calls) - 1
            if index is not None:
                self._by_index[index] = position
        self._last = position
        call = self._calls[position]
        if call.id is None and call_id is not None:
            call.id = call_id
        if name is not None:
            call.name = name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call.arg_parts.append(arguments)
            if self.on_arguments is not None and arguments:
                self.on_arguments(position, call.name, "".join(call.arg_parts))
        elif arguments is not None:
            call.arg_object = arguments

    def result(self) -> AssistantTurn:
        calls = tuple(RawToolCall(id=c.id, name=c.name, arguments=c.arguments()) for c in self._calls)
        return AssistantTurn(
            content="".join(self._content) if self.saw_content else None,
            tool_calls=calls,
            finish_reason=self.finish_reason,
            reasoning_content="".join(self._reasoning) or None,
            usage=self.usage,
        )


# --------------------------------------------------------------------------------------------------
# Messages


def tool_message(call_id: str, content: str) -> Message:
    return Message(role="tool", content=content, tool_call_id=call_id)
