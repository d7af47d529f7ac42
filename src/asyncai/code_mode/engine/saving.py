"""``SavedCopy``: a REPL's copy in the state store (``state.stores``), so a conversation's variables
outlive the process and move between instances: take it up, check it is still the newest, save it."""

from __future__ import annotations

import asyncio
import logging

from asyncai.code_mode.engine.finish import describe, error_text
from asyncai.code_mode.engine.setup import Repl
from asyncai.humanize import count
from asyncai.log import log_event
from asyncai.state.stores import SavedScope, StateDiscarded, StateLoad, pack, unpack
from asyncai.wording import setting

STORE_TIMEOUT = 10.0
"""Seconds any state-store call may take before it counts as failed."""


class SavedCopy:
    """What one scope has to do with its saved copy: whether a snippet ran since it was saved
    (``changed``), and the store's stamp of the copy held here (``stamp``)."""

    def __init__(self, scope: Repl) -> None:
        self.scope = scope
        self.changed = False
        self.stamp: str | None = None

    async def load(self, key: str) -> StateLoad:
        """Take up the scope saved under ``key``; it is loaded into a worker by the first snippet."""
        scope = self.scope
        store = scope.setup.store
        if store is None or scope.worker is not None or scope.dump is not None:
            return "none"
        try:
            async with asyncio.timeout(STORE_TIMEOUT):
                stored = await store.load(key)
        except Exception as exc:  # an unreachable store only means starting empty
            log_event("state.load_failed", logging.WARNING, session=key, error=describe(exc))
            return "none"
        if stored is None:
            return "none"
        self.stamp = stored.stamp
        try:
            saved = unpack(stored.data)
        except StateDiscarded as exc:
            log_event("state.discarded", logging.WARNING, session=key, reason=str(exc))
            return "discarded"
        scope.dump, scope.paused_as = saved.dump, saved.paused_as
        scope.known.take_up(saved.bound, saved.variables, saved.note, saved.functions)
        # The dump holds the saving process's helpers and wrappers: unless they are this process's
        # own, this process's replace them.
        same = saved.preamble is not None and saved.preamble == scope.setup.preamble()[1]
        scope.wrappers_version = scope.setup.catalog_version if same else -1
        self.changed = False
        return "restored"

    async def sync(self, key: str) -> bool:
        """Before a run, where several processes share the store (serve-mcp behind a load balancer,
        under the session's lease): if the saved scope changed since this process last saved or
        loaded it, drop the copy held here and take up the saved one. True when the copy here is
        now the saved one; False when that is unknown (the store failed): the run then must not
        save, or it could overwrite newer state with older."""
        scope = self.scope
        store = scope.setup.store
        if store is None:
            return False
        try:
            async with asyncio.timeout(STORE_TIMEOUT):
                stamp = await store.stamp(key)
        except Exception as exc:
            log_event("state.load_failed", logging.WARNING, session=key, error=describe(exc))
            return False
        if stamp == self.stamp:
            return True
        async with scope.lock:
            await scope.reset()
        if stamp is None:  # saved state that is gone (too big to save, expired): nothing to trust
            scope.restarted = True
            return True
        loaded = await self.load(key)
        scope.restarted = loaded != "restored"
        return loaded != "none"  # "none": it did not load, but may still be there

    async def save(self, key: str) -> None:
        """Save the scope under ``key`` if a snippet ran since the last save; a scope with nothing
        left (never used, or reset) removes what was saved before. A failed save is tried again
        after the next run."""
        scope = self.scope
        store = scope.setup.store
        if store is None or not self.changed:
            return
        try:
            async with scope.lock:
                dump = scope.dump
                if scope.worker is not None:
                    try:
                        dump = await scope.worker.dump()
                    except Exception as exc:
                        log_event("state.not_saved", logging.WARNING, session=key, reason=error_text(exc))
                        return
        finally:
            scope.setup.room.poke()
        limit = scope.limits.max_state
        if dump is not None and len(dump) > limit:
            largest = sorted(scope.known.variables, key=lambda v: v.size, reverse=True)[:3]
            log_event(
                "state.not_saved",
                logging.WARNING,
                session=key,
                reason=f"the REPL state is {count(len(dump))} bytes, over {setting('max_state')} "
                f"({count(limit)})",
                largest=", ".join(v.describe() for v in largest),
            )
            dump = None  # what was saved before is stale now: it goes too
        try:
            async with asyncio.timeout(STORE_TIMEOUT):
                if dump is None:
                    await store.delete(key)
                    self.stamp = None
                else:
                    current = scope.wrappers_version == scope.setup.catalog_version
                    preamble = scope.setup.preamble()[1] if current else None
                    known = scope.known
                    saved = SavedScope(
                        dump,
                        known.note,
                        tuple(known.bound),
                        preamble,
                        scope.paused_as,
                        known.rows(),
                        tuple(known.functions.items()),
                    )
                    self.stamp = await store.save(key, pack(saved))
        except Exception as exc:
            log_event("state.not_saved", logging.WARNING, session=key, reason=describe(exc))
            return
        self.changed = False
