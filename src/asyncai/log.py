"""NDJSON logging: one JSON object a line on stderr with at least ``ts``, ``level`` and ``event``.

Every component logs through :func:`log_event`. As a library asyncai writes nothing by itself: the
``asyncai`` logger has only a ``NullHandler`` until the application configures logging (its records
then read ``event {"field": ...}`` in any format). The CLI calls :func:`configure_logging`, which
decides what reaches stderr (warnings and errors always, everything with ``--verbose``).
"""

from __future__ import annotations

import json
import logging
import math
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

from asyncai.humanize import count

LOGGER_NAME = "asyncai"
_FIELDS_ATTR = "asyncai_fields"
_EVENT_ATTR = "asyncai_event"
TEXT_PREVIEW_CHARS = 2_000
AUDIT_PREVIEW_CHARS = 200
"""The always-on audit lines (mutating calls) show arguments up to this size."""

logger = logging.getLogger(LOGGER_NAME)
# The library convention: without it Python's last-resort handler prints warnings bare on stderr.
logger.addHandler(logging.NullHandler())


class _Fields:
    """An event's fields as the text after its name, made only when a handler formats the record."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = fields

    def __str__(self) -> str:
        if not self.fields:
            return ""
        return " " + json.dumps(json_safe(self.fields), ensure_ascii=False)


def log_event(event: str, level: int = logging.INFO, **fields: Any) -> None:
    """Log one structured event; ``fields`` become keys of the NDJSON line (and follow the event's
    name in the message other formatters show)."""
    if logger.isEnabledFor(level):
        extra = {_FIELDS_ATTR: fields, _EVENT_ATTR: event}
        logger.log(level, "%s%s", event, _Fields(fields), extra=extra)


def dumps_compact(value: Any) -> str:
    """Plain compact JSON (no spaces, non-ASCII kept): the bytes sent to model servers, kept in the
    history and counted in the log. Unlike ``code_mode.values.compact_json`` it converts nothing."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def preview(value: str, limit: int = TEXT_PREVIEW_CHARS) -> str:
    """``value`` cut to ``limit`` characters, saying how much was cut."""
    if len(value) <= limit:
        return value
    return f"{value[:limit]}... [{count(len(value) - limit)} more chars]"


def decoded_or_preview(text: str, limit: int = TEXT_PREVIEW_CHARS) -> Any:
    """The JSON value of a short ``text`` when it is JSON, otherwise a truncated preview (for log lines)."""
    if len(text) > limit:
        return preview(text, limit)
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested too deeply to decode
        return preview(text, limit)


def json_preview(value: Any, limit: int) -> Any:
    """``value`` itself when its compact JSON fits ``limit`` characters, else a preview of that JSON."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return value if len(text) <= limit else preview(text, limit)


JSON_SAFE_DEPTH = 64
_HUGE_INT_BITS = 3_000  # about 900 digits: far below the 4,300 digits CPython will parse back


def json_safe(value: Any, depth: int = 0) -> Any:
    """``value`` as plain JSON that any parser reads back: unknown types become ``str``, keys
    strings, NaN and infinities strings, huge ints and over-deep nesting a short description."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        if value.bit_length() <= _HUGE_INT_BITS:
            return value
        return f"<int of about {int(value.bit_length() * 0.30103):,} digits>"
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if depth >= JSON_SAFE_DEPTH:
        return "<nested too deeply>"
    if isinstance(value, dict):
        return {str(json_safe(k, depth + 1)): json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_safe(v, depth + 1) for v in value]
    try:
        return str(value)
    except Exception:
        return f"<{type(value).__name__}>"


class NdjsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": "warn" if record.levelno == logging.WARNING else record.levelname.lower(),
            "event": getattr(record, _EVENT_ATTR, None) or record.getMessage(),
        }
        line.update(getattr(record, _FIELDS_ATTR, {}))
        if record.exc_info and record.exc_info[1] is not None:
            line["error"] = f"{type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
        try:
            return json.dumps(line, default=str, ensure_ascii=False, allow_nan=False)
        except ValueError:  # a NaN or an infinity (e.g. a tool result "1e999" decoded for the log)
            return json.dumps(json_safe(line), ensure_ascii=False)


class _CurrentStderr:
    """Whatever ``sys.stderr`` is when a line is written: a live display on the terminal redirects
    it, so log lines go above the display instead of through it."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure_logging(verbose: bool = False, stream: TextIO | None = None) -> None:
    """Send asyncai's log to ``stream`` (stderr) as NDJSON; INFO and up when verbose, else WARNING."""
    handler = logging.StreamHandler(stream or _CurrentStderr())
    handler.setFormatter(NdjsonFormatter())
    logger.handlers[:] = [handler]
    logger.setLevel(logging.DEBUG if verbose else logging.WARNING)
    logger.propagate = False
    # Libraries (mcp, httpx2) log through the root logger; keep them quiet unless verbose.
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO if verbose else logging.ERROR)
    # The SDK's OAuth client logs whole exceptions, whose text can quote a token endpoint's answer:
    # asyncai reports sign-in failures itself, in one line that holds no secret.
    logging.getLogger("mcp.client.auth").setLevel(logging.CRITICAL)
