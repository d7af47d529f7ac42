"""Stage 4 of a snippet, *finish*: what the model and the embedder get back. The return contract
itself (the value as text, the result limit, errors and hints) is ``contract``'s, the variables
note ``variables``'s; this module joins them into ``run_code``'s output. Pure functions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pydantic_monty as pm

from asyncai.code_mode.engine.contract import RunCodeText, SnippetOutcome, format_error, format_outcome
from asyncai.code_mode.engine.read import LAST_VALUE
from asyncai.code_mode.limits import CodeModeLimits
from asyncai.code_mode.sandbox.interface import SnippetRaised
from asyncai.humanize import count, one_line, seconds
from asyncai.tools.types import ToolCallOutput

ABANDONED_PAUSE = (
    "error: this approval is for a snippet that no longer waits: its REPL ran another snippet since, "
    "or was reset. Nothing of it ran after the pause; run it again if it is still wanted."
)
NO_ANSWER = "no answer was given for it"
CUT_OFF = "the run_code call was cut off before the whole snippet arrived"
ABANDONED_REASON = "the snippet waited for an approval that never came (a newer snippet ran first)"
ABANDONED_NOTE = (
    "[the snippet that waited for an approval was abandoned: its mutating calls were refused, the "
    "rest of it ran, and what it bound is kept]"
)
RESTARTED_NOTE = "[the sandbox was restarted: variables from earlier run_code calls are gone]"
NEEDS_CODE = 'error: run_code needs {"code": "<python source>"}'


@dataclass(frozen=True)
class Written:
    """What the end of a run needs to know of its snippet as the model wrote it."""

    bound: tuple[str, ...]
    kept_as_last_value: bool
    value_at: tuple[int, int] | None = None
    """Where its last value was bound to ``_`` (``bind_last_value``), for tracebacks as written."""
    assigned: str | None = None
    """What its closing assignment assigned, when that is its value (``SnippetScan.assigned``)."""
    functions: tuple[tuple[str, str], ...] = ()
    """``(name, source)`` of each function it defines (``read.function_sources``)."""


def outcome_text(
    value: Any, printed: str, dropped: int, written: Written, limits: CodeModeLimits
) -> RunCodeText:
    """A snippet that ran to its end: its value and output under the result limit."""
    return format_outcome(
        SnippetOutcome(value=value, printed=printed, printed_truncated_bytes=dropped),
        max_chars=limits.max_result_chars,
        kept_as=LAST_VALUE if written.kept_as_last_value else None,
        assigned=written.assigned,
    )


def error_result(
    text: str, limits: CodeModeLimits, *, state_reset: bool = False, report: str | None = None
) -> RunCodeText:
    return format_error(text, state_reset=state_reset, max_chars=limits.max_result_chars, calls_report=report)


def wall_clock_text(limits: CodeModeLimits, *, ran: bool, chars: int = 0) -> str:
    limit = f"error: run_code exceeded its wall-clock limit of {seconds(limits.wall_timeout)}"
    if not ran:
        return f"{limit} while its {count(chars)} chars were read; nothing ran."
    return f"{limit}; in-flight tool calls were cancelled and the REPL state was reset (variables are gone)."


def crash_text(exc: pm.MontyCrashedError, limits: CodeModeLimits) -> str:
    if exc.timed_out:
        reason = (
            f"was killed: the snippet ran past its {seconds(limits.code_timeout)} "
            "execution limit inside one long operation (such as a huge integer power) "
            "that cannot be interrupted"
        )
    else:
        reason = f"crashed ({exc})"
    return f"error: the sandbox worker {reason}"


def stopped_text(why: str, ran: list[str], report: str | None) -> str:
    """A snippet stopped after the statements that ran while it streamed: say so, and what they were."""
    listed = "\n".join(f"- {line}" for line in ran)
    text = (
        f"error: {why}, so the rest of the snippet did not run. These statements had already run "
        f"while it streamed, and the REPL keeps what they did:\n{listed}"
        if ran
        else f"error: {why}; nothing ran."
    )
    return text if report is None else f"{text}\n{report}"


def notice(*, restarted: bool, abandoned: bool) -> str | None:
    """What the model must know of the REPL before a result, or ``None``."""
    notes = [note for note, due in ((ABANDONED_NOTE, abandoned), (RESTARTED_NOTE, restarted)) if due]
    return "\n".join(notes) or None


def tool_output(
    result: RunCodeText, audit: dict[str, Any] | None, notice: str | None = None
) -> ToolCallOutput:
    """``run_code``'s output: the text a model reads (``notice`` first), and the same as data: the
    value, what was printed and the notice (``None`` for an error, whose text is all there is)."""
    text = result.text if notice is None else f"{notice}\n{result.text}"
    structured: dict[str, Any] | None = None
    if not result.is_error:
        structured = {"value": result.value}
        if result.output is not None:
            structured["output"] = result.output
        if notice is not None:
            structured["notice"] = notice
    return ToolCallOutput(content=text, is_error=result.is_error, structured=structured, audit=audit)


def error_text(exc: BaseException) -> str:
    """An exception from the worker as the model reads it."""
    if isinstance(exc, pm.MontyRuntimeError | pm.MontySyntaxError | SnippetRaised):
        return exc.display()
    return str(exc)


def describe(exc: BaseException) -> str:
    """An exception in one line, for the log."""
    return one_line(f"{type(exc).__name__}: {exc}", 300)
