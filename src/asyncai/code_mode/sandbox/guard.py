"""``PoolGuard``: a worker pool is closed even when its owner never closes it.

pydantic-monty 1.4 aborts the interpreter (SIGABRT) when a pool is still open at exit (its runtime
threads post to the event loop while the interpreter finalizes), and its ``__aexit__`` leaves the
workers of sessions still checked out running. A library user who forgets ``aclose``, or whose
program is interrupted, must get neither. So every pool gets a guard task on its loop that only
waits: ``asyncio.run`` cancels every task left when ``main`` ends, however it ends, and runs the
loop until they finish, so the guard ends the sessions never released, closes the pool and keeps
the loop alive for a short grace. The owner's ``aclose`` goes through the same task, so the pool
is closed once. When the loop never gets that chance (closed without cancelling its tasks), an
``atexit`` hook closes the pool on a fresh loop (a pool is not tied to a loop), or at least kills
the workers it handed out.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
import weakref
from typing import ClassVar

import pydantic_monty as pm

EXIT_GRACE_SECONDS = 0.05
"""The loop stays alive this long after a pool closed: pydantic-monty's threads then stop posting."""
EXIT_CLOSE_TIMEOUT = 5.0
"""Seconds the atexit hook may spend closing a pool left open before it kills the workers."""

Pool = pm.AsyncMonty | pm.AsyncMontyWebsocket


class PoolGuard:
    """Closes ``pool`` before its event loop goes away; see the module docstring."""

    live: ClassVar[set[PoolGuard]] = set()
    """Guards whose pool is not closed yet (this also keeps their task from being collected)."""

    def __init__(self, pool: Pool, owner: object, *, local: bool) -> None:
        self.pool = pool
        self.local = local
        self.loop = asyncio.get_running_loop()
        self.sessions: dict[int, tuple[pm.AsyncMontySession, int | None, int | None]] = {}
        """id -> (session, worker pid, worker start time) of every session not released yet."""
        self.pidfds: dict[int, int] = {}
        """id -> a pidfd of the session's worker (``exit_watch``), opened at checkout: not per snippet."""
        self.closed = False
        """Closing or closed: the pool is of no further use."""
        self.pid = os.getpid()
        """A forked child inherits the guard, not the pool's runtime threads and workers."""
        self.task = self._start()
        PoolGuard.live.add(self)
        self._finalizer = weakref.finalize(owner, self._owner_collected)
        self._finalizer.atexit = False

    def follow_loop(self) -> None:
        """The pool is used from a new loop, its own having ended without running the guard (a loop
        closed by hand): guard it on this one."""
        loop = asyncio.get_running_loop()
        if loop is not self.loop and not self.loop.is_running():
            self.loop = loop
            self.task = self._start()

    def _start(self) -> asyncio.Task[None]:
        task = self.loop.create_task(self._guard(), name="asyncai-sandbox-guard")
        # A loop closed without cancelling its tasks drops the task pending; the atexit hook closes
        # the pool then, so asyncio's "Task was destroyed but it is pending!" would be noise.
        with contextlib.suppress(AttributeError):  # private to asyncio, but there since 3.4
            task._log_destroy_pending = False  # type: ignore[attr-defined]
        return task

    def checked_out(self, session: pm.AsyncMontySession) -> None:
        pid = session.worker_pid if self.local else None  # a remote worker's pid is not ours
        self.sessions[id(session)] = (session, pid, _start_time(pid) if pid is not None else None)
        pidfd_open = getattr(os, "pidfd_open", None)
        if pid is not None and pidfd_open is not None:
            with contextlib.suppress(OSError):  # already gone: nothing to watch
                self.pidfds[id(session)] = pidfd_open(pid)

    def released(self, session: pm.AsyncMontySession) -> None:
        self.sessions.pop(id(session), None)
        _close(self.pidfds.pop(id(session), None))

    def exit_watch(self, session: pm.AsyncMontySession) -> int | None:
        return self.pidfds.get(id(session)) if id(session) in self.sessions else None

    def holds(self, session: pm.AsyncMontySession) -> bool:
        """Whether ``session`` is still open on this pool (not ended with an earlier event loop)."""
        return not self.closed and id(session) in self.sessions

    async def close(self) -> None:
        """Close the pool now (the owner's ``aclose``)."""
        if self.loop is asyncio.get_running_loop():
            self.task.cancel()
            await asyncio.wait([self.task])
        elif not self.closed:  # the pool's loop ended without running the guard
            await self._shut()

    async def _guard(self) -> None:
        try:
            await self.loop.create_future()  # until cancelled: by close, or the loop's shutdown
        except asyncio.CancelledError:  # not ``finally``: a task dropped pending must not await
            if not self.closed:
                await self._shut()
            raise

    async def _shut(self) -> None:
        self.closed = True
        # The pool's __aexit__ leaves the workers of sessions still checked out running (a forgotten
        # REPL): end them first. A session whose feed is in flight (its pid reads None) would make
        # __aexit__ wait for the feed: its worker is killed.
        sessions = list(self.sessions.values())
        for session, pid, start in sessions:
            if session.worker_pid is None:
                _kill(pid, start)
        await asyncio.gather(*(_end_session(session) for session, _, _ in sessions))
        self.sessions.clear()
        for descriptor in self.pidfds.values():
            _close(descriptor)
        self.pidfds.clear()
        with contextlib.suppress(Exception):
            await self.pool.__aexit__(None, None, None)
        await asyncio.sleep(EXIT_GRACE_SECONDS)
        PoolGuard.live.discard(self)  # only now: a close cut short is finished at exit
        self._finalizer.detach()

    def close_at_exit(self) -> None:
        """The interpreter exits with the pool open: close it on a fresh loop, or at least kill the
        workers it handed out."""
        if not self.loop.is_running():  # not a loop still running in another thread
            loop = asyncio.new_event_loop()
            try:
                loop.run_until_complete(asyncio.wait_for(self._shut(), EXIT_CLOSE_TIMEOUT))
                return
            except Exception:
                pass
            finally:
                loop.close()
        for _, pid, start in self.sessions.values():
            _kill(pid, start)

    def _owner_collected(self) -> None:
        """The sandbox was garbage-collected unclosed: close the pool on its loop if it runs."""
        if self.task.done():
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed
            self.loop.call_soon_threadsafe(self.task.cancel)


@atexit.register
def _close_unclosed_pools() -> None:
    """Last resort, before the interpreter finalizes: pools whose loop never ran their guard."""
    for guard in list(PoolGuard.live):
        if guard.pid == os.getpid():
            guard.close_at_exit()


async def _end_session(session: pm.AsyncMontySession) -> None:
    with contextlib.suppress(Exception):
        await session.__aexit__(None, None, None)


def _close(descriptor: int | None) -> None:
    if descriptor is not None:
        with contextlib.suppress(OSError):
            os.close(descriptor)


def _kill(pid: int | None, start: int | None) -> None:
    if pid is not None and start is not None and _start_time(pid) == start:  # still that worker
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _start_time(pid: int) -> int | None:
    """The start time of ``pid`` if it is a live monty worker child of this process, else None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            cmdline = handle.read()
    except (OSError, IndexError):  # gone, or no /proc (not Linux): nothing is killed
        return None
    # fields[0] is the state (field 3 of stat), fields[1] the parent, fields[19] the start time.
    if fields[0] == b"Z" or int(fields[1]) != os.getpid() or b"monty" not in cmdline:
        return None
    return int(fields[19])
