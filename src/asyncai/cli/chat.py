"""The interactive chat: questions on one thread at a time, slash commands, and Ctrl-C to stop a
run without leaving the chat (a Ctrl-C at the prompt exits)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from asyncai.cli.blocking import LineReader
from asyncai.cli.history import line_editing
from asyncai.cli.terminal import INTERRUPTED
from asyncai.cli.tools_command import NO_SERVERS, listing
from asyncai.runtime import RunReply, RunRequest, Runtime

if TYPE_CHECKING:
    from asyncai.cli.live import TerminalActivity
    from asyncai.cli.sessions import SessionRecorder
    from asyncai.code_mode import CodeMode

BANNER = "asyncai chat. /exit quits, /restart clears the REPL, /new starts a new thread."
COMMANDS = {
    "/help": "this list",
    "/tools": "the MCP tools run_code can call, by server",
    "/vars": "the variables in this thread's REPL",
    "/session": "this thread's session id and transcript file",
    "/restart": "clear the REPL (variables and functions)",
    "/new": "start a new thread (and session)",
    "/exit": "quit (or Ctrl-D; Ctrl-C stops a run, and quits at the prompt)",
}
PROMPT = "you> "
ALIASES = {"/quit": "/exit"}


def new_thread_id() -> str:
    return f"chat-{uuid.uuid4().hex[:8]}"


@contextlib.contextmanager
def interrupt_calls(handler: Callable[[], object]) -> Iterator[None]:
    """While the block runs, the first Ctrl-C (SIGINT) calls ``handler`` instead of ending the
    command; a second one ends it, as Ctrl-C does elsewhere (a cancel that hangs is no trap)."""
    loop = asyncio.get_running_loop()
    previous = signal.getsignal(signal.SIGINT)
    pressed = 0

    def on_interrupt() -> None:
        nonlocal pressed
        pressed += 1
        if pressed == 1:
            handler()
            return
        loop.remove_signal_handler(signal.SIGINT)
        signal.signal(signal.SIGINT, previous)
        signal.raise_signal(signal.SIGINT)

    loop.add_signal_handler(signal.SIGINT, on_interrupt)
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        signal.signal(signal.SIGINT, previous)  # asyncio.run's own: Ctrl-C at the prompt exits


def say(text: str) -> None:
    """A line for the person (stderr: stdout carries only replies)."""
    print(text, file=sys.stderr, flush=True)


@dataclass
class Chat:
    runtime: Runtime
    executor: CodeMode
    recorder: SessionRecorder | None = None
    activity: TerminalActivity | None = None
    """The live display, on a terminal; ``None`` prints replies as plain lines."""
    reader: LineReader = field(default_factory=LineReader)
    """Shared with the ``--mutations ask`` question, so a line typed for one is never lost."""
    thread: str = field(default_factory=new_thread_id)

    async def run(self) -> int:
        say(BANNER)
        if self.recorder is not None and self.recorder.resumed is not None:
            earlier = len(self.recorder.resumed.messages())
            say(f"(continuing session {self.recorder.resumed.session_id}: {earlier} earlier messages)")
        try:
            with line_editing("chat"):
                await self._loop()
        finally:
            await self.runtime.aclose()
            if self.activity is not None:
                self.activity.close()
        return 0

    async def _loop(self) -> None:
        while True:
            try:
                text = await self.reader.read(PROMPT)
            except (EOFError, KeyboardInterrupt):
                print(file=sys.stderr)
                return
            command = ALIASES.get(text.strip(), text.strip())
            if not command:
                continue
            if command in COMMANDS:
                if not await self._command(command):
                    return
                continue
            await self._ask(text)

    async def _ask(self, text: str) -> None:
        future = self.runtime.post(RunRequest(thread_id=self.thread, text=text))
        if self.activity is not None:
            self.activity.begin_run()
        with interrupt_calls(lambda: self.runtime.cancel(self.thread)):
            await asyncio.wait({future})
        if future.cancelled():
            if self.activity is not None:
                self.activity.end_run(None, interrupted=True)
            else:
                say(INTERRUPTED)
            return
        self._show(future.result())

    def _show(self, reply: RunReply) -> None:
        shown = self.activity is not None and self.activity.end_run(reply.reply if reply.ok else None)
        if not reply.ok:
            print(f"asyncai: {reply.error}", file=sys.stderr)
        elif not shown:
            print(reply.reply, file=sys.stdout, flush=True)

    async def _command(self, command: str) -> bool:
        """Run a slash command; False to leave the chat."""
        if command == "/exit":
            return False
        if command == "/help":
            say("\n".join(f"  {name:<9} {what}" for name, what in COMMANDS.items()))
        elif command == "/new":
            self.thread = new_thread_id()
            say("(new thread)")
        elif command == "/restart":
            scope = self.executor.scopes.get(self.thread)
            await scope.call_tool("run_code", {"code": "None", "restart": True})
            session = self.runtime.session(self.thread)
            if session is not None:  # or a resume would bring the cleared variables back
                await scope.saved.save(session.session_id)
            say("(REPL state cleared)")
        elif command == "/tools":
            from asyncai.tools import McpServers  # loaded already: the chat's servers run on it

            inner = self.executor.inner
            say(await listing(inner) if isinstance(inner, McpServers) else NO_SERVERS)
        elif command == "/vars":
            variables = self.executor.scopes.get(self.thread).variables()
            say(
                "\n".join(f"  {v.describe()}" for v in variables)
                or "(no variables in this thread's REPL yet)"
            )
        elif command == "/session":
            session = self.runtime.session(self.thread)
            path = getattr(session, "path", None)
            if session is None:
                say(
                    "(no session recorded for this thread yet)"
                    if self.recorder
                    else "(sessions are off: --no-session)"
                )
            else:
                say(f"session {session.session_id}" + (f"\n  {path}" if path is not None else ""))
        return True
