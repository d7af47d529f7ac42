"""``OpenAiCompatibleBackend``: the run loop over an OpenAI-compatible chat-completions endpoint.

HTTP goes through ``httpx2`` (pydantic's maintained httpx fork), which asyncai already depends on
through ``mcp``; there is no OpenAI SDK and no extra dependency. Parsing and repair live in
:mod:`asyncai.backend.wire` as pure functions; this module is the thin async shell around them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import httpx2

from asyncai.activity import QUIET, Activity
from asyncai.backend import wire
from asyncai.backend.calls import (
    PreparedCall,
    already_ran_text,
    assistant_message,
    call_notes,
    code_functions,
    code_tool_name,
    prepare_calls,
)
from asyncai.backend.config import FINAL_ROUND_INSTRUCTION, BackendConfig, Message
from asyncai.backend.eager import EagerCalls, EagerExecutor, EagerRun
from asyncai.backend.harness import ModelTurn, SessionHarness
from asyncai.backend.metrics import TurnSummary
from asyncai.backend.overflow import context_overflow
from asyncai.backend.programs import (
    code_result_text,
    program_in_text,
    program_key,
    python_code,
    text_protocol_prompt,
)
from asyncai.backend.text_calls import TextCalls, calls_in_text
from asyncai.backend.unfinished import no_answer_text, unfinished_reply, unfinished_reply_nudge
from asyncai.humanize import one_line, seconds
from asyncai.log import decoded_or_preview, dumps_compact, log_event
from asyncai.telemetry.spans import DEFAULT_TRACING, Tracing, agent_run, end_chat, start_chat
from asyncai.tools.types import ToolCallOutput, ToolDefinition, ToolSource
from asyncai.wording import setting

_ERROR_PREVIEW_CHARS = 300


class ModelServerError(Exception):
    """The model server could not be used; ``str(error)`` is one line naming the URL and what to check."""

    def __init__(self, message: str, *, url: str, status: int | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.status = status


@dataclass(frozen=True)
class RunResult:
    """What one backend run produced.

    ``messages`` are this run's messages as the model saw them, after repair (the user message with
    its note, assistant tool calls, tool results, the final reply): what a thread's history keeps.
    """

    reply: str
    messages: tuple[Message, ...]
    rounds: int = 0
    final_round_forced: bool = False
    summary: TurnSummary = field(default_factory=TurnSummary)


@dataclass
class _HttpFailure:
    message: str
    hint: str
    status: int | None
    retryable: bool
    retry_after: float | None = None

    def describe(self, attempts: int) -> str:
        suffix = f" after {attempts} attempts" if attempts > 1 else ""
        return f"{self.message}{suffix} ({self.hint})"


def _one_line(text: str) -> str:
    return one_line(text, _ERROR_PREVIEW_CHARS)


def _error_detail(body: bytes) -> str:
    text = body.decode("utf-8", errors="replace")
    try:
        decoded = json.loads(text)
    except ValueError:
        return _one_line(text)
    if isinstance(decoded, dict) and "error" in decoded:
        error = decoded["error"]
        if isinstance(error, dict) and error.get("message"):
            return _one_line(str(error["message"]))
        return _one_line(str(error))
    return _one_line(text)


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def _status_failure(url: str, status: int, body: bytes, retry_after: str | None) -> _HttpFailure:
    detail = _error_detail(body)
    detail = f": {detail}" if detail else ""
    overflow = context_overflow(status, body)
    if overflow is not None:
        sizes = overflow.sizes()
        return _HttpFailure(
            message=(
                f"the conversation is too long for the model's context"
                f"{f' ({sizes})' if sizes else ''}: the model server at {url} answered HTTP {status}{detail}"
            ),
            hint=(
                "start a new conversation, or give the server a larger context "
                f"(llama-server -c, Ollama num_ctx), or lower {setting('max_tokens')}"
            ),
            status=status,
            retryable=False,
        )
    if status == 429:
        hint = "the server is rate limiting; wait, or check its limits and --api-key"
    elif status >= 500:
        hint = "check the server's log; is --model loaded?"
    elif status in (401, 403):
        hint = "check --api-key"
    elif status == 404:
        hint = "check --base-url (usually ending in /v1) and --model"
    else:
        hint = (
            "check --model; tool calling may be off on the server "
            "(llama.cpp needs --jinja, vLLM --enable-auto-tool-choice)"
        )
    return _HttpFailure(
        message=f"the model server at {url} answered HTTP {status}{detail}",
        hint=hint,
        status=status,
        retryable=status == 429 or status >= 500,
        retry_after=_retry_after(retry_after),
    )


def _transport_failure(url: str, exc: httpx2.HTTPError, timeout: float) -> _HttpFailure:
    reason = str(exc) or type(exc).__name__
    if isinstance(exc, httpx2.ConnectError | httpx2.ConnectTimeout):
        return _HttpFailure(
            f"cannot connect to the model server at {url}: {_one_line(reason)}",
            "is the server running? is --base-url right?",
            None,
            retryable=True,
        )
    if isinstance(exc, httpx2.TimeoutException):
        return _HttpFailure(
            f"the model server at {url} did not answer within {seconds(timeout)}",
            f"is the model loaded? is the server overloaded? raise {setting('request_timeout')}",
            None,
            retryable=False,
        )
    return _HttpFailure(
        f"the connection to the model server at {url} failed: {_one_line(reason)}",
        "is the server running? is --base-url right?",
        None,
        retryable=True,
    )


def _remember_program(
    already_ran: dict[str, str], call: PreparedCall, output: ToolCallOutput, code_tool: str | None
) -> None:
    """Keep the result of a snippet that ran without error: the same one again gets it back, unrun."""
    code = call.arguments.get("code") if call.arguments is not None else None
    if call.ok and call.name == code_tool and isinstance(code, str) and not output.is_error:
        notes = len(call_notes(call))  # the lines _call put before the result
        already_ran[program_key(code)] = output.content.split("\n", notes)[-1]


class OpenAiCompatibleBackend:
    """Drives a model on any OpenAI-compatible ``/chat/completions`` endpoint through tool rounds.

    One instance can serve many concurrent runs (the HTTP client is shared, runs keep their state
    on the stack). Use ``async with`` or call :meth:`aclose` to release the HTTP client when the
    backend created it.
    """

    def __init__(
        self,
        config: BackendConfig,
        *,
        client: httpx2.AsyncClient | None = None,
        activity: Activity = QUIET,
        tracing: Tracing = DEFAULT_TRACING,
    ) -> None:
        self.config = config
        self.activity = activity
        self.tracing = tracing
        """Where the run's span and its model requests' spans go (``telemetry.spans``)."""
        self._own_client = client is None
        self._client = client or httpx2.AsyncClient(
            timeout=httpx2.Timeout(config.request_timeout, connect=config.connect_timeout)
        )

    @property
    def url(self) -> str:
        return self.config.chat_url

    async def __aenter__(self) -> OpenAiCompatibleBackend:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._own_client:
            await self._client.aclose()

    # ------------------------------------------------------------------------------------------
    # The run loop

    async def run(
        self,
        *,
        history: Sequence[Message],
        user_text: str,
        executor: ToolSource,
        note: str | None = None,
        thread_id: str | None = None,
        run_id: int | str | None = None,
        session: SessionHarness | None = None,
    ) -> RunResult:
        """Answer ``user_text`` in up to ``max_rounds`` model rounds, running tool calls on ``executor``.

        ``history`` is the thread's earlier messages; ``session`` receives this run's messages as
        they happen. Raises :class:`ModelServerError` when the model server fails; tool failures
        never raise, they become error tool results the model can read. The run is a span
        (``invoke_agent``), current while it lasts: its model requests and snippets nest under it.
        """
        with agent_run(self.tracing, self.config.model, thread_id) as span:
            try:
                return await self._run(history, user_text, executor, note, thread_id, run_id, session)
            except ModelServerError as exc:
                span.set_attribute("error.type", type(exc).__name__)
                raise

    async def _run(
        self,
        history: Sequence[Message],
        user_text: str,
        executor: ToolSource,
        note: str | None,
        thread_id: str | None,
        run_id: int | str | None,
        session: SessionHarness | None,
    ) -> RunResult:
        definitions = executor.tools()
        tools_by_name: dict[str, ToolDefinition] = {t.name: t for t in definitions}
        tool_json = wire.tool_specs(definitions)
        tool_names = [t["function"]["name"] for t in tool_json]
        # A call may name an offered tool or a function of run_code's catalog (run as a snippet).
        functions = code_functions(tools_by_name)
        call_names = {*tools_by_name, *functions}
        code_tool = code_tool_name(tools_by_name)
        config = self.config
        text_protocol = config.protocol == "text" and code_tool is not None
        if text_protocol:  # no tools offered: the code comes in the reply's text
            assert code_tool is not None
            prompt = text_protocol_prompt(config.system_prompt, tools_by_name[code_tool])
            config = dataclasses.replace(config, system_prompt=prompt)
            tool_json, tool_names = [], []
        user_message = Message("user", wire.user_message_text(user_text, note))
        run_messages: list[Message] = [user_message]
        if session is not None:
            session.user_turn(user_message)
        summary = TurnSummary(thread=thread_id, run=run_id)
        # Call ids stay unique over the whole conversation: transcripts and some servers need it.
        used_ids = {call.id for message in history for call in message.tool_calls}
        reply: str | None = None
        last_result: str | None = None
        last_failed = False  # the last round's call (or one of its calls) failed
        already_ran: dict[str, str] = {}  # program_key -> result, of each snippet that ran without error
        try:
            for round_number in range(1, self.config.max_rounds + 1):
                final = round_number == self.config.max_rounds and (bool(tool_json) or text_protocol)
                summary.rounds = round_number
                summary.final_round_forced = final
                body = wire.build_request_body(
                    config,
                    history=history,
                    run_messages=run_messages,
                    tools=None if final else tool_json,
                    final_instruction=FINAL_ROUND_INSTRUCTION if final else None,
                )
                log_event(
                    "model.request",
                    round=round_number,
                    message_count=len(body["messages"]),
                    tools=[] if final else tool_names,
                    final=final,
                    thread=thread_id,
                    run=run_id,
                )
                self.activity.model_request(round_number)
                eager = self._eager_calls(executor, body, final)
                try:
                    turn = await self._traced_complete(body, eager, round_number)
                except ModelServerError as exc:
                    ran = await asyncio.shield(eager.abandon()) if eager is not None else []
                    if ran:  # the user must know what ran of a snippet that never fully arrived
                        raise ModelServerError(
                            f"{exc}; {' '.join(ran)}", url=exc.url, status=exc.status
                        ) from exc
                    raise
                except BaseException:
                    if eager is not None:
                        await asyncio.shield(eager.abandon())
                    raise
                code = python_code(turn.content) if text_protocol and not final else None
                if code is not None:
                    assert code_tool is not None
                    output = await self._run_text_code(
                        executor, tools_by_name, code, turn, summary, run_messages, session, already_ran
                    )
                    last_result, last_failed = output.content, output.is_error
                    continue
                text_calls: TextCalls | None = None
                if not final and tool_json and not turn.tool_calls:
                    text_calls = calls_in_text(turn.content, call_names)
                    if text_calls is None and code_tool is not None:
                        text_calls = program_in_text(turn.content, functions, code_tool)
                    if text_calls is not None:  # the server left the model's call in its text
                        turn = dataclasses.replace(
                            turn, content=text_calls.prose, tool_calls=text_calls.calls
                        )
                        self.activity.reply_was_calls(text_calls.prose)
                if final or not turn.tool_calls or not tool_json:
                    if turn.tool_calls:
                        log_event(
                            "model.tool_calls_ignored",
                            round=round_number,
                            tools=[c.name for c in turn.tool_calls],
                            reason="tools were withdrawn" if final else "no tools are offered",
                        )
                    if eager is not None:
                        await eager.abandon()  # calls that will not run (tools were withdrawn)
                    reply = turn.content.strip() if turn.content else ""
                    code_is_no_answer = summary.run_code_calls > 0 and not text_protocol
                    unfinished = unfinished_reply(reply, code_is_no_answer=code_is_no_answer)
                    if unfinished and not summary.nudged and round_number < self.config.max_rounds:
                        # Small models often end a turn with nothing (or code) after a tool result: ask again.
                        summary.nudged = True
                        log_event("model.unfinished_reply", round=round_number, kind=unfinished, nudged=True)
                        text = unfinished_reply_nudge(
                            unfinished,
                            code_tool,
                            user_text,
                            text_protocol=text_protocol,
                            after_failure=last_failed,
                        )
                        if reply:  # the model reads what the nudge is about
                            shown = assistant_message(reply, [], turn.reasoning_content)
                            run_messages.append(shown)
                            if session is not None:
                                session.assistant_turn(shown, self._model_turn(turn))
                        nudge = Message("user", text)
                        run_messages.append(nudge)
                        if session is not None:
                            session.user_turn(nudge)
                        continue
                    if unfinished:
                        log_event("model.unfinished_reply", round=round_number, kind=unfinished, nudged=False)
                    reply = reply or no_answer_text(last_result)
                    final_message = assistant_message(reply, [], turn.reasoning_content)
                    run_messages.append(final_message)
                    if session is not None:
                        session.final_reply(final_message, self._model_turn(turn))
                    break
                calls = prepare_calls(
                    turn.tool_calls,
                    tools_by_name,
                    used_ids,
                    max_calls=self.config.max_calls_per_reply,
                    already_ran=already_ran,
                )
                if text_calls is not None:
                    calls = [
                        dataclasses.replace(c, repairs=(*text, *c.repairs))
                        for c, text in zip(calls, text_calls.repairs, strict=True)
                    ]
                if len(calls) > self.config.max_calls_per_reply:
                    log_event(
                        "model.tool_calls_capped",
                        logging.WARNING,
                        round=round_number,
                        calls=len(calls),
                        cap=self.config.max_calls_per_reply,
                    )
                used_ids.update(c.id for c in calls)
                calls_message = assistant_message(turn.content, calls, turn.reasoning_content)
                run_messages.append(calls_message)
                if session is not None:
                    session.assistant_turn(calls_message, self._model_turn(turn))
                runs = eager.runs if eager is not None else {}
                outputs = await asyncio.gather(
                    *(self._call(executor, c, runs.pop(i, None)) for i, c in enumerate(calls))
                )
                last_failed = any(output.is_error for output in outputs)
                for call, output in zip(calls, outputs, strict=True):
                    summary.add_output(output, ran=call.ok)
                    summary.add_repairs(call.repairs)
                    _remember_program(already_ran, call, output, code_tool)
                    last_result = output.content
                    result_message = wire.tool_message(call.id, output.content)
                    run_messages.append(result_message)
                    if session is not None:
                        session.tool_result(result_message, output)
        except ModelServerError as exc:
            summary.error = str(exc)
            raise
        finally:
            log_event("model.turn_summary", **summary.log_fields())
        assert reply is not None
        return RunResult(
            reply=reply,
            messages=tuple(run_messages),
            rounds=summary.rounds,
            final_round_forced=summary.final_round_forced,
            summary=summary,
        )

    async def _run_text_code(
        self,
        executor: ToolSource,
        tools_by_name: dict[str, ToolDefinition],
        code: str,
        turn: wire.AssistantTurn,
        summary: TurnSummary,
        run_messages: list[Message],
        session: SessionHarness | None,
        already_ran: dict[str, str],
    ) -> ToolCallOutput:
        """Run a text-protocol reply's program as the code tool would be called (with the same
        repairs); its result goes back as the next user message, and is returned."""
        code_tool = code_tool_name(tools_by_name)
        raw = wire.RawToolCall(id=f"text_{summary.rounds}", name=code_tool, arguments={"code": code})
        (call,) = prepare_calls([raw], tools_by_name, already_ran=already_ran)
        reply = assistant_message(turn.content, [], turn.reasoning_content)
        run_messages.append(reply)
        if session is not None:
            session.assistant_turn(reply, self._model_turn(turn))
        output = await self._call(executor, call)
        summary.add_output(output, ran=call.ok)
        summary.add_repairs(call.repairs)
        _remember_program(already_ran, call, output, code_tool)
        result = Message("user", code_result_text(output.content, output.is_error))
        run_messages.append(result)
        if session is not None:
            session.user_turn(result)
        return output

    async def _traced_complete(
        self, body: dict[str, Any], eager: EagerCalls | None, round_number: int
    ) -> wire.AssistantTurn:
        """``complete`` as a ``chat`` span, with the tokens the server reports."""
        span = start_chat(self.tracing, self.config.model, round_number, streamed=bool(body.get("stream")))
        try:
            turn = await self.complete(body, eager)
        except BaseException as exc:
            end_chat(span, error=exc)
            raise
        end_chat(span, usage=turn.usage, finish_reason=turn.finish_reason, tool_calls=len(turn.tool_calls))
        return turn

    def _model_turn(self, turn: wire.AssistantTurn) -> ModelTurn:
        return ModelTurn(model=self.config.model, finish_reason=turn.finish_reason, usage=turn.usage)

    def _eager_calls(self, executor: ToolSource, body: dict[str, Any], final: bool) -> EagerCalls | None:
        """Where this round's streamed ``run_code`` snippets start running early, if they do."""
        if (
            not self.config.eager
            or final
            or not body.get("stream")
            or not isinstance(executor, EagerExecutor)
        ):
            return None
        return EagerCalls(executor)

    async def _call(
        self, executor: ToolSource, call: PreparedCall, eager: EagerRun | None = None
    ) -> ToolCallOutput:
        for kind in call.repairs:
            repaired: dict[str, Any] = {"ran_as": call.ran_as} if kind == "catalog_name" else {}
            log_event("backend.call_repaired", kind=kind, tool=call.name, id=call.id, **repaired)
        extra: dict[str, Any] = {"error": call.error} if call.error is not None else {}
        log_event("model.tool_call", tool=call.name, id=call.id, arguments=call.arguments, **extra)
        if not call.ok or call.arguments is None:  # not run: a repeat, or a call that cannot run
            if call.earlier_result is not None:
                output = ToolCallOutput(content=already_ran_text(call.earlier_result))
            else:
                output = ToolCallOutput.error(call.error or f"error: unusable call to {call.name}")
            ran = await eager.abandon() if eager is not None else None
            if ran:  # statements of it ran while it streamed: the model must know
                output = dataclasses.replace(output, content=f"{output.content}\n{ran}")
        else:
            self.activity.tool_started(call.name, call.arguments)
            started = time.monotonic()
            try:
                if eager is not None:
                    output = await eager.finish(call.arguments)
                else:
                    output = await executor.call_tool(call.name, call.arguments)
            except Exception as exc:  # a tool must never end the run
                output = ToolCallOutput.error(f"error: tool {call.name} failed: {type(exc).__name__}: {exc}")
            self.activity.tool_finished(call.name, output, time.monotonic() - started)
            notes = call_notes(call)  # the model learns the form from what was run for it
            if notes:
                output = dataclasses.replace(output, content="\n".join([*notes, output.content]))
        log_event(
            "model.tool_result",
            tool=call.name,
            id=call.id,
            is_error=output.is_error,
            content=decoded_or_preview(output.content),
        )
        return output

    # ------------------------------------------------------------------------------------------
    # HTTP

    async def complete(self, body: dict[str, Any], eager: EagerCalls | None = None) -> wire.AssistantTurn:
        """One chat-completions request with bounded retries (429, 5xx, connection errors);
        ``eager`` is told of streamed tool-call arguments as they arrive."""
        content = dumps_compact(body).encode("utf-8")
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if self.config.api_key:
            headers["authorization"] = f"Bearer {self.config.api_key}"
        attempts = self.config.max_retries + 1
        for attempt in range(1, attempts + 1):
            outcome = await self._attempt(content, headers, bool(body.get("stream")), eager)
            if isinstance(outcome, wire.AssistantTurn):
                return outcome
            if eager is not None and eager.ran_any():  # a retry would run the same statements twice
                raise ModelServerError(
                    f"{outcome.describe(attempt)}; not retried: statements of the snippet had already run",
                    url=self.url,
                    status=outcome.status,
                )
            if eager is not None:
                await eager.abandon()  # nothing of it ran: the retry streams it afresh
            if not outcome.retryable or attempt == attempts:
                raise ModelServerError(outcome.describe(attempt), url=self.url, status=outcome.status)
            delay = self.config.backoff_base * (2 ** (attempt - 1))
            if outcome.retry_after is not None and outcome.retry_after <= self.config.max_retry_after:
                delay = outcome.retry_after
            # A retry that works is routine; the final failure is what the user needs to see.
            log_event(
                "model.retry",
                logging.INFO,
                url=self.url,
                status=outcome.status,
                attempt=attempt,
                delay_s=round(delay, 3),
                error=outcome.describe(attempt),
            )
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def _attempt(
        self, content: bytes, headers: dict[str, str], stream: bool, eager: EagerCalls | None = None
    ) -> wire.AssistantTurn | _HttpFailure:
        try:
            async with self._client.stream("POST", self.url, content=content, headers=headers) as response:
                if response.status_code >= 400:
                    error_body = await response.aread()
                    return _status_failure(
                        self.url, response.status_code, error_body, response.headers.get("retry-after")
                    )
                content_type = response.headers.get("content-type", "")
                if stream and "text/event-stream" in content_type:
                    return await self._read_stream(response, eager)
                raw = await response.aread()
        except httpx2.HTTPError as exc:
            return _transport_failure(self.url, exc, self.config.request_timeout)
        except wire.ResponseFormatError as exc:
            raise ModelServerError(
                f"the model server at {self.url} sent a bad stream: {_one_line(str(exc))} (check --model)",
                url=self.url,
            ) from exc
        try:
            decoded = json.loads(raw)
            return wire.parse_completion(decoded)
        except (ValueError, wire.ResponseFormatError) as exc:
            preview = _one_line(raw.decode("utf-8", errors="replace"))
            reason = str(exc) if isinstance(exc, wire.ResponseFormatError) else "not JSON"
            raise ModelServerError(
                f"the model server at {self.url} did not send a chat completion ({_one_line(reason)}): "
                f"{preview} (is --base-url an OpenAI-compatible /v1 endpoint? check --model)",
                url=self.url,
            ) from exc

    async def _read_stream(self, response: httpx2.Response, eager: EagerCalls | None) -> wire.AssistantTurn:
        accumulator = wire.StreamAccumulator()
        if eager is not None:
            accumulator.on_arguments = eager.on_arguments
        async for line in response.aiter_lines():
            data = wire.sse_data(line)
            if data is None or not data:
                continue
            if data == "[DONE]":
                break
            try:
                chunk = json.loads(data)
            except ValueError as exc:
                raise wire.ResponseFormatError(f"a stream chunk is not JSON: {data[:200]}") from exc
            if text := accumulator.feed(chunk):
                self.activity.reply_text(text)
        return accumulator.result()
