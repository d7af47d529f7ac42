"""How a message names a setting: in library terms (``mutations='deny'``), or as the command line's
flag (``--mutations deny``) once the CLI has said its flags. Library errors, and the texts a model
reads, then speak the terms of whoever configured asyncai."""

from __future__ import annotations

from collections.abc import Mapping

_LIBRARY = {"command_line": "server command", "url": "server URL"}
"""Settings whose library name reads badly in a sentence."""
_flags: dict[str, str] = {}


def use_flags(flags: Mapping[str, str]) -> None:
    """The CLI's wording of each setting (``{"mutations": "--mutations"}``)."""
    _flags.update(flags)


def setting(name: str, value: str | None = None) -> str:
    """``mutations='deny'`` or ``--mutations deny``; without ``value``, the setting alone."""
    flag = _flags.get(name)
    if flag is not None:
        return flag if value is None else f"{flag} {value}"
    phrase = _LIBRARY.get(name, name)
    return phrase if value is None else f"{phrase}={value!r}"
