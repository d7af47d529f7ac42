"""The sessions of one working directory, newest first, for ``asyncai sessions`` and ``-c``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from asyncai.humanize import one_line
from asyncai.transcripts.paths import is_session_id
from asyncai.transcripts.reader import Record, parse_lines

PROMPT_PREVIEW_CHARS = 60


@dataclass(frozen=True)
class SessionInfo:
    session_id: str
    path: Path
    last_activity: datetime
    """The newest record's timestamp (the file's modification time when no record has one)."""
    first_prompt: str
    """The first prompt on one line, cut to ``PROMPT_PREVIEW_CHARS``."""
    turns: int
    """Prompts the user sent (tool results are not turns)."""


def _prompt_text(record: Record) -> str | None:
    """The text of a user prompt record; ``None`` for tool results, meta records and the rest."""
    if record.get("type") != "user" or record.get("isMeta"):
        return None
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        blocks = [block for block in content if isinstance(block, dict)]
        if any(block.get("type") == "tool_result" for block in blocks):
            return None
        texts = [b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)]
        return "\n".join(texts) if texts else None
    return None


def _timestamp(value: Any) -> datetime | None:
    """A record's ``timestamp`` in UTC; ``None`` when it is not one (or before 1970)."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        moment = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    return moment if moment.year >= 1970 else None


def session_info(path: Path) -> SessionInfo | None:
    """What ``asyncai sessions`` shows of one file; ``None`` when it cannot be read."""
    try:
        data = path.read_bytes()
        modified = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except OSError:
        return None
    entries, _ = parse_lines(data)
    prompts = [text for text in map(_prompt_text, entries) if text is not None]
    stamps = [moment for moment in (_timestamp(e.get("timestamp")) for e in entries) if moment is not None]
    return SessionInfo(
        session_id=path.stem,
        path=path,
        # No record is newer than the file's last write: a clock far in the future does not win -c.
        last_activity=min(max(stamps, default=modified), modified),
        first_prompt=one_line(prompts[0], PROMPT_PREVIEW_CHARS) if prompts else "",
        turns=len(prompts),
    )


def session_files(directory: Path) -> list[Path]:
    """The ``<uuid>.jsonl`` files of a project directory (none when it does not exist)."""
    with contextlib.suppress(OSError):
        return [p for p in directory.glob("*.jsonl") if is_session_id(p.stem) and p.is_file()]
    return []


def list_sessions(directories: Iterable[Path]) -> list[SessionInfo]:
    """Every session of the project directories, the most recently active first."""
    files = [path for directory in directories for path in session_files(directory)]
    infos = [info for info in map(session_info, files) if info is not None]
    return sorted(infos, key=lambda info: info.last_activity, reverse=True)


def newest_session(directories: Iterable[Path]) -> Path | None:
    """What ``-c`` continues: the first row of ``asyncai sessions``."""
    sessions = list_sessions(directories)
    return sessions[0].path if sessions else None
