"""Where Claude Code keeps session transcripts, computed the way Claude Code computes it.

``${CLAUDE_CONFIG_DIR:-~/.claude}/projects/<slug>/<sessionId>.jsonl``, where ``<slug>`` is the
absolute working directory with every character that is not an ASCII letter or digit replaced by
``-``; a slug longer than 200 characters is cut to 200 and followed by ``-`` and a base-36 hash of
the whole path (the official Agent SDK's ``_sanitize_path``, which mirrors the CLI).
"""

from __future__ import annotations

import glob
import re
import unicodedata
from pathlib import Path

from asyncai.files import claude_config_dir

MAX_SLUG_LENGTH = 200
_NOT_ALPHANUMERIC = re.compile(r"[^a-zA-Z0-9]")
_SESSION_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)
_DIGITS36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def is_session_id(text: str) -> bool:
    """Whether ``text`` is a UUID, the only session id form Claude Code accepts."""
    return bool(_SESSION_ID.match(text))


def _base36(number: int) -> str:
    digits = ""
    while True:
        number, remainder = divmod(number, 36)
        digits = _DIGITS36[remainder] + digits
        if number == 0:
            return digits


def simple_hash(text: str) -> str:
    """JavaScript's ``h = (h << 5) - h + charCode | 0``, as ``Math.abs(h).toString(36)``.

    JavaScript strings are UTF-16, so a character outside the BMP counts as two code units.
    """
    value = 0
    units = text.encode("utf-16-le")
    for index in range(0, len(units), 2):
        unit = units[index] | (units[index + 1] << 8)
        value = ((value << 5) - value + unit) & 0xFFFFFFFF
    if value >= 0x80000000:
        value -= 0x100000000
    return _base36(abs(value))


def _sanitized(path: str) -> str:
    """JavaScript's ``path.replace(/[^a-zA-Z0-9]/g, "-")``: per UTF-16 code unit, so a character
    outside the BMP becomes two dashes."""
    return _NOT_ALPHANUMERIC.sub(_dashes, path)


def _dashes(match: re.Match[str]) -> str:
    return "--" if ord(match.group()) > 0xFFFF else "-"


def project_slug(directory: str) -> str:
    """The projects sub-directory name Claude Code uses for the working directory ``directory``."""
    path = unicodedata.normalize("NFC", directory)
    slug = _sanitized(path)
    if len(slug) <= MAX_SLUG_LENGTH:
        return slug
    return f"{slug[:MAX_SLUG_LENGTH]}-{simple_hash(path)}"


def project_dirs(cwd: str, config_dir: Path | None = None) -> list[Path]:
    """The directories that may hold the sessions of ``cwd``: its own, and for a slug cut at 200
    characters every directory with the same 200 characters (Claude Code changed the hash suffix
    of long paths in 2.1.224; the Agent SDK matches by prefix too)."""
    own = project_dir(cwd, config_dir)
    slug = own.name
    if len(slug) <= MAX_SLUG_LENGTH:
        return [own]
    prefix = slug[:MAX_SLUG_LENGTH] + "-"
    try:
        others = sorted(p for p in own.parent.glob(f"{glob.escape(prefix)}*") if p != own and p.is_dir())
    except OSError:
        others = []
    return [own, *others]


def project_dir(cwd: str, config_dir: Path | None = None) -> Path:
    """The directory holding the sessions of the working directory ``cwd``."""
    return (config_dir or claude_config_dir()) / "projects" / project_slug(cwd)


def session_path(cwd: str, session_id: str, config_dir: Path | None = None) -> Path:
    return project_dir(cwd, config_dir) / f"{session_id}.jsonl"


def find_session(session_id: str, cwd: str, config_dir: Path | None = None) -> Path | None:
    """The transcript of ``session_id`` (as spelled, or in lower case): this directory's first,
    else any project's (Claude Code resumes a session found under another directory too), else
    ``None``. ``OSError`` when a directory cannot be searched."""
    root = config_dir or claude_config_dir()
    names = dict.fromkeys([f"{session_id}.jsonl", f"{session_id.lower()}.jsonl"])
    for directory in project_dirs(cwd, root):
        for name in names:
            if (directory / name).is_file():
                return directory / name
    for name in names:
        for candidate in sorted((root / "projects").glob(f"*/{name}")):
            if candidate.is_file():
                return candidate
    return None
