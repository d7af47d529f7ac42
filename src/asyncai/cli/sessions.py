"""Which session each thread records into, from ``--no-session``, ``--session-id``, ``--resume`` and
``-c``; and the ``session: <uuid>`` line a run ends with."""

from __future__ import annotations

import logging
import os
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from asyncai.cli.settings import DEFAULT_STATE_TTL, Settings, UsageError
from asyncai.log import log_event, logger
from asyncai.transcripts import (
    ClaudeCodeSession,
    Transcript,
    TranscriptError,
    find_session,
    is_session_id,
    load_transcript,
    newest_session,
    project_dir,
    project_dirs,
    session_path,
)

if TYPE_CHECKING:
    from asyncai.state.stores import StateStore

NO_SESSION_HINT = "pass --no-session to run without recording"


def working_directory() -> str:
    try:
        return os.getcwd()
    except OSError as exc:
        raise UsageError(f"cannot record a session: the working directory is gone ({exc.strerror})") from None


def _session_id(value: str, option: str) -> str:
    if not is_session_id(value):
        raise UsageError(f"{option} takes a session id (a UUID such as {uuid.uuid4()}), not {value!r}")
    return value


def _find(session_id: str, cwd: str) -> Path | None:
    try:
        return find_session(session_id, cwd)
    except OSError as exc:
        raise UsageError(f"cannot look for session {session_id}: {exc.strerror or exc}") from None


def _resumed(settings: Settings, cwd: str) -> Transcript | None:
    resume = settings.text("resume")
    directory = project_dir(cwd)
    if resume is not None:
        session_id = _session_id(resume, "--resume")
        path = _find(session_id, cwd)
        if path is None:
            raise UsageError(f"no session {session_id} in {directory} (asyncai sessions lists them)")
    elif settings.switch("continue_session"):
        path = newest_session(project_dirs(cwd))
        if path is None:
            raise UsageError(f"no session to continue: none recorded for {cwd} in {directory}")
    else:
        return None
    try:
        return load_transcript(path)
    except TranscriptError as exc:
        raise UsageError(str(exc)) from None


class SessionRecorder:
    """The runtime's session factory: the first thread gets the resumed or named session, every
    later thread (``/new`` in chat, other ``--jsonl`` threads) a new one."""

    def __init__(self, cwd: str, *, resumed: Transcript | None = None, first_id: str | None = None) -> None:
        self.cwd = cwd
        self.resumed = resumed
        self.first_id = first_id
        self.sessions: list[ClaudeCodeSession] = []

    def __call__(self, thread_id: str) -> ClaudeCodeSession:
        if not self.sessions and self.resumed is not None:
            session = ClaudeCodeSession.resumed(self.resumed, self.cwd)
        else:
            session_id = self.first_id if not self.sessions and self.first_id else str(uuid.uuid4())
            session = ClaudeCodeSession.new(session_path(self.cwd, session_id), self.cwd)
        self.sessions.append(session)
        return session

    def announce(self) -> None:
        """``session: <uuid>`` on stderr for every session that was written (the NDJSON event
        ``session`` with ``--verbose``, where stderr is all NDJSON)."""
        for session in self.sessions:
            if not session.writer.written:
                continue
            if logger.isEnabledFor(logging.INFO):
                log_event("session", id=session.session_id, path=str(session.path))
            else:
                print(f"session: {session.session_id}", file=sys.stderr, flush=True)


def session_recorder(settings: Settings) -> SessionRecorder | None:
    """What the session options ask for, checked before any server starts; ``None`` with
    ``--no-session``. A bad id, a missing session or a file that is no transcript is a
    ``UsageError``."""
    choices = {"--resume": "resume", "--continue": "continue_session", "--session-id": "session_id"}
    given = [option for option, key in choices.items() if settings.get(key) not in (None, False)]
    if settings.switch("no_session"):
        if given and "no_session" in settings.flags:
            raise UsageError(f"--no-session cannot be combined with {given[0]}")
        if not given:
            return None
        # no_session from the config file: a session option typed for this run wins.
    cwd = working_directory()
    resumed = _resumed(settings, cwd)
    first_id = None
    if (chosen := settings.text("session_id")) is not None:
        first_id = _session_id(chosen, "--session-id").lower()
        if _find(first_id, cwd) is not None:
            raise UsageError(f"session {first_id} already exists: continue it with --resume {first_id}")
    directory = resumed.path.parent if resumed is not None else project_dir(cwd)
    problem = _unwritable(directory)
    if problem is not None:
        message = f"cannot record sessions in {directory}: {problem}"
        if resumed is not None or first_id is not None:
            raise UsageError(f"{message} ({NO_SESSION_HINT})")
        # Recording is a default the user did not ask for: it must not stop the run.
        print(f"asyncai: warning: {message}; this run is not recorded", file=sys.stderr)
        return None
    return SessionRecorder(cwd, resumed=resumed, first_id=first_id)


def _unwritable(directory: Path) -> str | None:
    """Why sessions cannot be written to ``directory`` (created if missing), or ``None``."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None if os.access(directory, os.W_OK) else "not writable"


async def state_store(settings: Settings) -> StateStore:
    """The store recorded sessions keep their REPL state in, checked now: one that cannot be used
    is a one-line error before anything starts."""
    from asyncai.state.stores import StateStoreError, open_store

    try:
        store = open_store(settings.text("state_store"), settings.number("state_ttl", DEFAULT_STATE_TTL))
    except StateStoreError as exc:
        raise UsageError(str(exc)) from None
    try:
        await store.check()
    except StateStoreError as exc:
        await store.aclose()
        raise UsageError(str(exc)) from None
    return store
