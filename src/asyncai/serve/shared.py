"""Client sessions shared through Redis, so several ``serve-mcp --http`` instances behind a load
balancer serve any session (``--state-store redis://…``).

Three kinds of record, all under ``asyncai:``:

- ``session:ID``: what ``initialize`` settled (protocol version, client parameters), written before
  the client sees the session id, so an instance that never saw the handshake can take the
  session up (``http.SharingSessionManager``); it expires after ``--state-ttl`` without a run.
- ``scope:mcp-ID``: the session's REPL, saved after every run (``code_mode.state_store``).
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
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..code_mode.state_store import RedisStore
from ..humanize import one_line, seconds
from ..log import log_event

if TYPE_CHECKING:
    from redis.asyncio.lock import Lock

LEASE_SECONDS = 30.0
"""How long a lease outlives an instance that stopped renewing it (killed mid-run)."""
DEFAULT_LEASE_WAIT = 10.0
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


class SharedSessions:
    """The session records and leases of one Redis state store; see the module docstring."""

    def __init__(self, store: RedisStore, *, ttl: float, lease_wait: float = DEFAULT_LEASE_WAIT) -> None:
        self.store = store
        self.client = store.client
        self.ttl = max(int(ttl), 1)
        self.lease_wait = lease_wait

    @staticmethod
    def _session(session_id: str) -> str:
        return f"asyncai:session:{session_id}"

    async def register(self, session_id: str, record: SessionRecord) -> bool:
        """Whether the session is now known to every instance (else only to this one)."""
        try:
            async with asyncio.timeout(CALL_TIMEOUT):
                await self.client.set(self._session(session_id), record.to_json(), ex=self.ttl)
        except Exception as exc:
            log_event("serve.session_not_shared", logging.WARNING, session=session_id, error=_failure(exc))
            return False
        return True

    async def lookup(self, session_id: str) -> SessionRecord | None:
        """The record of a session another instance opened; ``None`` when unknown or unreachable."""
        try:
            async with asyncio.timeout(CALL_TIMEOUT):
                text = await self.client.get(self._session(session_id))
        except Exception as exc:
            log_event("serve.session_lookup_failed", logging.WARNING, session=session_id, error=_failure(exc))
            return None
        return SessionRecord.from_json(text) if text is not None else None

    async def ended(self, session_id: str) -> bool:
        """Whether Redis says the session is gone (its client ended it on another instance, or it
        expired); ``False`` when Redis cannot be asked: the instance keeps serving what it holds."""
        try:
            async with asyncio.timeout(CALL_TIMEOUT):
                return not await self.client.exists(self._session(session_id))
        except Exception as exc:
            log_event("serve.session_lookup_failed", logging.WARNING, session=session_id, error=_failure(exc))
            return False

    async def touch(self, session_id: str) -> None:
        """The session was used: it expires ``ttl`` from now."""
        with contextlib.suppress(Exception):  # a failed save has already said Redis is gone
            async with asyncio.timeout(CALL_TIMEOUT):
                await self.client.expire(self._session(session_id), self.ttl)

    async def forget(self, session_id: str) -> None:
        """The client ended the session (DELETE): its record and saved REPL go."""
        try:
            async with asyncio.timeout(CALL_TIMEOUT):
                await self.client.delete(self._session(session_id))
                await self.store.delete(state_key(session_id))
        except Exception as exc:
            log_event("serve.session_not_forgotten", logging.WARNING, session=session_id, error=_failure(exc))

    @contextlib.asynccontextmanager
    async def lease(self, session_id: str) -> AsyncIterator[bool]:
        """Hold the session's lease for the block: ``True`` when held, ``False`` when Redis could
        not be asked (the run goes on unleased, with a warning). ``SessionBusy`` when another
        instance held it for the whole wait."""
        lock = self.client.lock(
            f"asyncai:lease:{session_id}",
            timeout=LEASE_SECONDS,
            blocking_timeout=self.lease_wait,
            thread_local=False,
        )
        try:
            async with asyncio.timeout(self.lease_wait + CALL_TIMEOUT):
                acquired: bool | None = await lock.acquire(blocking=False)
                if not acquired:
                    log_event("serve.lease_waiting", logging.INFO, session=session_id)
                    acquired = await lock.acquire()
        except Exception as exc:
            log_event("serve.lease_failed", logging.WARNING, session=session_id, error=_failure(exc))
            acquired = None
        if acquired is None:
            yield False
            return
        if not acquired:
            raise SessionBusy(
                f"this session is running on another asyncai instance and did not finish within "
                f"{seconds(self.lease_wait)}; try again when that run has ended"
            )
        renewing = asyncio.create_task(self._renew(lock, session_id))
        try:
            yield True
        finally:
            renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewing
            try:
                async with asyncio.timeout(CALL_TIMEOUT):
                    await lock.release()
            except Exception as exc:  # expired meanwhile, or Redis went away: it lapses by itself
                log_event(
                    "serve.lease_not_released", logging.WARNING, session=session_id, error=_failure(exc)
                )

    async def _renew(self, lock: Lock, session_id: str) -> None:
        while True:
            await asyncio.sleep(LEASE_SECONDS / 3)
            try:
                async with asyncio.timeout(CALL_TIMEOUT):
                    await lock.reacquire()
            except Exception as exc:
                log_event("serve.lease_not_renewed", logging.WARNING, session=session_id, error=_failure(exc))
