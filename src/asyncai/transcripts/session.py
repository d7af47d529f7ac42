"""``ClaudeCodeSession``: a conversation thread recorded as a Claude Code transcript.

It is the runtime's ``Session`` (see ``asyncai.runtime``): the backend hands it each message as the
run goes, and it appends one record a message, each with a single ``write`` on a file opened for
appending, so a crash loses at most the record being written. A file whose last line was cut off
by an earlier crash gets a newline first, so the half line stays alone and is skipped on load.

A run's records continue the chain of the last successful run: a run that failed or was cancelled
stays in the file, on a branch of its own, and is not in the history the next run sends.
"""

from __future__ import annotations

import functools
import logging
import os
import subprocess
from pathlib import Path
from typing import Any

from asyncai.backend.config import Message
from asyncai.backend.harness import ModelTurn
from asyncai.log import log_event
from asyncai.tools.types import ToolCallOutput
from asyncai.transcripts import records
from asyncai.transcripts.reader import Transcript
from asyncai.transcripts.records import Links, RecordContext
from asyncai.version import __version__

RESTART_NOTE = "[the sandbox was restarted: variables from earlier run_code calls are gone]"


@functools.cache
def asyncai_version() -> str:
    return __version__


@functools.cache
def git_branch(cwd: str) -> str:
    """The checked-out branch of the repository holding ``cwd`` (``HEAD`` when detached), or ``""``
    outside a repository or without git."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--abbrev-ref", "HEAD"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


class TranscriptWriter:
    """Appends records to one file; after the first failed write it logs once and stops, rather
    than leave a chain with a hole in it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.failed = False
        self._checked_tail = False

    @property
    def written(self) -> bool:
        return self.path.exists()

    def append(self, record: dict[str, Any]) -> None:
        if self.failed:
            return
        data = records.encode(record)
        try:
            if not self._checked_tail:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                if not _ends_with_newline(self.path):
                    data = b"\n" + data
                self._checked_tail = True
            descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(descriptor, view) :]
            finally:
                os.close(descriptor)
        except OSError as exc:
            self.failed = True
            log_event(
                "session.write_failed",
                logging.WARNING,
                path=str(self.path),
                error=exc.strerror or str(exc),
                detail="this session is no longer recorded",
            )


def _ends_with_newline(path: Path) -> bool:
    """True for a missing or empty file too: nothing to separate from."""
    try:
        with path.open("rb") as file:
            file.seek(0, os.SEEK_END)
            if file.tell() == 0:
                return True
            file.seek(-1, os.SEEK_END)
            return file.read(1) == b"\n"
    except FileNotFoundError:
        return True


class ClaudeCodeSession:
    """One thread's session file; see the module docstring."""

    def __init__(
        self,
        path: Path,
        context: RecordContext,
        *,
        history: list[Message] | None = None,
        leaf: str | None = None,
        note: str | None = None,
    ) -> None:
        self.path = path
        self.context = context
        self.writer = TranscriptWriter(path)
        self._history = list(history or [])
        self._committed = leaf
        self._parent = leaf
        self._note = note
        self._assistant: str | None = None

    @classmethod
    def new(cls, path: Path, cwd: str) -> ClaudeCodeSession:
        return cls(path, RecordContext(path.stem, cwd, asyncai_version(), git_branch(cwd)))

    @classmethod
    def resumed(cls, transcript: Transcript, cwd: str) -> ClaudeCodeSession:
        """Continue ``transcript`` in its own file; the sandbox starts empty, so when earlier runs
        used tools the first run is told their variables are gone."""
        history = transcript.messages()
        used_tools = any(message.tool_calls for message in history)
        context = RecordContext(transcript.session_id, cwd, asyncai_version(), git_branch(cwd))
        return cls(
            transcript.path,
            context,
            history=history,
            leaf=transcript.leaf,
            note=RESTART_NOTE if used_tools else None,
        )

    # The runtime's side

    @property
    def session_id(self) -> str:
        return self.context.session_id

    def history(self) -> list[Message]:
        return list(self._history)

    def note(self) -> str | None:
        return self._note

    def begin_run(self) -> None:
        self._parent = self._committed

    def end_run(self, ok: bool) -> None:
        if ok:
            self._committed = self._parent
            self._note = None

    # The backend's side (SessionHarness)

    def user_turn(self, message: Message) -> None:
        self._append(records.user_record(self.context, message, self._links()))

    def assistant_turn(self, message: Message, turn: ModelTurn) -> None:
        links = self._links()
        self._assistant = links.uuid
        self._append(records.assistant_record(self.context, message, turn, links))

    def tool_result(self, message: Message, output: ToolCallOutput) -> None:
        assert self._assistant is not None, "a tool result before its call"
        record = records.tool_result_record(
            self.context,
            message,
            is_error=output.is_error,
            audit=output.audit,
            assistant_uuid=self._assistant,
            links=self._links(),
        )
        self._append(record)

    def final_reply(self, message: Message, turn: ModelTurn) -> None:
        self._append(records.assistant_record(self.context, message, turn, self._links()))

    def _links(self) -> Links:
        return Links(records.new_uuid(), self._parent, records.timestamp_now())

    def _append(self, record: dict[str, Any]) -> None:
        self.writer.append(record)
        self._parent = record["uuid"]
