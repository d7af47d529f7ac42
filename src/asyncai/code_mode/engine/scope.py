"""``ReplScope``: one REPL (a Monty session checked out on a sandbox worker), its state and its
lifecycle: the worker it holds or gave back (parked), what it knows of its variables, and its copy
in the state store. Each snippet it runs is a ``SnippetRun`` (``snippet``). Here *worker* names the
checked-out session; *session* is kept for the recorded conversation."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from asyncai.activity import Activity
from asyncai.approvals.gate import Approval, Approver
from asyncai.code_mode.catalog.stubs import RUN_CODE
from asyncai.code_mode.engine.dispatch import refuse_os
from asyncai.code_mode.engine.finish import NEEDS_CODE, error_text, notice
from asyncai.code_mode.engine.pausing import PausedSnippet
from asyncai.code_mode.engine.preamble import keeping
from asyncai.code_mode.engine.run import StateLost, discard_print, finish_abandoned
from asyncai.code_mode.engine.saving import SavedCopy
from asyncai.code_mode.engine.setup import ScopeSetup
from asyncai.code_mode.engine.snippet import SnippetRun
from asyncai.code_mode.engine.variables import BoundVariable, KnownVariables
from asyncai.code_mode.sandbox.interface import Worker
from asyncai.code_mode.sandbox.workers import NoWorker
from asyncai.log import log_event
from asyncai.skills.skillset import SkillSet
from asyncai.tools.types import ToolCallOutput, ToolDefinition, ToolSource


class ReplScope(ToolSource):
    """A ``ToolSource`` offering ``run_code`` over one persistent REPL.

    Snippets are serialised with a lock (a worker cannot take two feeds at once); the worker is
    checked out on first use and released by ``aclose``; an idle REPL may give its worker back
    (``park``) and get one again on its next snippet. ``hold()`` marks the scope in use for a
    whole run, so its owner does not release it between two of the run's snippets.
    """

    def __init__(self, setup: ScopeSetup, skills: SkillSet | None = None) -> None:
        self.setup = setup
        self.skills = skills if skills is not None else setup.skills
        """The skills its snippets read, load and save: the code mode's, or its caller's view of
        them (``SkillSet.for_caller``)."""
        self.limits = setup.sandbox.limits
        self.known = KnownVariables()
        self.last_used = 0
        self.worker: Worker | None = None
        self.dump: bytes | None = None
        """The REPL of a scope that gave its worker back (``park``), or a paused snippet's snapshot."""
        self.paused_as: str | None = None
        """The id of this REPL's snippet that waits for an approval (``run_pausing``), if any."""
        self.restarted = False
        """State was lost (a dump that would not load, a worker that died): the next result says so."""
        self.abandoned = False
        """A paused snippet was finished unanswered (``finish_abandoned``): the next result says so."""
        self.checked_snippets = 0
        self.wrappers_version = setup.catalog_version
        """The catalog version whose tool wrappers the REPL holds (-1: another process's)."""
        self.checked_version = setup.catalog_version
        """The catalog version the worker's type-check stubs were made from (-1: none)."""
        self.saved = SavedCopy(self)
        self.lock = asyncio.Lock()
        """One snippet at a time (a worker cannot take two feeds at once)."""
        self._holds = 0

    def tools(self) -> list[ToolDefinition]:
        return [self.setup.run_code]

    def context_note(self) -> str | None:
        return self.known.note

    def variables(self) -> list[BoundVariable]:
        """What the REPL holds, as of its last snippet (names only for a restored one not yet run)."""
        return self.known.listed()

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        self._holds += 1
        try:
            yield
        finally:
            self._holds -= 1

    @property
    def busy(self) -> bool:
        return self._holds > 0 or self.lock.locked()

    @property
    def running(self) -> bool:
        return self.lock.locked()

    @property
    def parked(self) -> bool:
        return self.dump is not None

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        approver: Approver | None = None,
        activity: Activity | None = None,
    ) -> ToolCallOutput:
        """Run one snippet; ``approver`` is asked about mutating calls under ``--mutations ask``;
        ``activity`` is told of this snippet's nested calls (besides the executor's own display)."""
        self.setup.check_open()
        if name != RUN_CODE:
            return ToolCallOutput.error(f"error: unknown tool {name!r}; the only tool is run_code")
        result = await self._whole(arguments, approver, activity, pausing=False)
        assert isinstance(result, ToolCallOutput)  # only a pausing run pauses
        return result

    async def run_pausing(
        self, arguments: dict[str, Any], *, activity: Activity | None = None
    ) -> ToolCallOutput | PausedSnippet:
        """Run one snippet in which a mutating call that needs a person's decision (``ask``)
        pauses the snippet instead of waiting: the ``PausedSnippet`` then goes on in ``resume``.
        Until then the paused snippet is the REPL's state (parked, saved like any other); a new
        snippet first finishes it as if the person had declined (``finish_abandoned``)."""
        self.setup.check_open()
        return await self._whole(arguments, None, activity, pausing=True)

    async def _whole(
        self,
        arguments: dict[str, Any],
        approver: Approver | None,
        activity: Activity | None,
        *,
        pausing: bool,
    ) -> ToolCallOutput | PausedSnippet:
        """A snippet that arrived whole; a call without code runs nothing and makes no span."""
        if not isinstance(arguments.get("code"), str):
            return ToolCallOutput.error(NEEDS_CODE)
        return await SnippetRun(self, approver, activity, pausing=pausing).whole(arguments)

    async def resume(
        self, paused: PausedSnippet, approvals: Mapping[int, Approval], *, activity: Activity | None = None
    ) -> ToolCallOutput | PausedSnippet:
        """Go on with a paused snippet of this REPL: each held call runs if ``approvals`` allows it,
        else raises ``PermissionError`` where it was called; the rest runs as ``run_pausing``."""
        self.setup.check_open()
        return await SnippetRun(self, None, activity, pausing=True).resumed(paused, approvals)

    def eager(self, *, approver: Approver | None = None, activity: Activity | None = None) -> SnippetRun:
        """A snippet run while it is still being written: give it the code so far with ``update``,
        then ``finish`` it with the call's arguments, or ``abandon`` it."""
        self.setup.check_open()
        return SnippetRun(self, approver, activity, streamed=True)

    @contextlib.asynccontextmanager
    async def in_use(self) -> AsyncIterator[None]:
        """One snippet at a time, its REPL counted as used now and as changed since the last save."""
        self.setup.room.touch(self)
        self.saved.changed = True
        try:
            async with self.lock:
                yield
        finally:
            self.setup.room.poke()

    async def park(self) -> bool:
        """Dump the REPL and give the worker back; the next snippet restores it on any worker."""
        if self.lock.locked():
            return False
        async with self.lock:
            worker = self.worker
            if worker is None:
                return True
            try:
                blob = await worker.dump()
            except Exception as exc:  # a dead or broken worker: its state is gone anyway
                log_event("code_mode.park_failed", logging.WARNING, error=error_text(exc))
                await asyncio.shield(self.reset(discard=True))
                self.restarted = True
                return True
            # The dump is kept before the worker goes: a cancel from here on loses nothing.
            self.dump, self.worker = blob, None
            self.setup.room.leave(self)
            await asyncio.shield(self.setup.sandbox.release(worker))
            return True

    async def park_paused(self, snapshot: bytes, pause_id: str) -> None:
        """A snippet paused: its snapshot is the REPL now, and the worker goes back (it is mid-feed:
        no other snippet can use it)."""
        worker, self.worker = self.worker, None
        self.setup.room.leave(self)
        if worker is not None:
            await asyncio.shield(self.setup.sandbox.release(worker, discard=True))
        self.dump, self.paused_as = snapshot, pause_id

    async def ensure_worker(self) -> Worker:
        """The REPL's worker: the one it holds, or a new one with the REPL restored (or started)."""
        if self.worker is not None and not self.setup.sandbox.holds(self.worker):
            await self.reset()  # its pool was closed with an earlier event loop
            self.restarted = True
        if self.worker is None:
            version = self.setup.catalog_version  # the stubs checked out are made from this catalog
            worker = await self._checkout()
            try:
                restored = await self._restore(worker)
            except BaseException as exc:
                self.setup.room.leave(self)
                await asyncio.shield(self.setup.sandbox.release(worker, discard=True))
                if not isinstance(exc, Exception):
                    raise
                raise StateLost(f"the code preamble failed: {error_text(exc)}") from None
            self.worker = worker
            # A restored REPL is not type-checked: the checker would start without its history (every
            # earlier variable unknown, so unsure, so run twice) and costs ~20 ms to start per checkout.
            self.checked_version = -1 if restored else version
            self.checked_snippets = 0
        if self.wrappers_version != self.setup.catalog_version:
            await self._feed_new_wrappers(self.worker)
        return self.worker

    async def worker_for_resume(self) -> tuple[Worker, bytes]:
        """A new worker for a paused snippet, and the snapshot to load in it (it keeps its own)."""
        dump = self.dump
        assert dump is not None  # ``resume`` checked
        await self.reset(keep_repl=True)
        worker = await self._checkout()
        self.worker, self.checked_version = worker, -1
        return worker, dump

    async def _checkout(self) -> Worker:
        """A worker of this scope's own, counted in the room; ``StateLost`` when none can be had."""
        room = self.setup.room
        try:
            await room.enter(self)
        except NoWorker as exc:
            raise StateLost(str(exc)) from None
        try:
            worker = await self.setup.sandbox.checkout(self.setup.type_check_stubs())
        except BaseException as exc:  # a cancel too: the reservation must not leak
            room.abandon()
            if not isinstance(exc, Exception):
                raise
            raise StateLost(str(exc)) from None
        room.entered(self)
        return worker

    async def _restore(self, worker: Worker) -> bool:
        """Load the dump into ``worker`` (True), or start a fresh REPL there: the helpers, one wrapper
        per tool, the operator's preamble. A dump that would not load is lost (the next result says so)."""
        if self.dump is not None:
            try:
                if self.paused_as is not None:
                    await finish_abandoned(self, worker, self.dump)
                else:
                    await worker.load_session(self.dump)
                self.dump = None  # only once it is loaded: a cancel before keeps it
                return True
            except Exception as exc:
                log_event("code_mode.restore_failed", logging.WARNING, error=error_text(exc))
                self.dump = None
                self.known.forget()
                self.restarted = True
        await worker.feed_run(self.setup.preamble()[0], skip_type_check=True)
        if self.setup.operator_preamble:
            await worker.feed_run(
                self.setup.operator_preamble, os=refuse_os, print_callback=discard_print, skip_type_check=True
            )
        self.wrappers_version = self.setup.catalog_version
        return False

    async def _feed_new_wrappers(self, worker: Worker) -> None:
        """The wrapped servers' tools changed: define the current functions (variables stay, those
        that shadow a helper too)."""
        preamble = self.setup.preamble()[0]
        # A variable that shadows what the preamble binds (a helper, say) is put back after it;
        # one named like a tool function is not: the tool's wrapper must be what the name calls.
        catalog = self.setup.catalog
        bound = self.known.bound
        shadowing = [
            name for name in bound if name.isidentifier() and name in preamble and name not in catalog
        ]
        try:
            await worker.feed_run(keeping(preamble, shadowing), skip_type_check=True)
        except Exception as exc:
            await self.reset(discard=True)
            self.restarted = True
            raise StateLost(f"the new tool functions could not be defined: {error_text(exc)}") from None
        self.wrappers_version = self.setup.catalog_version

    def notice(self, restart_asked: bool) -> str | None:
        """What the model must know of the REPL before the next result (told once)."""
        told = notice(restarted=self.restarted and not restart_asked, abandoned=self.abandoned)
        self.restarted = self.abandoned = False
        return told

    async def reset(self, *, discard: bool = False, keep_repl: bool = False) -> None:
        """Give the worker back and forget the REPL; ``keep_repl``: keep what is known of it (a
        snapshot is about to replace the worker's state)."""
        worker, self.worker = self.worker, None
        if not keep_repl:
            self.dump = self.paused_as = None
            self.saved.stamp = None  # nothing held here matches a save any more (``sync`` reloads)
            self.known.forget()
        self.setup.room.leave(self)
        if worker is not None:
            await self.setup.sandbox.release(worker, discard=discard or keep_repl)

    async def aclose(self) -> None:
        async with self.lock:
            await self.reset()
        self.setup.room.poke()
