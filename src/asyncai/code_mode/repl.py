"""``ReplScope``: one REPL (a checked-out Monty worker session) and the ``run_code`` calls fed to it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pydantic_monty as pm

from ..log import log_event
from ..tools.types import ToolCallOutput, ToolDefinition, ToolExecutor
from .catalog import HELPER_NAMES
from .contract import RunCodeText, SnippetOutcome, format_error, format_outcome, hide_frames
from .dispatch import OS_DENIED, CatalogEntry, SnippetDispatcher
from .preamble import HOST_CALL, scope_preamble
from .sandbox import Sandbox, release
from .variables import BoundVariable, bound_names, format_note, note_candidates, probe_source, rebound_helper

RUN_CODE = "run_code"
PREAMBLE_FILENAME = "<python-input-0>"  # Monty names the Nth feed of a session <python-input-N>


class PrintCapture:
    """Keeps the first ``max_bytes`` of ``print()`` output and counts the rest; never fails the feed."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.parts: list[str] = []
        self.size = 0
        self.dropped = 0

    def __call__(self, stream: str, text: str) -> None:
        data = text.encode()
        keep = data[: max(self.max_bytes - self.size, 0)]
        if keep:
            self.parts.append(keep.decode(errors="ignore"))
        self.size += len(keep)
        self.dropped += len(data) - len(keep)

    @property
    def text(self) -> str:
        return "".join(self.parts)


@dataclass(frozen=True)
class ScopeSetup:
    """What every scope of one code-mode executor shares."""

    run_code: ToolDefinition
    catalog: Mapping[str, CatalogEntry]
    inner: ToolExecutor
    sandbox: Sandbox
    operator_preamble: str | None = None


class _StateLost(Exception):
    """The worker or its session is gone; the scope starts over."""


