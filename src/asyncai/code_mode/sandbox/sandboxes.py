"""Where snippets run: pydantic-monty workers, local (``pool``) or over WebSocket (``remote``).

Every REPL scope is one checked-out worker session. The pool is sized for the thread LRU plus
per-run scopes, and a checkout that finds no free worker fails after ``checkout_timeout`` instead
of waiting forever (pydantic-monty's default).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

import pydantic_monty as pm

from asyncai.code_mode.engine.type_check import SCRIPT_NAME
from asyncai.code_mode.limits import CodeModeLimits
from asyncai.code_mode.sandbox.config import SANDBOX_KINDS, SandboxConfig, SandboxConfigError, SandboxKind

__all__ = ["SANDBOX_KINDS", "Sandbox", "SandboxConfig", "SandboxConfigError", "SandboxKind", "release"]

# pydantic-monty 1.4 can abort at interpreter exit while its runtime threads still post to the
# loop; keeping the loop alive briefly after closing the pool avoids it (monty guide, bug 1).
_EXIT_GRACE_SECONDS = 0.05


Pool = pm.AsyncMonty | pm.AsyncMontyWebsocket


class Sandbox:
    """Owns the worker pool; ``checkout`` hands out one REPL session."""

    def __init__(self, config: SandboxConfig, limits: CodeModeLimits) -> None:
        self.config = config
        self.limits = limits
        self.kind = config.resolved_kind()
        self._pool: Pool | None = None
        self._lock = asyncio.Lock()

    async def _ensure_pool(self) -> Pool:
        async with self._lock:
            if self._pool is None:
                pool: Pool
                if self.kind == "remote":
                    assert self.config.monty_url is not None
                    pool = pm.AsyncMontyWebsocket(
                        self.config.monty_url,
                        max_processes=self.config.max_workers,
                        checkout_timeout=self.config.checkout_timeout,
                        request_timeout=self.limits.hard_timeout,
                    )
                else:
                    pool = pm.AsyncMonty(
                        min_processes=1,
                        max_processes=self.config.max_workers,
                        checkout_timeout=self.config.checkout_timeout,
                        request_timeout=self.limits.hard_timeout,
                    )
                await pool.__aenter__()
                self._pool = pool
            return self._pool

    async def checkout(self, type_check_stubs: str | None = None) -> pm.AsyncMontySession:
        """A new, entered session; the caller ends it with ``release``. With ``type_check_stubs``
        (and the type check on) every feed is checked against them unless it says to skip."""
        pool = await self._ensure_pool()
        checked = self.config.type_check and type_check_stubs is not None
        session = pool.checkout(
            script_name=SCRIPT_NAME,
            type_check=checked,
            type_check_stubs=type_check_stubs if checked else None,
            type_check_format="concise",
            limits={
                "max_feed_duration_secs": self.limits.code_timeout,
                "max_memory": self.limits.max_memory,
                "max_recursion_depth": self.limits.max_recursion,
                # Counted per checkout by the pool; the per-snippet budget is enforced by the host.
                "max_suspensions": 1_000_000_000,
            },
        )
        await session.__aenter__()
        return session

    async def aclose(self) -> None:
        async with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            await pool.__aexit__(None, None, None)
            await asyncio.sleep(_EXIT_GRACE_SECONDS)


async def release(session: pm.AsyncMontySession, *, discard: bool = False) -> None:
    """End a session; ``discard`` kills its worker first so the next checkout gets a fresh one."""
    pid = session.worker_pid  # read once: the pool clears it when the worker goes away
    if discard and pid is not None and _is_monty_worker(pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    # A dead or crashed session has nothing left to release.
    with contextlib.suppress(Exception):
        await session.__aexit__(None, None, None)


def _is_monty_worker(pid: int) -> bool:
    """Whether ``pid`` is still a monty worker (a crashed worker's pid may belong to another process)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return b"monty" in handle.read()
    except OSError:
        return False
