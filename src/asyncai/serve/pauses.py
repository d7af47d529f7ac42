"""Where snippets paused for an approval wait (``code_mode.engine.pausing``): in this process, or
with ``--state-store redis://`` in Redis so the client's retry resumes on any instance.

A pause is taken once: the retry that resumes it removes it (``GETDEL``), so a replayed request
state finds nothing. One nobody answers expires after the approval timeout and its snapshot goes.
The key that seals the request state naming a pause is shared the same way: instances on one
Redis seal and unseal each other's.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity

from asyncai.code_mode.engine.pausing import PausedSnippet, looks_like_pause_id, pack_paused, unpack_paused
from asyncai.log import log_event
from asyncai.serve.expiring import Expiring
from asyncai.state.stores import StateDiscarded

if TYPE_CHECKING:
    from asyncai.serve.shared import SharedSessions

SEALING_KEY = "asyncai:request-state-key"
AUDIENCE = "asyncai serve-mcp"
"""Whose request states these are: another service with the same key cannot pass its own."""
KEY_BYTES = 32
SEAL_GRACE = 300.0


class PausedSnippets:
    """The paused snippets waiting for an answer, each for at most ``ttl`` seconds."""

    def __init__(
        self, ttl: float, shared: SharedSessions | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl = ttl
        self.shared = shared
        self.clock = clock
        self._waiting: Expiring[bytes] = Expiring(ttl, clock)
        """Pause id -> the packed pause, in this process (without Redis)."""

    @staticmethod
    def _key(pause_id: str) -> str:
        return f"asyncai:pause:{pause_id}"

    def __len__(self) -> int:
        """Pauses held in this process (expired ones included until the next save or take)."""
        return len(self._waiting)

    async def save(self, paused: PausedSnippet) -> bool:
        """Whether it was stored (a failed Redis write: the client's retry will find nothing)."""
        data = pack_paused(paused)
        if self.shared is not None:
            shared = self.shared
            key, ttl = self._key(paused.id), max(1, int(self.ttl))
            ok, _ = await shared.call(
                "serve.pause_not_saved", paused.id, lambda: shared.client.set(key, data, ex=ttl)
            )
            return ok
        self._waiting.put(paused.id, data)
        return True

    async def take(self, pause_id: str) -> PausedSnippet | None:
        """The pause, removed; ``None`` when unknown, expired, taken before, or unreadable."""
        if not looks_like_pause_id(pause_id):
            return None
        data: bytes | None
        if self.shared is not None:
            shared = self.shared
            key = self._key(pause_id)
            _, found = await shared.call(
                "serve.pause_lookup_failed", pause_id, lambda: shared.client.getdel(key)
            )
            data = found if isinstance(found, bytes) else None
        else:
            data = self._waiting.pop(pause_id)
        if data is None:
            return None
        try:
            return unpack_paused(data)
        except StateDiscarded as exc:
            log_event("serve.pause_discarded", logging.WARNING, pause=pause_id, reason=str(exc))
            return None

    async def discard(self, pause_id: str) -> None:
        """A pause whose REPL went on without it."""
        await self.take(pause_id)

    async def sealing_key(self) -> bytes:
        """The key request states are sealed with: this process's own, or the one every instance on
        the Redis store shares (the first to ask makes it)."""
        if self.shared is None:
            return os.urandom(KEY_BYTES)
        client = self.shared.client
        await client.set(SEALING_KEY, os.urandom(KEY_BYTES).hex(), nx=True)
        found = await client.get(SEALING_KEY)
        return bytes.fromhex(found.decode() if isinstance(found, bytes) else str(found))


class RequestStateSealing:
    """The SDK's ``RequestStateBoundary`` (seals the request state of every ``input_required``,
    verifies and unseals every retry's), made on first use under the key ``pauses`` shares."""

    def __init__(
        self, pauses: PausedSnippets, principal: Callable[[ServerRequestContext[Any, Any]], str]
    ) -> None:
        self.pauses = pauses
        self.principal = principal
        self._boundary: RequestStateBoundary | None = None

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        boundary = self._boundary
        if boundary is None:
            try:
                key, lasting = await self.pauses.sealing_key(), True
            except Exception as exc:  # Redis away: this request's state is this process's own
                log_event("serve.sealing_key_failed", logging.WARNING, error=f"{type(exc).__name__}: {exc}")
                key, lasting = os.urandom(KEY_BYTES), False
            # The seal outlives the pause, so a late retry hears that the pause expired, not a bare -32602.
            ttl = self.pauses.ttl + SEAL_GRACE
            security = RequestStateSecurity(keys=[key], ttl=ttl, bind_principal=self.principal)
            boundary = RequestStateBoundary(security, default_audience=AUDIENCE)
            if lasting:
                self._boundary = boundary
        return await boundary(ctx, call_next)
