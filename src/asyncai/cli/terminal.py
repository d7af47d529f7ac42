"""The terminal as the command found it.

readline (``input()`` on a daemon thread, see ``blocking``) switches the terminal to its own mode
(no echo, no line buffering) while it waits for a line; when Ctrl-C or a signal ends the command
during that wait, nothing switches it back, and the shell is left without echo. ``preserved``
saves the attributes at start and restores them on every way out.
"""

from __future__ import annotations

import contextlib
import os
import sys
import termios
from collections.abc import Iterator
from typing import Any, TextIO


def _attributes(stream: TextIO) -> tuple[int, list[Any]] | None:
    try:
        fd = stream.fileno()
        return (fd, termios.tcgetattr(fd)) if os.isatty(fd) else None
    except (OSError, ValueError, termios.error):  # closed, replaced (tests) or not a terminal
        return None


@contextlib.contextmanager
def preserved(stream: TextIO) -> Iterator[None]:
    """Restore ``stream``'s terminal attributes (when it is a terminal) however the block ends."""
    saved = _attributes(stream)
    try:
        yield
    finally:
        if saved is not None:
            with contextlib.suppress(OSError, termios.error):  # the terminal may be gone (SIGHUP)
                termios.tcsetattr(saved[0], termios.TCSADRAIN, saved[1])


def end_line(stream: TextIO = sys.stderr) -> None:
    """After an interrupt, move a terminal's cursor off the prompt line (where ``^C`` was echoed)."""
    with contextlib.suppress(OSError, ValueError):
        if stream.isatty():
            print(file=stream, flush=True)


INTERRUPTED = "(interrupted: the run was cancelled; the conversation goes on)"
"""What the chat says after Ctrl-C stopped a run (with or without the live display)."""
