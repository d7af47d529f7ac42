"""The environment a stdio MCP server starts with: the caller's, minus asyncai's own secrets.

A server inherits what it needs to run (``PATH``, ``HOME``, proxies, its own variables), but never
the model API key or another asyncai credential unless the server's config ``env`` names it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

SECRET_NAMES = frozenset({"OPENAI_API_KEY"})
"""Variables that always hold one of asyncai's secrets."""

SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
"""An ``ASYNCAI_*`` variable whose name contains one of these is treated as a secret."""

MIN_SECRET_VALUE_CHARS = 8
"""Values shorter than this (``ollama``, ``none``) are placeholders, not secrets: a variable that
happens to hold the same short text (``USER=ollama``) is kept."""


def is_secret_name(name: str) -> bool:
    """``OPENAI_API_KEY``, or an ``ASYNCAI_*`` name with KEY, TOKEN, SECRET or PASSWORD in it."""
    upper = name.upper()
    if upper in SECRET_NAMES:
        return True
    return upper.startswith("ASYNCAI_") and any(word in upper for word in SECRET_WORDS)


def server_environment(
    environ: Mapping[str, str],
    explicit: Mapping[str, str],
    secrets: Iterable[str | None] = (),
) -> dict[str, str]:
    """The environment of one stdio server.

    ``environ`` is the caller's environment, ``explicit`` the server's config ``env`` (it always
    wins, so a config that names a secret passes it on), ``secrets`` asyncai's secret values (the
    model API key from ``--api-key``, the environment or the settings file): every inherited
    variable holding one of them is dropped, whatever its name.
    """
    secret_values = {value for value in secrets if value and len(value) >= MIN_SECRET_VALUE_CHARS}
    inherited = {
        name: value
        for name, value in environ.items()
        if not is_secret_name(name) and value not in secret_values
    }
    return {**inherited, **explicit}
