"""Backend configuration and the small data types at the backend's boundary."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

DEFAULT_TEMPERATURE = 0.2
"""Sampling temperature when none is set: the eval's (``make eval``), low enough that a small model
writes the same program for the same question."""
DEFAULT_MAX_TOKENS = 512
"""Tokens per model reply when no cap is set: the eval's, twice the longest program its tasks took,
and about 20 s of a 1.5B model on two cores rather than a reply that rambles past the request
timeout (a server's own default is often no cap at all)."""

DEFAULT_SYSTEM_PROMPT = (
    "You are asyncai, an assistant that answers the user's questions with the tools you are given.\n"
    "When a tool can answer, plan first, then make one complete call that fetches, filters and returns "
    "what the answer needs; inspect the shape of a result only after a call failed.\n"
    "When you have the answer, reply to the user in plain text."
)

CodeProtocol = Literal["tools", "text"]
PROTOCOLS: tuple[CodeProtocol, ...] = ("tools", "text")
"""How a model sends its code: ``run_code`` tool calls, or a ```python block in its reply."""


def protocol_named(name: str) -> CodeProtocol:
    """The protocol called ``name``; ``ValueError`` naming the choices for any other."""
    for protocol in PROTOCOLS:
        if protocol == name:
            return protocol
    raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}, not {name!r}")


FINAL_ROUND_INSTRUCTION = (
    "You have used all tool rounds for this turn; tools are no longer available. "
    "Answer the user's request now from the tool results above. "
    "If they are incomplete, say what you found and what is missing."
)

NO_ANSWER_TEXT = "(no answer was produced: the model returned no text)"


@dataclass(frozen=True)
class BackendConfig:
    """How to reach an OpenAI-compatible chat-completions server and how to drive it.

    ``base_url`` is the API root (``http://127.0.0.1:8080/v1``); ``/chat/completions`` is appended
    unless the URL already ends with it. ``system_prompt`` must not carry per-run data: it is the
    start of the cached prompt prefix. ``extra_body`` is merged into every request body (for
    server-specific switches such as llama.cpp's ``cache_prompt``; it never overrides the keys the
    backend sets).

    ``max_rounds`` counts model requests per run; the last one is tool-free (the forced final
    round). Retries: 429, 5xx and connection errors are retried up to ``max_retries`` times after
    ``backoff_base * 2**n`` seconds, or after the server's ``Retry-After`` when that is at most
    ``max_retry_after`` seconds. Read timeouts (``request_timeout``) are not retried.

    ``temperature`` and ``max_tokens`` go into every request (``None``: the server's defaults).
    ``max_calls_per_reply`` bounds the tool calls of one model reply that run; the rest get an
    error result.
    """

    base_url: str
    model: str
    api_key: str | None = None
    max_rounds: int = 8
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    stream: bool = False
    eager: bool = True
    """Run a streamed ``run_code`` snippet's statements while the rest is still arriving."""
    request_timeout: float = 300.0
    connect_timeout: float = 10.0
    max_retries: int = 3
    backoff_base: float = 0.5
    max_retry_after: float = 10.0
    extra_body: dict[str, Any] = field(default_factory=dict)
    temperature: float | None = DEFAULT_TEMPERATURE
    max_tokens: int | None = DEFAULT_MAX_TOKENS
    protocol: CodeProtocol = "tools"
    """How the model sends code: as ``run_code`` tool calls, or (``text``) as a ```python block in
    a plain reply, which suits models that tool calling serves badly; a reply without one is the
    answer."""
    max_calls_per_reply: int = 16

    def __post_init__(self) -> None:
        if self.max_rounds < 1:
            raise ValueError("max_rounds must be at least 1")
        if self.max_retries < 0:
            raise ValueError("max_retries must not be negative")
        if self.temperature is not None and not (math.isfinite(self.temperature) and self.temperature >= 0):
            raise ValueError(f"temperature must be 0 or more, not {self.temperature!r}")
        protocol_named(self.protocol)
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, not {self.max_tokens!r}")
        if self.request_timeout <= 0:
            raise ValueError(
                f"request_timeout must be a positive number of seconds, not {self.request_timeout!r}"
            )
        if self.max_calls_per_reply < 1:
            raise ValueError("max_calls_per_reply must be at least 1")

    @property
    def chat_url(self) -> str:
        base = self.base_url.rstrip("/")
        if base.endswith("/chat/completions"):
            return base
        return f"{base}/chat/completions"


@dataclass(frozen=True)
class ToolCall:
    """A tool call of an assistant message, after repair (unique id, arguments that parse)."""

    id: str
    name: str
    arguments: str
    """Compact JSON of the arguments, exactly as sent back to the model."""


@dataclass(frozen=True)
class Message:
    """One chat message as the model saw it: a user prompt, an assistant reply (text, tool calls or
    both) or a tool result. A thread's history is a list of these, tool calls and results included,
    so a resumed session sends the model the same messages as before."""

    role: Literal["user", "assistant", "tool"]
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    reasoning_content: str | None = None

    def to_wire(self) -> dict[str, Any]:
        """The chat-completions message; an assistant's empty ``content`` is left out next to tool
        calls (some servers reject ``null`` there)."""
        if self.role == "tool":
            return {"role": "tool", "tool_call_id": self.tool_call_id, "content": self.content or ""}
        message: dict[str, Any] = {"role": self.role}
        if self.content or not self.tool_calls:
            message["content"] = self.content or ""
        if self.reasoning_content:
            message["reasoning_content"] = self.reasoning_content
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return message
