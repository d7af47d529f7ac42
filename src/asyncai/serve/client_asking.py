"""What a wrapped server asks, handed on to serve-mcp's own client: its elicitation (a form or a
URL) goes to the client's user, its sampling to the client's model.

The question goes to the client whose ``run_code`` made the call that asked: as a request of its
own, or, when the client's connection cannot carry one (the stateless protocol), as the
``input_required`` answer of its ``run_code`` while the snippet waits (``serve.live``). Requests under the
2026-07-28 protocol carry that in their context; a server of the 2025 era asks on its connection's
receive loop, which knows no caller, so the question goes to the one client running a snippet, and
is declined when several are (never to the wrong client).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import uuid
import warnings
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import mcp.types as mt
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPDeprecationWarning

from asyncai.humanize import seconds
from asyncai.serve.live import LiveRun
from asyncai.tools.mcp.asking import FormAnswer, Sample, SampleRequest

QUESTION_TIMEOUT = 600.0


@dataclass(frozen=True)
class _Caller:
    session: ServerSession
    request_id: mt.RequestId | None
    live: LiveRun | None = None
    """Where a stateless caller's questions go (``input_required``, see ``serve.live``)."""


_caller: ContextVar[_Caller | None] = ContextVar("asyncai_serve_caller", default=None)


class ServeClients:
    """The clients running a snippet now, and the ``Person`` and ``Sampler`` that ask them."""

    def __init__(self, timeout: float = QUESTION_TIMEOUT) -> None:
        self.timeout = timeout
        self._active: dict[int, _Caller] = {}
        self._numbers = itertools.count()

    @contextlib.contextmanager
    def serving(
        self, session: ServerSession, request_id: mt.RequestId | None, live: LiveRun | None = None
    ) -> Iterator[None]:
        """While a ``run_code`` of this client runs, its calls' questions go to it: as requests of
        their own, or through ``live`` when its connection cannot carry them."""
        caller = _Caller(session, request_id, live)
        number = next(self._numbers)
        self._active[number] = caller
        token = _caller.set(caller)
        try:
            yield
        finally:
            _caller.reset(token)
            del self._active[number]

    def _target(self) -> _Caller | None:
        caller = _caller.get()
        if caller is not None:
            return caller
        active = list(self._active.values())
        return active[0] if len(active) == 1 else None

    def _can_ask(self, caller: _Caller | None, capability: str) -> bool:
        if caller is None or (caller.live is None and not caller.session.can_send_request):
            return False
        capabilities = caller.session.client_capabilities
        return capabilities is not None and getattr(capabilities, capability) is not None

    async def fill_form(self, server: str, message: str, schema: dict[str, Any]) -> FormAnswer:
        caller = self._target()
        if not self._can_ask(caller, "elicitation"):
            return FormAnswer("decline")
        assert caller is not None
        if caller.live is not None:
            form = mt.ElicitRequestFormParams(message=message, requested_schema=schema)
            return _form_answer(await self._within(caller.live.ask(mt.ElicitRequest(params=form))))
        answer = await self._within(
            caller.session.elicit_form(message, schema, related_request_id=caller.request_id)
        )
        return FormAnswer(answer.action, answer.content)

    async def visit_url(self, server: str, message: str, url: str, elicitation_id: str | None) -> FormAnswer:
        caller = self._target()
        if not self._can_ask(caller, "elicitation"):
            return FormAnswer("decline")
        assert caller is not None
        elicitation_id = elicitation_id or uuid.uuid4().hex
        if caller.live is not None:
            visit = mt.ElicitRequestURLParams(message=message, url=url, elicitation_id=elicitation_id)
            return _form_answer(await self._within(caller.live.ask(mt.ElicitRequest(params=visit))))
        answer = await self._within(
            caller.session.elicit_url(message, url, elicitation_id, related_request_id=caller.request_id)
        )
        return FormAnswer(answer.action, answer.content)

    async def allow_sampling(self, server: str, preview: str) -> bool:
        return True  # the client's own sampling asks its user, as its implementation decides

    async def sample(self, request: SampleRequest) -> Sample:
        caller = self._target()
        if not self._can_ask(caller, "sampling"):
            raise RuntimeError("the MCP client of serve-mcp does not offer sampling")
        assert caller is not None
        messages = [
            mt.SamplingMessage(role=role, content=mt.TextContent(type="text", text=text))  # type: ignore[arg-type]
            for role, text in request.messages
        ]
        if caller.live is not None:
            params = mt.CreateMessageRequestParams(
                messages=messages,
                max_tokens=request.max_tokens,
                system_prompt=request.system,
                temperature=request.temperature,
            )
            result = await self._within(caller.live.ask(mt.CreateMessageRequest(params=params)))
            if not isinstance(result, mt.CreateMessageResult | mt.CreateMessageResultWithTools):
                raise RuntimeError(
                    "the MCP client of serve-mcp answered the sampling request with no message"
                )
        else:
            with warnings.catch_warnings():  # sampling is deprecated in 2026-07-28; 2025-era clients use it
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                question = caller.session.create_message(
                    messages,
                    max_tokens=request.max_tokens,
                    system_prompt=request.system,
                    temperature=request.temperature,
                    related_request_id=caller.request_id,
                )
            result = await self._within(question)
        blocks = result.content if isinstance(result.content, list) else [result.content]
        text = "\n".join(block.text for block in blocks if isinstance(block, mt.TextContent))
        return Sample(text=text, model=result.model, stop_reason=result.stop_reason or "endTurn")

    async def _within(self, question: Any) -> Any:
        try:
            return await asyncio.wait_for(question, self.timeout)
        except TimeoutError:
            raise TimeoutError(f"no answer from the client within {seconds(self.timeout)}") from None


def _form_answer(answer: mt.InputResponse) -> FormAnswer:
    """The client's answer to an elicitation; anything else counts as declined."""
    if not isinstance(answer, mt.ElicitResult):
        return FormAnswer("decline")
    return FormAnswer(answer.action, answer.content)
