"""The run as it happens, on a terminal (rich): a status line while the model answers, each
``run_code`` snippet highlighted, its nested MCP calls as they start and end, one summary line per
snippet; and the reply, streamed and rendered as Markdown.

The activity goes to stderr, the reply to stdout. Only one live region is on screen at a time: the
status line (stderr) stops while reply text streams (stdout), and the other way round. Streamed
text shows as a plain preview of its last lines, refreshed a few times a second; the reply is
rendered as Markdown once, when it is complete (rendering it at every chunk costs the square of
its length, and a reply taller than the screen would be copied into the scrollback each time).

A display that fails (a terminal gone, a rich error) turns itself off: it never fails the run.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import reprlib
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markdown import Markdown
from rich.spinner import Spinner
from rich.syntax import Syntax
from rich.text import Text

from asyncai.activity import Activity
from asyncai.cli.terminal import INTERRUPTED
from asyncai.humanize import count, data_size, one_line
from asyncai.log import log_event

if TYPE_CHECKING:
    from asyncai.activity import NestedCall
    from asyncai.tools.types import ToolCallOutput

RUN_CODE = "run_code"
SNIPPET_LINES = 12
"""A longer snippet shows its first lines and how many more there are."""
SHOWN_CALLS = 12
"""Finished nested calls listed one by one per snippet; the rest are only counted."""
ARGUMENT_CHARS = 60
_short = reprlib.Repr()
_short.maxstring = _short.maxother = ARGUMENT_CHARS
_short.maxlist = _short.maxdict = 4
F = TypeVar("F", bound=Callable[..., Any])


def call_text(call: NestedCall) -> str:
    """``http_get(url='https://…')``: the function the snippet called, short arguments."""
    arguments = ", ".join(f"{name}={_short.repr(value)}" for name, value in call.arguments.items())
    return f"{call.function or call.tool}({one_line(arguments, ARGUMENT_CHARS)})"


def _guarded(method: F) -> F:
    """A display method that fails turns the display off instead of failing the run."""

    @functools.wraps(method)
    def guarded(self: TerminalActivity, *args: Any, **kwargs: Any) -> Any:
        if self.failed:
            return None
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            self.failed = True
            log_event("terminal.display_failed", logging.WARNING, error=f"{type(exc).__name__}: {exc}")
            with contextlib.suppress(Exception):
                self._stop_status()
                self._stop_reply()
            return None

    return guarded  # type: ignore[return-value]


def finished_line(call: NestedCall, seconds: float) -> Text:
    outcome = call.outcome()
    mark, style = {"finished": ("✓", "green"), "refused": ("⊘", "yellow")}.get(outcome, ("✗", "red"))
    line = Text(f"  {mark} ", style=style)
    line.append(call_text(call))
    detail = f"  {data_size(call.bytes)}  {seconds:.2f} s" if call.answered else ""
    line.append(detail, style="dim")
    if outcome not in ("finished",):
        line.append(f"  {outcome}", style=style)
    return line


def summary_line(output: ToolCallOutput, seconds: float) -> Text:
    """``run_code: 3 calls · 12.1 KB in · 420 B to the model · 1.30 s``."""
    calls = (output.audit or {}).get("nested_calls", [])
    fetched = sum(int(call.get("bytes", 0)) for call in calls)
    number = f"{count(len(calls))} call{'' if len(calls) == 1 else 's'}"
    to_model = data_size(len(output.content.encode()))
    line = Text(f"{RUN_CODE}: {number} · {data_size(fetched)} in · {to_model} to the model · {seconds:.2f} s")
    line.stylize("dim")
    if output.is_error:
        line.append(" · error", style="red")
    return line


class _Elapsed:
    """A spinner and a label with the seconds since ``started``, recomputed at each refresh."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.started = time.monotonic()
        self.spinner = Spinner("dots", style="cyan")

    def __rich__(self) -> RenderableType:
        self.spinner.text = Text(f"{self.label}  {time.monotonic() - self.started:.1f} s", style="dim")
        return self.spinner


