"""The agent's model answering an MCP server's ``sampling/createMessage``: one plain completion
(no tools), on the same endpoint, key and model as the agent's own requests."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from asyncai.tools.mcp.asking import Sample, SampleRequest

if TYPE_CHECKING:
    from asyncai.backend.openai import OpenAiCompatibleBackend

_STOP_REASONS = {"stop": "endTurn", "length": "maxTokens"}


class BackendSampler:
    """``server_requests.Sampler`` over an ``OpenAiCompatibleBackend``."""

    def __init__(self, backend: OpenAiCompatibleBackend) -> None:
        self.backend = backend

    async def sample(self, request: SampleRequest) -> Sample:
        messages: list[dict[str, Any]] = (
            [{"role": "system", "content": request.system}] if request.system else []
        )
        messages += [{"role": role, "content": text} for role, text in request.messages]
        body: dict[str, Any] = {
            "model": self.backend.config.model,
            "messages": messages,
            "max_tokens": request.max_tokens,
            "stream": False,
        }
        if request.temperature is not None:
            body["temperature"] = request.temperature
        turn = await self.backend.complete(body)
        usage = turn.usage or {}
        return Sample(
            text=turn.content or "",
            model=self.backend.config.model,
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
            stop_reason=_STOP_REASONS.get(turn.finish_reason or "stop", "endTurn"),
        )
