"""The sandbox's interface, apart from any implementation: ``Sandbox`` hands out ``Worker`` sessions;
a snippet that raises in a worker that is not Monty's raises ``SnippetRaised``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol

from asyncai.code_mode.limits import CodeModeLimits
from asyncai.code_mode.sandbox.config import SandboxConfig


class Worker(Protocol):
    """One REPL session on a worker: what the engine asks of it (pydantic-monty's
    ``AsyncMontySession`` is one; ``memory.MemoryWorker`` the stand-in). A snippet that raises
    raises ``pm.MontyError`` from a Monty worker, ``SnippetRaised`` from any other."""

    async def feed_run(
        self,
        code: str,
        *,
        external_lookup: dict[str, Callable[..., Any]] | None = None,
        print_callback: Callable[[str, str], None] | None = None,
        os: Callable[..., Any] | None = None,
        skip_type_check: bool = False,
    ) -> Any:
        """Run ``code`` in the REPL: the value of its last expression."""
        ...

    async def feed_start(
        self,
        code: str,
        *,
        external_lookup: dict[str, Callable[..., Any]] | None = None,
        print_callback: Callable[[str, str], None] | None = None,
        os: Callable[..., Any] | None = None,
        skip_type_check: bool = False,
    ) -> Any:
        """Start ``code``: a snapshot the caller drives (``engine.pausing``)."""
        ...

    async def dump(self) -> bytes: ...

    async def load_session(self, state: bytes) -> Any: ...

    async def load_snapshot(
        self,
        state: bytes,
        *,
        print_callback: Callable[[str, str], None] | None = None,
        external_lookup: dict[str, Callable[..., Any]] | None = None,
        os: Callable[..., Any] | None = None,
    ) -> Any: ...


class SnippetRaised(Exception):
    """A snippet raised in a worker that is not Monty's; ``display()`` is its traceback as the model
    reads it, as pydantic-monty's errors have."""

    def __init__(self, traceback_text: str) -> None:
        super().__init__(traceback_text.strip().splitlines()[-1] if traceback_text.strip() else "")
        self.traceback_text = traceback_text

    def display(self) -> str:
        return self.traceback_text


class Sandbox(Protocol):
    """Hands out REPL sessions, each on a worker of its own, and closes them all."""

    config: SandboxConfig
    limits: CodeModeLimits

    @property
    def kind(self) -> Literal["pool", "remote", "memory"]:
        """``pool``: workers are this machine's processes (their pids can be watched)."""
        ...

    async def checkout(self, type_check_stubs: str | None = None) -> Worker:
        """A new, entered session; the caller ends it with ``release``. With ``type_check_stubs``
        (and the type check on) every feed is checked against them unless it says to skip."""
        ...

    async def release(self, session: Worker, *, discard: bool = False) -> None:
        """End ``session``; ``discard``: its worker is not used again."""
        ...

    def holds(self, session: Worker) -> bool:
        """Whether ``session`` is still open: False once its pool closed with an earlier event loop
        (a program that runs ``asyncio.run`` twice with one code mode)."""
        ...

    def exit_watch(self, session: Worker) -> int | None:
        """A descriptor that turns readable when ``session``'s worker exits (its pidfd, open from
        checkout to release), or None: a remote worker, or no pidfds (not Linux)."""
        ...

    async def aclose(self) -> None: ...
