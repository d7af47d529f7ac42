"""What MCP servers ask of their client, and how asyncai answers: elicitation (a form to fill in,
or a URL to visit), sampling (a completion from the agent's model) and roots (the directories the
servers may work in).

The rules are pure and live here; the person who answers (``Person``) and the model that samples
(``Sampler``) are seams, so the chat answers at the terminal, ``serve-mcp`` hands the question on
to its own client, and tests answer with plain functions. Where nobody can answer, the default is
to decline: the tool sees the decline and says so.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from asyncai.arguments import check_choice, check_method, refusal
from asyncai.log import log_event
from asyncai.tools.mcp.asking import (
    ELICITATION_POLICIES,
    SAMPLING_POLICIES,
    ElicitationPolicy,
    FormAnswer,
    Person,
    Sample,
    Sampler,
    SampleRequest,
    SamplingBudget,
    SamplingPolicy,
    defaults_answer,
    form_problem,
)
from asyncai.wording import setting

if TYPE_CHECKING:
    import mcp.types as mt
    from mcp.client import ClientRequestContext

# The mcp SDK (half a second to import) loads when a server first asks, not when the answers are
# set up: the command line builds these before it spawns its servers, whose start should not wait.


def roots_from(directories: Sequence[str | Path]) -> list[mt.Root]:
    """The directories offered as roots (absolute ``file://`` URIs, named by their last part)."""
    import mcp.types as mt

    roots = []
    for directory in directories:
        path = Path(directory).expanduser().resolve()
        roots.append(mt.Root(uri=path.as_uri(), name=path.name or str(path)))  # type: ignore[arg-type]
    return roots


def _sample_request(params: mt.CreateMessageRequestParams) -> SampleRequest:
    import mcp.types as mt

    messages = []
    for message in params.messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        text = "\n".join(block.text for block in blocks if isinstance(block, mt.TextContent))
        messages.append((message.role, text))
    return SampleRequest(tuple(messages), params.system_prompt, params.max_tokens, params.temperature)


def _no_pause() -> AbstractAsyncContextManager[None]:
    return contextlib.nullcontext()


@dataclass
class ServerRequests:
    """How asyncai answers what servers ask; one per run, shared by every server.

    ``elicitation``: ``ask`` the ``person`` (declines when there is none), ``accept-defaults``
    (a form whose required fields all have defaults, with those defaults; anything else declined),
    or ``decline``. ``sampling``: ``allow`` the ``sampler`` within ``budget``, ``ask`` the person
    first, or ``deny`` (then servers are not offered sampling at all). ``roots``: the
    directories offered (none: no roots capability).
    """

    elicitation: ElicitationPolicy = "decline"
    sampling: SamplingPolicy = "deny"
    person: Person | None = None
    sampler: Sampler | None = None
    roots: Sequence[str | Path] = ()
    """The directories offered (kept as a tuple of paths)."""
    budget: SamplingBudget = field(default_factory=SamplingBudget)
    waiting: Callable[[], AbstractAsyncContextManager[None]] = _no_pause
    """Entered while the person answers (code mode pauses its snippets' wall clocks)."""

    def __post_init__(self) -> None:
        owner = "ServerRequests"
        check_choice(self.elicitation, ELICITATION_POLICIES, owner, "elicitation")
        check_choice(self.sampling, SAMPLING_POLICIES, owner, "sampling")
        if self.person is not None:
            check_method(self.person, "fill_form", owner, "person", "an asyncai.Person or None")
        if self.sampler is not None:
            check_method(self.sampler, "sample", owner, "sampler", "an asyncai.Sampler or None")
        directories = "a list of directories (pathlib.Path or str)"
        if isinstance(self.roots, str | Path) or not isinstance(self.roots, Iterable):
            raise TypeError(refusal(owner, "roots", directories, self.roots))
        self.roots = tuple(Path(root) for root in self.roots)

    def client_callbacks(self, server: str) -> dict[str, Any]:
        """The SDK ``Client`` keyword arguments that declare and answer these capabilities."""
        import mcp.types as mt

        async def elicit(context: ClientRequestContext, params: mt.ElicitRequestParams) -> mt.ElicitResult:
            return await self.elicit(server, params)

        async def sample(
            context: ClientRequestContext, params: mt.CreateMessageRequestParams
        ) -> mt.CreateMessageResult | mt.ErrorData:
            return await self.sample(server, params)

        async def list_roots(context: ClientRequestContext) -> mt.ListRootsResult:
            return mt.ListRootsResult(roots=roots_from(self.roots))

        callbacks: dict[str, Any] = {"elicitation_callback": elicit}
        if self.sampling != "deny":  # offered only when it may be answered
            callbacks["sampling_callback"] = sample
        if self.roots:
            callbacks["list_roots_callback"] = list_roots
        return callbacks

    async def elicit(self, server: str, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        import mcp.types as mt

        try:
            answer = await self._elicitation_answer(server, params)
        except Exception as exc:  # a question that cannot be asked is cancelled, not a host failure
            log_event("mcp.elicitation_failed", logging.WARNING, server=server, error=str(exc))
            answer = FormAnswer("cancel")
        log_event(
            "mcp.elicitation",
            logging.INFO,
            server=server,
            mode="url" if isinstance(params, mt.ElicitRequestURLParams) else "form",
            policy=self.elicitation,
            action=answer.action,
        )
        return mt.ElicitResult(action=answer.action, content=answer.content)

    async def _elicitation_answer(self, server: str, params: mt.ElicitRequestParams) -> FormAnswer:
        import mcp.types as mt

        if self.elicitation == "decline":
            return FormAnswer("decline")
        if isinstance(params, mt.ElicitRequestURLParams):
            if self.elicitation != "ask" or self.person is None:
                return FormAnswer("decline")
            async with self.waiting():
                return await self.person.visit_url(server, params.message, params.url, params.elicitation_id)
        schema = dict(params.requested_schema)
        if self.elicitation == "accept-defaults" or self.person is None:
            content = defaults_answer(schema) if self.elicitation == "accept-defaults" else None
            return FormAnswer("accept", content) if content is not None else FormAnswer("decline")
        async with self.waiting():
            answer = await self.person.fill_form(server, params.message, schema)
        if answer.action == "accept" and form_problem(schema, answer.content or {}) is not None:
            return FormAnswer("cancel")  # a person's answer that does not fit the form is not sent
        return answer

    async def sample(
        self, server: str, params: mt.CreateMessageRequestParams
    ) -> mt.CreateMessageResult | mt.ErrorData:
        import mcp.types as mt

        refusal = self._sampling_refusal(params)
        if refusal is not None:
            return self._refused(server, refusal)
        wanted = params.max_tokens
        self.budget.reserve(wanted)  # before any await: requests at once share the cap
        result: Sample | None = None
        try:
            request = _sample_request(params)
            if self.sampling == "ask":
                refusal = await self._asked(server, request)
            if refusal is None and self.sampler is None:
                refusal = "no model to sample from"
            if refusal is not None:
                return self._refused(server, refusal)
            assert self.sampler is not None
            try:
                result = await self.sampler.sample(request)
            except Exception as exc:  # the model's failure is the server's error, not the host's
                log_event("mcp.sampling", logging.WARNING, server=server, error=str(exc))
                return mt.ErrorData(code=mt.INTERNAL_ERROR, message=f"sampling failed: {exc}")
        finally:
            self.budget.settle(wanted, result)
        log_event(
            "mcp.sampling",
            logging.INFO,
            server=server,
            model=result.model,
            input_tokens=result.input_tokens,
            output_tokens=result.output_tokens,
        )
        return mt.CreateMessageResult(
            role="assistant",
            content=mt.TextContent(type="text", text=result.text),
            model=result.model,
            stop_reason=result.stop_reason,
        )

    async def _asked(self, server: str, request: SampleRequest) -> str | None:
        """``--sampling ask``: why the person did not allow it, or ``None``."""
        if self.person is None:
            return "nobody to ask whether the model may answer"
        preview = request.messages[-1][1] if request.messages else ""
        async with self.waiting():
            allowed = await self.person.allow_sampling(server, preview)
        return None if allowed else "the user declined the sampling request"

    @staticmethod
    def _refused(server: str, reason: str) -> mt.ErrorData:
        import mcp.types as mt

        log_event("mcp.sampling", logging.INFO, server=server, refused=reason)
        return mt.ErrorData(code=mt.INVALID_REQUEST, message=f"sampling refused: {reason}")

    def _sampling_refusal(self, params: mt.CreateMessageRequestParams) -> str | None:
        if self.sampling == "deny":
            return f"sampling is off ({setting('sampling', 'allow')} lets servers use the model)"
        return self.budget.refusal(params.max_tokens)
