"""How the sandbox is chosen (``--code-sandbox``, ``--monty-url``): plain settings, no worker code."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from asyncai.arguments import check_choice, check_flag, check_instance, check_number
from asyncai.wording import setting

SandboxKind = Literal["auto", "pool", "remote", "in-process", "memory"]
SANDBOX_KINDS: tuple[str, ...] = ("auto", "pool", "remote", "in-process")
"""What ``--code-sandbox`` offers; a library user may also ask for ``memory``, a stand-in for tests
(``sandbox.memory.MemorySandbox``: snippets run by CPython in this process, nothing isolated)."""


class SandboxConfigError(Exception):
    """A sandbox that cannot be used as configured; the message is one line."""


@dataclass(frozen=True)
class SandboxConfig:
    kind: SandboxKind = "auto"
    monty_url: str | None = None
    max_workers: int = 8
    """Sandbox worker processes alive at once (``--code-max-workers``); idle REPLs beyond are parked."""
    checkout_timeout: float = 30.0
    type_check: bool = True
    """Check each snippet against the catalog's stubs before it runs (``--no-type-check``)."""

    def __post_init__(self) -> None:
        check_choice(self.kind, (*SANDBOX_KINDS, "memory"), "SandboxConfig", "kind")
        check_instance(
            self.monty_url, str | None, "SandboxConfig", "monty_url", "a ws:// URL (a str) or None"
        )
        check_number(self.max_workers, "SandboxConfig", "max_workers", integer=True)
        check_number(self.checkout_timeout, "SandboxConfig", "checkout_timeout")
        check_flag(self.type_check, "SandboxConfig", "type_check")

    def resolved_kind(self) -> Literal["pool", "remote", "memory"]:
        if self.kind == "in-process":
            raise SandboxConfigError(
                f"{setting('kind', 'in-process')} is not available in Python: pydantic-monty always "
                "runs code in worker processes; use pool (the default) or remote"
            )
        if self.kind == "remote":
            if not self.monty_url:
                raise SandboxConfigError(
                    f"{setting('kind', 'remote')} needs {setting('monty_url', 'ws://HOST:PORT')}"
                )
            return "remote"
        if self.kind == "memory":
            return "memory"
        if self.kind == "auto" and self.monty_url:
            return "remote"
        return "pool"
