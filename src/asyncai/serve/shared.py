"""Client sessions shared through Redis, so several ``serve-mcp --http`` instances behind a load
balancer serve any session (``--state-store redis://…``).

Three kinds of record, all under ``asyncai:``:

- ``session:ID``: what ``initialize`` settled (protocol version, client parameters), written before
  the client sees the session id, so an instance that never saw the handshake can take the
  session up (``http._SessionManager``); it expires after ``--state-ttl`` without a run.
- ``repl:mcp-ID``: the session's REPL, saved after every run (``state.stores.RedisStore``).
- ``lease:ID``: which instance runs the session now. A run takes it (waiting ``--lease-wait``
  for a run elsewhere to end), renews it while running, and releases it after saving, so two
  instances never run one session's REPL at once. The lease is redis-py's ``Lock`` (SET NX PX,
  renewed and released only by its holder's token).

Redis that goes away never stops the server: a failed call is a warning and the session goes on
from what this instance holds (unleased, unsaved) until Redis is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from asyncai.humanize import one_line, seconds
from asyncai.log import log_event
from asyncai.state.stores import RedisStore

if TYPE_CHECKING:
    from redis.asyncio.lock import Lock

LEASE_SECONDS = 30.0
"""How long a lease outlives an instance that stopped renewing it (killed mid-run)."""
DEFAULT_LEASE_WAIT = 10.0
T = TypeVar("T")
CALL_TIMEOUT = 5.0
"""Seconds any one Redis call may take before it counts as failed."""


class SessionBusy(Exception):
    """Another instance kept the session's lease for the whole wait; the message is one line."""


@dataclass(frozen=True)
class SessionRecord:
    protocol_version: str
    client_params: dict[str, Any]

    def to_json(self) -> str:
        return json.dumps({"protocol_version": self.protocol_version, "client_params": self.client_params})

    @classmethod
    def from_json(cls, text: bytes | str) -> SessionRecord | None:
        try:
            data = json.loads(text)
            return cls(str(data["protocol_version"]), dict(data["client_params"]))
        except (ValueError, KeyError, TypeError):
            return None


def state_key(session_id: str) -> str:
    """The key of a session's saved REPL in the state store."""
    return f"mcp-{session_id}"


def _failure(exc: BaseException) -> str:
    return one_line(f"{type(exc).__name__}: {exc}", 200)


@dataclass
class Lease:
    """A run's hold on its session (``SharedSessions.lease``)."""

    held: bool
    """False: Redis could not be asked, and the run goes on unleased (nothing synced or saved)."""
    lost: bool = False
    """A renewal failed while the run went on: another instance may hold the session now."""


class SharedSessions:
    """The session records and leases of one Redis state store; see the module docstring."""

    def __init__(self, store: RedisStore, *, lease_wait: float = DEFAULT_LEASE_WAIT) -> None:
        self.store = store
        self.client = store.client
        self.lease_wait = lease_wait

    @staticmethod
    def _session(session_id: str) -> str:
        return f"asyncai:session:{session_id}"

    async def call(
        self, event: str, session_id: str, call: Callable[[], Awaitable[T]], timeout: float = CALL_TIMEOUT
    ) -> tuple[bool, T | None]:
        """``(True, value)``, or ``(False, None)`` with the warning ``event`` when Redis failed."""
        try:
            async with asyncio.timeout(timeout):
                return True, await call()
        except Exception as exc:
            log_event(event, logging.WARNING, session=session_id, error=_failure(exc))
            return False, None

    async def register(self, session_id: str, record: SessionRecord) -> bool:
        """Whether the session is now known to every instance (else only to this one)."""
        key = self._session(session_id)
        ok, _ = await self.call(
            "serve.session_not_shared",
            session_id,
            lambda: self.client.set(key, record.to_json(), ex=self.store.ttl),
        )
        return ok

    async def lookup(self, session_id: str) -> SessionRecord | None:
        """The record of a session another instance opened; ``None`` when unknown or unreachable."""
        key = self._session(session_id)
        _, text = await self.call("serve.session_lookup_failed", session_id, lambda: self.client.get(key))
        return SessionRecord.from_json(text) if text is not None else None

    async def ended(self, session_id: str) -> bool:
        """Whether Redis says the session is gone (its client ended it on another instance, or it
        expired); ``False`` when Redis cannot be asked: the instance keeps serving what it holds."""
        key = self._session(session_id)
        ok, found = await self.call(
            "serve.session_lookup_failed", session_id, lambda: self.client.exists(key)
        )
        return ok and not found

    async def touch(self, session_id: str) -> None:
        """The session was used: it expires ``--state-ttl`` from now."""
        key = self._session(session_id)
        await self.call(
            "serve.session_not_touched", session_id, lambda: self.client.expire(key, self.store.ttl)
        )

    async def forget(self, session_id: str) -> None:
        """The client ended the session (DELETE): its record and saved REPL go."""
        keys = (self._session(session_id), self.store.key(state_key(session_id)))
        await self.call("serve.session_not_forgotten", session_id, lambda: self.client.delete(*keys))

    @contextlib.asynccontextmanager
    async def lease(self, session_id: str) -> AsyncIterator[Lease]:
        """Hold the session's lease for the block (see ``Lease``). ``SessionBusy`` when another
        instance held it for the whole wait, or Redis failed while this one waited (running then
        could fork the REPL)."""
        lock = self.client.lock(
            f"asyncai:lease:{session_id}",
            timeout=LEASE_SECONDS,
            blocking_timeout=self.lease_wait,
            thread_local=False,
        )
        ok, acquired = await self.call("serve.lease_failed", session_id, lambda: lock.acquire(blocking=False))
        if not ok:
            yield Lease(held=False)
            return
        if not acquired:
            log_event("serve.lease_waiting", logging.INFO, session=session_id)
            wait = self.lease_wait + CALL_TIMEOUT
            ok, acquired = await self.call("serve.lease_failed", session_id, lock.acquire, wait)
            if not (ok and acquired):
                if not ok:  # it may have been taken as the call failed: this token's release is safe
                    await self.call("serve.lease_not_released", session_id, lock.release)
                raise SessionBusy(
                    "this session is running on another asyncai instance and did not finish within "
                    f"{seconds(self.lease_wait)}; try again when that run has ended"
                )
        lease = Lease(held=True)
        renewing = asyncio.create_task(self._renew(lock, lease, session_id))
        try:
            yield lease
        finally:
            # Released however the run ended: a lease left behind blocks the session for LEASE_SECONDS.
            with anyio.CancelScope(shield=True):
                await asyncio.shield(self._end(lock, renewing, session_id))

    async def _end(self, lock: Lock, renewing: asyncio.Task[None], session_id: str) -> None:
        renewing.cancel()
        await asyncio.wait({renewing})
        await self.call("serve.lease_not_released", session_id, lock.release)

    async def _renew(self, lock: Lock, lease: Lease, session_id: str) -> None:
        while True:
            await asyncio.sleep(LEASE_SECONDS / 3)  # a timer, not a wait for anything
            ok, _ = await self.call("serve.lease_not_renewed", session_id, lock.reacquire)
            if not ok:
                lease.lost = True
                return
