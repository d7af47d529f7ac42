"""``--mutations ask`` in the chat: the person at the terminal decides each mutating nested call.

The snippet waits (its wall clock paused) while the question is on screen:

    run_code wants to call delete_object(workspace='root:app', name='web')
    allow? [y] this call, [n] refuse, [a] this tool for the rest of the session,
    [A] every call of this snippet:

An empty answer or end of input refuses; anything else asks again.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager

from asyncai.approvals.gate import Approval, ApprovalRequest
from asyncai.cli.blocking import read_in_thread

QUESTION = (
    "run_code wants to call {call}\n"
    "allow? [y] this call, [n] refuse, [a] this tool for the rest of the session,\n"
    "[A] every call of this snippet: "
)
REFUSED = Approval(False, "the user refused it")
PROMPT_ARGUMENT_CHARS = 2000
"""An argument longer than this is cut in the question, saying how much is hidden."""


async def read_answer(question: str) -> str:
    """A line typed at the terminal after ``question`` (read off the event loop)."""
    return await read_in_thread(input, question)


class TerminalAsker:
    """Asks the person at the terminal with ``ask``; ``pause`` clears the live display from the
    screen while a question is on it."""

    def __init__(
        self,
        ask: Callable[[str], Awaitable[str]] = read_answer,
        pause: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext,
    ) -> None:
        self._ask = ask
        self._pause = pause


class TerminalApprover(TerminalAsker):
    """Asks on the terminal; remembers the tools allowed for the rest of the session."""

    def __init__(
        self,
        ask: Callable[[str], Awaitable[str]] = read_answer,
        pause: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext,
    ) -> None:
        super().__init__(ask, pause)
        self.allowed_tools: set[str] = set()

    async def approve(self, request: ApprovalRequest) -> Approval:
        if request.tool in self.allowed_tools:
            return Approval(True)
        with self._pause():
            return await self._decide(request)

    async def _decide(self, request: ApprovalRequest) -> Approval:
        question = QUESTION.format(call=request.call_text(limit=PROMPT_ARGUMENT_CHARS))
        while True:
            try:
                answer = (await self._ask(question)).strip()
            except (EOFError, KeyboardInterrupt):
                print(file=sys.stderr)
                return Approval(False, "no answer from the user")
            if answer in ("y", "Y", "yes"):
                return Approval(True)
            if answer in ("", "n", "N", "no"):
                return REFUSED
            if answer == "a":
                self.allowed_tools.add(request.tool)
                return Approval(True)
            if answer == "A":
                return Approval(True, rest_of_snippet=True)
            question = "please answer y, n, a or A: "
