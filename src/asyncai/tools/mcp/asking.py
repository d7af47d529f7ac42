"""What MCP servers may ask of their client and the rules for answering, apart from the ``mcp``
SDK (``server_requests`` joins them to it) so that the command line loads neither to parse its
options: the choices a user has (``--elicitation``, ``--sampling``), the person and the model who
answer (``Person``, ``Sampler``), forms filled with their defaults or checked against their schema,
and the sampling budget."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, Protocol

ElicitationPolicy = Literal["ask", "accept-defaults", "decline"]
SamplingPolicy = Literal["allow", "ask", "deny"]
ELICITATION_POLICIES: tuple[ElicitationPolicy, ...] = ("ask", "accept-defaults", "decline")
SAMPLING_POLICIES: tuple[SamplingPolicy, ...] = ("allow", "ask", "deny")

FormAction = Literal["accept", "decline", "cancel"]


@dataclass(frozen=True)
class FormAnswer:
    """What the person did with a form or URL: ``accept`` (with the form's ``content``), ``decline``
    or ``cancel``."""

    action: FormAction
    content: dict[str, Any] | None = None


class Person(Protocol):
    """Someone who can answer a server's question (the chat's terminal, or serve-mcp's client)."""

    async def fill_form(self, server: str, message: str, schema: dict[str, Any]) -> FormAnswer: ...

    async def visit_url(
        self, server: str, message: str, url: str, elicitation_id: str | None
    ) -> FormAnswer: ...

    async def allow_sampling(self, server: str, preview: str) -> bool: ...


@dataclass(frozen=True)
class SampleRequest:
    """A server's ``sampling/createMessage`` in plain terms: text messages, an optional system
    prompt, and the most tokens it wants back."""

    messages: tuple[tuple[str, str], ...]
    """``(role, text)`` pairs."""
    system: str | None
    max_tokens: int
    temperature: float | None = None


@dataclass(frozen=True)
class Sample:
    text: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    stop_reason: str = "endTurn"


class Sampler(Protocol):
    """The agent's model, as a server may use it."""

    async def sample(self, request: SampleRequest) -> Sample: ...


@dataclass
class SamplingBudget:
    """How much of the model the servers may use in one run, all servers together."""

    max_requests: int = 20
    max_tokens: int = 50_000
    requests: int = 0
    tokens: int = 0

    def refusal(self, wanted_tokens: int) -> str | None:
        """Why this request would overspend the budget, or ``None``."""
        if self.requests >= self.max_requests:
            return f"the sampling budget is spent ({self.max_requests} requests per run)"
        if self.tokens + wanted_tokens > self.max_tokens:
            return f"the sampling budget is spent ({self.tokens} of {self.max_tokens} tokens per run used)"
        return None

    def reserve(self, wanted_tokens: int) -> None:
        """Count a request and the most tokens it may take before it runs, so requests in flight
        at once cannot overspend together."""
        self.requests += 1
        self.tokens += wanted_tokens

    def settle(self, wanted_tokens: int, sample: Sample | None) -> None:
        """Replace the reservation by what the request used (nothing if it did not run)."""
        used = sample.input_tokens + sample.output_tokens if sample is not None else 0
        self.tokens += used - wanted_tokens


def defaults_answer(schema: dict[str, Any]) -> dict[str, Any] | None:
    """``accept-defaults``: the form filled with its defaults when every required field has one
    (fields without a default are left out), else ``None`` (decline)."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return {} if not schema.get("required") else None
    content = {
        name: spec["default"]
        for name, spec in properties.items()
        if isinstance(spec, dict) and "default" in spec
    }
    required = schema.get("required") or []
    if not isinstance(required, list) or any(name not in content for name in required):
        return None
    return content


def form_problem(schema: dict[str, Any], content: dict[str, Any]) -> str | None:
    """Why ``content`` does not fill the form (a missing required field, a wrong type, a value not
    in the enum), or ``None``. Elicitation forms are flat objects of primitive fields."""
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    for name in schema.get("required") or []:
        if name not in content:
            return f"{name} is required"
    for name, value in content.items():
        spec = properties.get(name) if isinstance(properties, dict) else None
        if not isinstance(spec, dict):
            continue
        problem = _field_problem(spec, value)
        if problem is not None:
            return f"{name}: {problem}"
    return None


def _field_problem(spec: dict[str, Any], value: Any) -> str | None:
    kind = spec.get("type")
    choices = field_choices(spec)
    if kind == "array":
        if not isinstance(value, list):
            return "expected a list"
        allowed = field_choices(spec.get("items") or {})
        bad = [item for item in value if allowed and item not in allowed]
        return f"{bad[0]!r} is not one of {', '.join(map(str, allowed))}" if bad else None
    if choices and value not in choices:
        return f"{value!r} is not one of {', '.join(map(str, choices))}"
    expected: type | tuple[type, ...] | None = _TYPES.get(str(kind))
    if expected is not None and (
        not isinstance(value, expected) or (kind != "boolean" and isinstance(value, bool))
    ):
        return f"expected {kind}"
    if kind == "number" and isinstance(value, float) and not math.isfinite(value):
        return "expected a finite number"
    return None


_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "boolean": bool,
    "integer": int,
    "number": (int, float),
}


def field_choices(spec: dict[str, Any]) -> list[Any]:
    """The values a form field allows (``enum``, or the ``const`` of each ``oneOf``/``anyOf``); none: any."""
    if isinstance(spec.get("enum"), list):
        return list(spec["enum"])
    options = spec.get("oneOf") or spec.get("anyOf")
    if isinstance(options, list):
        return [option["const"] for option in options if isinstance(option, dict) and "const" in option]
    return []