class TerminalActivity(Activity):
    """See the module docstring. ``begin_run``/``end_run`` frame each run of the chat or ``-p``."""

    def __init__(self, err: Console, out: Console | None) -> None:
        self.err = err
        self.out = out
        """stdout when it is a terminal too: replies streamed and rendered there; else ``None``."""
        self.failed = False
        self._status: Live | None = None
        self._reply_live: Live | None = None
        self._reply = ""
        self._running: list[NestedCall] = []
        self._finished = 0
        self._snippet: _Elapsed | None = None
        self._early = False
        """Nested calls began before the snippet had fully arrived (eager execution)."""

    @property
    def markdown(self) -> bool:
        return self.out is not None

    # The run, as the chat sees it

    @_guarded
    def begin_run(self) -> None:
        self._reply = ""

    @_guarded
    def close(self) -> None:
        """Take the live regions off the screen (the run or the command is ending, however)."""
        self._stop_status()
        self._stop_reply()
        self._snippet, self._running, self._finished, self._early = None, [], 0, False

    def end_run(self, reply: str | None, *, interrupted: bool = False) -> bool:
        """Stop the live regions and show ``reply``, rendered; whether it was shown (False: the
        caller prints it, plain)."""
        self.close()
        if interrupted:
            self._print(self.err, Text(INTERRUPTED, style="yellow"))
            return False
        if reply is None or self.out is None:
            return False
        return bool(self._print(self.out, Markdown(reply)))

    @_guarded
    def _print(self, console: Console, renderable: RenderableType) -> bool:
        console.print(renderable)
        return True

    # Activity events

    @_guarded
    def model_request(self, round_number: int) -> None:
        self._reply = ""  # a new answer (a retried request starts over too)
        self._stop_reply()
        label = "thinking" if round_number == 1 else f"thinking (round {round_number})"
        self._show_status(_Elapsed(label))

    @_guarded
    def reply_text(self, text: str) -> None:
        if self.out is None:
            return
        self._stop_status()
        self._reply += text
        if self._reply_live is None:
            self._reply_live = Live(
                console=self.out, transient=True, refresh_per_second=8, vertical_overflow="crop"
            )
            self._reply_live.start()
        self._reply_live.update(self._preview(), refresh=False)

    @_guarded
    def reply_was_calls(self, prose: str | None) -> None:
        self._reply = prose or ""  # the JSON of the calls is shown as their snippets, not as words

    @_guarded
    def tool_started(self, name: str, arguments: dict[str, Any]) -> None:
        self._stop_status()
        self._stop_reply()
        if self._reply.strip() and self.out is not None:  # text before a tool call: kept, not the reply
            self.out.print(Markdown(self._reply))
        self._reply = ""
        code = arguments.get("code") if name == RUN_CODE else None
        if isinstance(code, str):
            self.err.print(self._snippet_view(code))
        else:
            self.err.print(Text(f"{name}(…)", style="bold"))
        if not self._early:  # calls that ran while the snippet streamed stay counted
            self._running, self._finished = [], 0
        self._early = False
        self._snippet = _Elapsed(f"running {name}")
        self._show_status(self._running_view())

    @_guarded
    def call_started(self, call: NestedCall) -> None:
        if self._snippet is None:  # a statement runs while the model is still writing the snippet
            self._stop_status()
            self._running, self._finished, self._early = [], 0, True
            self._snippet = _Elapsed("running early, while the snippet streams")
            self._show_status(self._running_view())
        self._running.append(call)
        self._refresh()

    @_guarded
    def call_finished(self, call: NestedCall, seconds: float) -> None:
        if call in self._running:
            self._running.remove(call)
        self._finished += 1
        if self._finished <= SHOWN_CALLS:
            self.err.print(finished_line(call, seconds))
        self._refresh()

    @_guarded
    def tool_finished(self, name: str, output: ToolCallOutput, seconds: float) -> None:
        self._stop_status()
        if self._finished > SHOWN_CALLS:
            self.err.print(Text(f"  … and {count(self._finished - SHOWN_CALLS)} more calls", style="dim"))
        if name == RUN_CODE:
            self.err.print(summary_line(output, seconds))
        self._snippet = None

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The live region off the screen while the block asks the person something."""
        self._stop_status()
        try:
            yield
        finally:
            if self._snippet is not None and not self.failed:
                self._show_status(self._running_view())

    # Rendering

    def _snippet_view(self, code: str) -> RenderableType:
        lines = code.rstrip("\n").split("\n")
        shown = "\n".join(lines[:SNIPPET_LINES])
        syntax = Syntax(shown, "python", theme="ansi_dark", background_color="default", word_wrap=True)
        header = Text(f"{RUN_CODE}", style="bold cyan")
        if len(lines) <= SNIPPET_LINES:
            return Group(header, syntax)
        hidden = len(lines) - SNIPPET_LINES
        return Group(header, syntax, Text(f"  … {hidden} more line{'' if hidden == 1 else 's'}", style="dim"))

    def _running_view(self) -> RenderableType:
        rows: list[RenderableType] = [
            Text(f"  → {call_text(call)}", style="cyan") for call in self._running[:5]
        ]
        if len(self._running) > 5:
            rows.append(Text(f"  → … {len(self._running) - 5} more in flight", style="cyan"))
        if self._snippet is not None:
            rows.append(self._snippet)
        return Group(*rows)

    def _preview(self) -> Text:
        """The last lines of the text so far, as many as fit above the prompt."""
        assert self.out is not None
        lines = self._reply.split("\n")[-max(self.out.size.height - 2, 1) :]
        return Text("\n".join(lines))

    def _refresh(self) -> None:
        if self._status is not None and self._snippet is not None:
            self._status.update(self._running_view())

    def _show_status(self, renderable: RenderableType) -> None:
        if self._status is None:
            self._status = Live(renderable, console=self.err, transient=True, refresh_per_second=8)
            self._status.start()
        else:
            self._status.update(renderable)

    def _stop_status(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def _stop_reply(self) -> None:
        if self._reply_live is not None:
            self._reply_live.stop()
            self._reply_live = None
