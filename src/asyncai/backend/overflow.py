"""A request longer than the model's context, as the servers say so. Pure functions."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from asyncai.humanize import count


@dataclass(frozen=True)
class ContextOverflow:
    """A request longer than the model's context, with the sizes when the server said them."""

    prompt_tokens: int | None = None
    context_tokens: int | None = None

    def sizes(self) -> str:
        if self.prompt_tokens is not None and self.context_tokens is not None:
            return f"{count(self.prompt_tokens)} tokens for a context of {count(self.context_tokens)}"
        if self.context_tokens is not None:
            return f"the context holds {count(self.context_tokens)} tokens"
        if self.prompt_tokens is not None:
            return f"{count(self.prompt_tokens)} tokens"
        return ""


_OVERFLOW_MARKERS = (
    "exceed_context_size_error",
    "exceeds the available context size",
    "context_length_exceeded",
    "maximum context length",
    "context window",
    "too many tokens",
)
_PROMPT_SIZES = (
    re.compile(r"request \((\d+) tokens\)"),
    re.compile(r"resulted in (\d+) tokens"),
    re.compile(r"you requested (\d+) tokens"),
    re.compile(r"prompt is too long: (\d+) tokens"),
)
_CONTEXT_SIZES = (
    re.compile(r"context size \((\d+) tokens\)"),
    re.compile(r"maximum context length is (\d+) tokens"),
    re.compile(r"(\d+) tokens? > \d+ maximum"),
)


def _first_number(patterns: Sequence[re.Pattern[str]], text: str) -> int | None:
    for pattern in patterns:
        match = pattern.search(text)
        if match:
            return int(match.group(1))
    return None


def context_overflow(status: int, body: bytes | str) -> ContextOverflow | None:
    """Whether an HTTP error says the request did not fit the model's context: llama.cpp's
    ``exceed_context_size_error`` (with ``n_prompt_tokens`` and ``n_ctx``), OpenAI's
    ``context_length_exceeded``, vLLM's "maximum context length"."""
    if status not in (400, 413, 422):
        return None
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    if not any(marker in text.lower() for marker in _OVERFLOW_MARKERS):
        return None
    prompt = _first_number(_PROMPT_SIZES, text)
    context = _first_number(_CONTEXT_SIZES, text)
    try:
        decoded = json.loads(text)
    except (ValueError, RecursionError):
        decoded = None
    error = decoded.get("error") if isinstance(decoded, dict) else None
    if isinstance(error, dict):
        numbers = {k: v for k, v in error.items() if isinstance(v, int) and not isinstance(v, bool)}
        prompt = numbers.get("n_prompt_tokens", prompt)
        context = numbers.get("n_ctx", context)
    return ContextOverflow(prompt, context)
