"""Where snippets run, behind one small interface: ``Sandbox`` hands out REPL sessions on workers.

Two implementations: ``PoolSandbox`` runs pydantic-monty worker processes on this machine,
``RemoteSandbox`` uses workers behind a WebSocket server (the scale-out path). Both bound the
workers alive at once (``max_workers``, the same bound the ``WorkerRoom`` keeps), and a checkout
that finds no free worker fails after ``checkout_timeout`` instead of waiting forever
(pydantic-monty's default). A pool is closed even when its owner never closes it (``guard.py``).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import os
import shlex
import shutil
import signal
import tempfile
from typing import Literal

import pydantic_monty as pm

from asyncai.code_mode.engine.type_check import SCRIPT_NAME
from asyncai.code_mode.limits import CodeModeLimits
from asyncai.code_mode.sandbox.config import SandboxConfig
from asyncai.code_mode.sandbox.guard import Pool, PoolGuard
from asyncai.code_mode.sandbox.interface import Sandbox, Worker


class _MontySandbox:
    """What both sandboxes share: a pool made on first use, checkouts with the limits, the guard."""

    kind: Literal["pool", "remote"]

    def __init__(self, config: SandboxConfig, limits: CodeModeLimits) -> None:
        self.config = config
        self.limits = limits
        self._pool: Pool | None = None
        self._guard: PoolGuard | None = None
        self._lock = asyncio.Lock()

    def _new_pool(self) -> Pool:
        raise NotImplementedError

    async def _ensure_pool(self) -> Pool:
        async with self._lock:
            guard = self._guard
            if guard is not None and guard.closed:  # its loop ended (an earlier asyncio.run)
                self._pool, self._guard = None, None
            elif guard is not None:
                guard.follow_loop()
            if self._pool is None:
                pool = self._new_pool()
                await pool.__aenter__()
                self._pool = pool
                self._guard = PoolGuard(pool, self, local=self.kind == "pool")
            return self._pool

    async def checkout(self, type_check_stubs: str | None = None) -> pm.AsyncMontySession:
        pool = await self._ensure_pool()
        guard = self._guard
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
        if guard is not None:
            guard.checked_out(session)
        return session

    async def release(self, session: Worker, *, discard: bool = False) -> None:
        assert isinstance(session, pm.AsyncMontySession)  # checked out here
        await release(session, discard=discard)

    def holds(self, session: Worker) -> bool:
        return (
            isinstance(session, pm.AsyncMontySession)
            and self._guard is not None
            and self._guard.holds(session)
        )

    def exit_watch(self, session: Worker) -> int | None:
        if self._guard is None or not isinstance(session, pm.AsyncMontySession):
            return None
        return self._guard.exit_watch(session)

    async def aclose(self) -> None:
        async with self._lock:
            guard, self._guard, self._pool = self._guard, None, None
        if guard is not None:
            await guard.close()


class PoolSandbox(_MontySandbox):
    """Worker processes on this machine (pydantic-monty's ``AsyncMonty``)."""

    kind: Literal["pool", "remote"] = "pool"

    def _new_pool(self) -> Pool:
        return pm.AsyncMonty(
            min_processes=1,
            max_processes=self.config.max_workers,
            checkout_timeout=self.config.checkout_timeout,
            request_timeout=self.limits.hard_timeout,
            binary_path=_worker_binary(),
        )


class RemoteSandbox(_MontySandbox):
    """Workers behind a WebSocket server (pydantic-monty's ``AsyncMontyWebsocket``)."""

    kind: Literal["pool", "remote"] = "remote"

    def _new_pool(self) -> Pool:
        assert self.config.monty_url is not None  # resolved_kind() said remote
        return pm.AsyncMontyWebsocket(
            self.config.monty_url,
            max_processes=self.config.max_workers,
            checkout_timeout=self.config.checkout_timeout,
            request_timeout=self.limits.hard_timeout,
        )


@functools.cache
def _worker_binary() -> str | None:
    """The monty binary behind a wrapper that ignores SIGINT. Ctrl-C at a terminal signals the
    whole foreground process group, workers included; a worker that died of it would take its
    REPL along, where the host only meant to interrupt the snippet. An ignored signal stays
    ignored across ``exec``. ``None`` (pydantic-monty's own lookup) where no wrapper can be made."""
    from pydantic_monty._binary import find_monty_binary

    try:
        real = find_monty_binary()
        folder = tempfile.mkdtemp(prefix="asyncai-monty-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        wrapper = os.path.join(folder, "monty")
        with open(wrapper, "w") as handle:
            handle.write(f"#!/bin/sh\ntrap '' INT\nexec {shlex.quote(real)} \"$@\"\n")
        os.chmod(wrapper, 0o700)
    except (OSError, FileNotFoundError):
        return None
    return wrapper


def open_sandbox(config: SandboxConfig, limits: CodeModeLimits) -> Sandbox:
    """The sandbox ``config`` asks for (``SandboxConfigError`` when it cannot be had)."""
    kind = config.resolved_kind()
    if kind == "memory":
        from asyncai.code_mode.sandbox.memory import MemorySandbox

        return MemorySandbox(config, limits)
    return (PoolSandbox if kind == "pool" else RemoteSandbox)(config, limits)


async def release(session: pm.AsyncMontySession, *, discard: bool = False) -> None:
    """End a session; ``discard`` kills its worker first so the next checkout gets a fresh one. A
    session its pool's guard already ended (the pool closed with an earlier event loop) is left
    alone: ending it again from another loop can abort the interpreter at exit."""
    if not any(guard.holds(session) for guard in PoolGuard.live):
        return
    pid = session.worker_pid  # read once: the pool clears it when the worker goes away
    if discard and pid is not None and _is_monty_worker(pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    try:
        with contextlib.suppress(Exception):  # a dead or crashed session has nothing left to release
            await session.__aexit__(None, None, None)
    finally:
        for guard in PoolGuard.live:  # one per open pool: a few at most
            guard.released(session)


def _is_monty_worker(pid: int) -> bool:
    """Whether ``pid`` is still a monty worker (a crashed worker's pid may belong to another process)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return b"monty" in handle.read()
    except OSError:
        return False
