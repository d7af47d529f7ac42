"""Line editing and a persistent input history for the interactive modes."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

HISTORY_LINES = 1000


def history_path(name: str) -> Path:
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "asyncai" / f"{name}_history"


@contextlib.contextmanager
def line_editing(name: str) -> Iterator[None]:
    """readline editing for ``input()``, with history kept in ``history_path(name)`` across sessions.

    Without readline, or with an unwritable home, input works as before, just without history.
    """
    try:
        import readline
    except ImportError:
        yield
        return
    path = history_path(name)
    with contextlib.suppress(OSError):
        readline.read_history_file(path)
    readline.set_history_length(HISTORY_LINES)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            readline.write_history_file(path)
