"""Turn metrics: what one backend run cost and what code mode saved."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from asyncai.tools.types import ToolCallOutput


@dataclass
class TurnSummary:
    """The fields of the ``model.turn_summary`` log event.

    ``run_code_calls`` counts the model's tool calls that ran (whatever the tool; a call refused
    before running, for an unknown tool, unusable arguments or over the cap, counts only in
    ``tool_errors``); ``nested_calls`` and
    ``bytes_in`` come from the outputs' ``audit["nested_calls"]`` (code mode); ``bytes_out`` is the
    UTF-8 size of every tool-result content sent to the model.
    """

    rounds: int = 0
    run_code_calls: int = 0
    nested_calls: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    final_round_forced: bool = False
    tool_errors: int = 0
    eager_statements: int = 0
    """Statements of streamed snippets that ran before the snippet had fully arrived."""
    repaired: int = 0
    """Tool calls that needed a repair (``wire.REPAIR_KINDS``); ``repairs`` counts each kind."""
    repairs: dict[str, int] = field(default_factory=dict)
    nudged: bool = False
    """An unfinished reply got the nudge (``wire.unfinished_reply_nudge``)."""
    thread: str | None = None
    run: int | str | None = None
    error: str | None = None

    def add_output(self, output: ToolCallOutput, *, ran: bool = True) -> None:
        """Count one tool result sent to the model (``ran``: the call ran, it was not refused first)."""
        self.run_code_calls += 1 if ran else 0
        self.bytes_out += len(output.content.encode("utf-8"))
        if output.is_error:
            self.tool_errors += 1
        nested, size = nested_audit(output.audit)
        self.nested_calls += nested
        self.bytes_in += size
        early = output.audit.get("eager_statements") if isinstance(output.audit, dict) else None
        if isinstance(early, int) and not isinstance(early, bool):
            self.eager_statements += early

    def add_repairs(self, kinds: tuple[str, ...]) -> None:
        """Count one call that needed the repairs ``kinds`` (nothing when it needed none)."""
        if not kinds:
            return
        self.repaired += 1
        for kind in kinds:
            self.repairs[kind] = self.repairs.get(kind, 0) + 1

    def log_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "rounds": self.rounds,
            "run_code_calls": self.run_code_calls,
            "nested_calls": self.nested_calls,
            "bytes_in": self.bytes_in,
            "bytes_out": self.bytes_out,
            "final_round_forced": self.final_round_forced,
            "tool_errors": self.tool_errors,
            "repaired": self.repaired,
        }
        if self.repairs:
            fields["repairs"] = dict(sorted(self.repairs.items()))
        if self.nudged:
            fields["nudged"] = True
        if self.eager_statements:
            fields["eager_statements"] = self.eager_statements
        if self.thread is not None:
            fields["thread"] = self.thread
        if self.run is not None:
            fields["run"] = self.run
        if self.error is not None:
            fields["error"] = self.error
        return fields


def nested_audit(audit: dict[str, Any] | None) -> tuple[int, int]:
    """``(count, bytes)`` of the nested calls recorded in a tool output's audit, tolerant of junk."""
    if not isinstance(audit, dict):
        return 0, 0
    calls = audit.get("nested_calls")
    if not isinstance(calls, list):
        return 0, 0
    size = 0
    for call in calls:
        value = call.get("bytes") if isinstance(call, dict) else None
        if isinstance(value, int) and not isinstance(value, bool):
            size += value
    return len(calls), size