class ReplScope(ToolExecutor):
    """A ``ToolExecutor`` offering ``run_code`` over one persistent REPL.

    Feeds are serialised with a lock (one session cannot take two feeds at once); the worker is
    checked out on first use and released by ``aclose``.
    """

    def __init__(self, setup: ScopeSetup) -> None:
        self.setup = setup
        self.limits = setup.sandbox.limits
        self._session: pm.AsyncMontySession | None = None
        self._lock = asyncio.Lock()
        self._bound: dict[str, None] = {}
        self._note: str | None = None

    def tools(self) -> list[ToolDefinition]:
        return [self.setup.run_code]

    def context_note(self) -> str | None:
        return self._note

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolCallOutput:
        if name != RUN_CODE:
            return ToolCallOutput.error(f"error: unknown tool {name!r}; the only tool is run_code")
        code = arguments.get("code")
        if not isinstance(code, str):
            return ToolCallOutput.error('error: run_code needs {"code": "<python source>"}')
        async with self._lock:
            if arguments.get("restart") is True:
                await self._reset()
            dispatcher = SnippetDispatcher(self.setup.catalog, self.setup.inner, self.limits)
            result = await self._run(code, dispatcher)
            return ToolCallOutput(content=result.text, is_error=result.is_error, audit=dispatcher.audit())

    async def _run(self, code: str, dispatcher: SnippetDispatcher) -> RunCodeText:
        helper = rebound_helper(code, HELPER_NAMES)
        if helper is not None:
            return RunCodeText(
                f"error: `{helper}` is a built-in helper and cannot be rebound; "
                f"pick another name (e.g. `{helper}_`). Nothing was run.",
                is_error=True,
            )
        try:
            session = await self._ensure_session()
        except _StateLost as exc:
            return RunCodeText(f"error: could not start the sandbox: {exc}", is_error=True)
        capture = PrintCapture(self.limits.max_print_bytes)
        try:
            value = await asyncio.wait_for(
                self._feed(session, code, dispatcher, capture), self.limits.wall_timeout
            )
        except TimeoutError:
            dispatcher.cancel_in_flight()
            await self._reset(discard=True)
            return RunCodeText(
                f"error: run_code exceeded its wall-clock limit of {self.limits.wall_timeout:g}s; "
                "in-flight tool calls were cancelled and the REPL state was reset (variables are gone).",
                is_error=True,
            )
        except pm.MontyError as exc:
            return await self._error_result(exc, code)
        except RuntimeError as exc:  # pydantic-monty reports a dead session as a plain RuntimeError
            await self._reset(discard=True)
            return format_error(f"RuntimeError: {exc}", state_reset=True)
        self._remember_names(code)
        await self._refresh_note(session)
        return format_outcome(
            SnippetOutcome(value=value, printed=capture.text, printed_truncated_bytes=capture.dropped),
            max_chars=self.limits.max_result_chars,
        )

    async def _feed(
        self, session: pm.AsyncMontySession, code: str, dispatcher: SnippetDispatcher, capture: PrintCapture
    ) -> Any:
        return await session.feed_run(
            code, external_lookup={HOST_CALL: dispatcher.call}, os=dispatcher.deny_os, print_callback=capture
        )

    async def _error_result(self, exc: pm.MontyError, code: str) -> RunCodeText:
        if isinstance(exc, pm.MontyCrashedError):
            await self._reset(discard=True)
            if exc.timed_out:
                reason = (
                    f"was killed: the snippet ran past its {self.limits.code_timeout:g}s execution limit "
                    "inside one long operation (such as a huge integer power) that cannot be interrupted"
                )
            else:
                reason = f"crashed ({exc})"
            return format_error(f"error: the sandbox worker {reason}", state_reset=True)
        text = exc.display() if isinstance(exc, pm.MontyRuntimeError | pm.MontySyntaxError) else str(exc)
        # The tool wrappers live in the scope's first feed; their frames are noise to the model.
        text = hide_frames(text, PREAMBLE_FILENAME)
        lines = text.strip().splitlines()
        if lines and lines[-1].startswith("MemoryError"):
            # After a heap overrun the session keeps its failed allocations counted: start afresh.
            await self._reset(discard=True)
            return format_error(text, state_reset=True)
        self._remember_names(code)
        return format_error(text)

    async def _ensure_session(self) -> pm.AsyncMontySession:
        if self._session is not None:
            return self._session
        try:
            session = await self.setup.sandbox.checkout()
        except Exception as exc:
            raise _StateLost(str(exc)) from None
        try:
            await session.feed_run(scope_preamble(self.setup.catalog))
            if self.setup.operator_preamble:
                await session.feed_run(
                    self.setup.operator_preamble, os=_deny_os, print_callback=_discard_print
                )
        except Exception as exc:
            await release(session, discard=True)
            text = exc.display() if isinstance(exc, pm.MontyRuntimeError | pm.MontySyntaxError) else str(exc)
            raise _StateLost(f"the code preamble failed: {text}") from None
        self._session = session
        return session

    def _remember_names(self, code: str) -> None:
        for name in note_candidates(bound_names(code)):
            self._bound.pop(name, None)
            self._bound[name] = None

    async def _refresh_note(self, session: pm.AsyncMontySession) -> None:
        names = list(reversed(self._bound))
        if not names:
            self._note = None
            return
        try:
            rows = await session.feed_run(probe_source(names))
        except Exception as exc:  # a failed probe only means the note is missing
            log_event("code_mode.probe_failed", logging.INFO, error=str(exc))
            return
        variables = [BoundVariable(str(n), str(t), int(s)) for n, t, s in rows or []]
        self._bound = {v.name: None for v in reversed(variables)}
        self._note = format_note(variables)

    async def _reset(self, *, discard: bool = False) -> None:
        session, self._session = self._session, None
        self._bound.clear()
        self._note = None
        if session is not None:
            await release(session, discard=discard)

    async def aclose(self) -> None:
        async with self._lock:
            await self._reset()


def _deny_os(**_: Any) -> None:
    raise PermissionError(OS_DENIED)


def _discard_print(stream: str, text: str) -> None:
    """Preamble output must not reach the host's stdout."""
