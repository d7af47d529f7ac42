"""REPL handles: under the stateless 2026-07-28 protocol there is no session to hang a REPL on, so
serve-mcp mints a handle for each new REPL, tells the model, and takes it back as ``run_code``'s
``repl`` argument (SEP-2567's explicit state handles).

A handle belongs to the caller that it was minted for: the hash of the bearer token the request
carried (``--token-file`` holds one per caller), so a handle seen by someone else is refused, not
used. Handles expire ``--state-ttl`` after their last use. With a Redis state store the records
live in Redis, so any instance serves any handle.
"""

from __future__ import annotations

import enum
import hashlib
import secrets
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from asyncai.serve.expiring import Expiring

if TYPE_CHECKING:
    from asyncai.serve.shared import SharedSessions

HANDLE_PREFIX = "repl-"
SCOPE_PREFIX = "handle:"
"""How a handle's REPL is keyed among the REPLs (beside ``http:`` sessions and ``stdio``)."""
ANONYMOUS = "anonymous"


class HandleCheck(enum.Enum):
    MINE = "mine"
    UNKNOWN = "unknown"
    """Never minted here, or expired."""
    FOREIGN = "foreign"
    """Minted for another caller."""


def caller_identity(authorization: str | None) -> str:
    """Who is calling, without keeping the token: a hash of the ``Authorization`` header."""
    if not authorization:
        return ANONYMOUS
    return "token:" + hashlib.sha256(authorization.encode()).hexdigest()[:32]


def looks_like_handle(text: str) -> bool:
    return text.startswith(HANDLE_PREFIX) and 8 < len(text) < 80 and text.isascii()


class ReplHandles:
    """The handles minted, with their owners and expiry: in this process, or in Redis."""

    def __init__(
        self, ttl: float, shared: SharedSessions | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl = ttl
        self.shared = shared
        self.clock = clock
        self._owners: Expiring[str] = Expiring(ttl, clock)
        """Handle -> owner, for this process's own (and when Redis cannot be asked)."""

    @staticmethod
    def _key(handle: str) -> str:
        return f"asyncai:handle:{handle}"

    async def mint(self, owner: str) -> str:
        handle = HANDLE_PREFIX + secrets.token_urlsafe(18)
        await self._record(handle, owner)
        return handle

    async def check(self, handle: str, owner: str) -> HandleCheck:
        if not looks_like_handle(handle):
            return HandleCheck.UNKNOWN
        found = await self._owner(handle)
        if found is None:
            return HandleCheck.UNKNOWN
        return HandleCheck.MINE if secrets.compare_digest(found, owner) else HandleCheck.FOREIGN

    async def touch(self, handle: str, owner: str) -> None:
        """It was used: it expires ``ttl`` from now."""
        await self._record(handle, owner)

    async def _record(self, handle: str, owner: str) -> None:
        self._owners.put(handle, owner)
        if self.shared is not None:
            shared = self.shared
            await shared.call(
                "serve.handle_not_shared",
                handle,
                lambda: shared.client.set(self._key(handle), owner, ex=max(1, int(self.ttl))),
            )

    async def _owner(self, handle: str) -> str | None:
        if self.shared is not None:
            shared = self.shared
            ok, found = await shared.call(
                "serve.handle_lookup_failed", handle, lambda: shared.client.get(self._key(handle))
            )
            if ok:
                return found.decode() if isinstance(found, bytes) else found
        return self._owners.get(handle)  # this process's own, or Redis could not be asked
