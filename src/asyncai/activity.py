"""What a run is doing, as it happens: the events a live display shows (``cli/live.py``).

The backend reports model rounds, streamed reply text and tool calls; code mode reports the nested
MCP calls of a snippet. Every method does nothing here: ``QUIET`` is what runs without a display
get, and a display overrides what it shows. Events come from the event loop's thread, in order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from asyncai.log import json_safe

if TYPE_CHECKING:
    from asyncai.tools.types import ToolCallOutput


@dataclass
class NestedCall:
    tool: str
    arguments: dict[str, Any]
    mutating: bool
    is_error: bool = False
    bytes: int = 0
    refused: bool = False
    function: str = ""
    """The Python name the snippet called."""
    answered: bool = False
    """The tool's answer (a result or an error) came back; False while it runs and once cut off."""

    def outcome(self) -> str:
        if self.refused:
            return "refused"
        if not self.answered:
            return "cut off"
        return "failed" if self.is_error else "finished"

    def audit(self) -> dict[str, Any]:
        """The audit entry (what a session records of the call); ``"refused": true`` is added for a
        call the mutation gate stopped."""
        entry = {
            "tool": self.tool,
            "arguments": json_safe(self.arguments),  # a snippet can pass anything; records must be JSON
            "is_error": self.is_error,
            "bytes": self.bytes,
            "mutating": self.mutating,
        }
        return {**entry, "refused": True} if self.refused else entry


class Activity:
    def model_request(self, round_number: int) -> None:
        """A request to the model goes out (round 1 is the first of the run)."""

    def reply_text(self, text: str) -> None:
        """A piece of the model's reply text arrived (streaming only)."""

    def reply_was_calls(self, prose: str | None) -> None:
        """The reply text held tool calls written as text: only ``prose`` of it is the model's words."""

    def tool_started(self, name: str, arguments: dict[str, Any]) -> None:
        """The model's tool call starts (in code mode: ``run_code`` with its ``code``)."""

    def tool_finished(self, name: str, output: ToolCallOutput, seconds: float) -> None:
        """The tool call ended; ``output.audit`` lists a snippet's nested calls."""

    def call_started(self, call: NestedCall) -> None:
        """A snippet's nested MCP call starts."""

    def call_finished(self, call: NestedCall, seconds: float) -> None:
        """It ended: answered, failed, refused or cut off (``call.outcome()``)."""


QUIET = Activity()


class Activities(Activity):
    """Several displays told of the same events, in the order given."""

    def __init__(self, *activities: Activity) -> None:
        self.activities = activities

    def model_request(self, round_number: int) -> None:
        for activity in self.activities:
            activity.model_request(round_number)

    def reply_text(self, text: str) -> None:
        for activity in self.activities:
            activity.reply_text(text)

    def reply_was_calls(self, prose: str | None) -> None:
        for activity in self.activities:
            activity.reply_was_calls(prose)

    def tool_started(self, name: str, arguments: dict[str, Any]) -> None:
        for activity in self.activities:
            activity.tool_started(name, arguments)

    def tool_finished(self, name: str, output: ToolCallOutput, seconds: float) -> None:
        for activity in self.activities:
            activity.tool_finished(name, output, seconds)

    def call_started(self, call: NestedCall) -> None:
        for activity in self.activities:
            activity.call_started(call)

    def call_finished(self, call: NestedCall, seconds: float) -> None:
        for activity in self.activities:
            activity.call_finished(call, seconds)


def combined(*activities: Activity | None) -> Activity:
    """One ``Activity`` telling each of ``activities`` (``QUIET`` and ``None`` left out)."""
    told = [activity for activity in activities if activity is not None and activity is not QUIET]
    if not told:
        return QUIET
    return told[0] if len(told) == 1 else Activities(*told)
