"""Where asyncai keeps what it remembers between runs, and how it writes it: under the user's state
directory, atomically, readable by the user only (sign-in tokens and learned shapes live there)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path


def state_home(environ: Mapping[str, str] = os.environ) -> Path:
    """``$XDG_STATE_HOME/asyncai`` (else ``~/.local/state/asyncai``)."""
    if environ.get("XDG_STATE_HOME"):
        return Path(environ["XDG_STATE_HOME"]) / "asyncai"
    return Path(environ.get("HOME", "~")).expanduser() / ".local" / "state" / "asyncai"


def claude_config_dir() -> Path:
    """Claude Code's directory (sessions, skills): ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(configured).expanduser() if configured else Path("~/.claude").expanduser()


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step (a reader never sees half a file, nor a crash an
    empty one), mode 0600 in a 0700 directory; ``OSError`` when it cannot be written."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:  # mkstemp creates it 0600
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())  # on disk before the rename: a crash leaves the old file or the new
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
