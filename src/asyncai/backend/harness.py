"""The session-harness boundary: where a run's turns go as they happen.

The backend calls a harness once per message, in order, while the run goes on, so a recorder can
append each record at once and a crash loses at most the one being written. Nested MCP calls are not
model turns: they reach the harness only as the ``audit`` of the ``run_code`` result that made them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from asyncai.backend.config import Message
from asyncai.tools.types import ToolCallOutput


@dataclass(frozen=True)
class ModelTurn:
    """What the model server said about one answer, besides the message itself."""

    model: str
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None


class SessionHarness(Protocol):
    """Receives the messages of a run in the order the model sees them."""

    def user_turn(self, message: Message) -> None:
        """The run's user message, as sent (the user's text and the run's note)."""

    def assistant_turn(self, message: Message, turn: ModelTurn) -> None:
        """An assistant message that does not end the run: with tool calls (their results follow,
        in call order), or text a user message answers (a text-protocol program, a nudged reply)."""

    def tool_result(self, message: Message, output: ToolCallOutput) -> None:
        """One tool result as the model sees it (``message``) and as it was made (``output``)."""

    def final_reply(self, message: Message, turn: ModelTurn) -> None:
        """The assistant message that ends the run."""
