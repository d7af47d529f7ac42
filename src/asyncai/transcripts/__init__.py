"""Sessions recorded as Claude Code transcripts: where they live, how records are made, how a
transcript is read back and resumed, and which sessions a directory has."""

from asyncai.files import claude_config_dir
from asyncai.transcripts.listing import SessionInfo, list_sessions, newest_session
from asyncai.transcripts.paths import (
    find_session,
    is_session_id,
    project_dir,
    project_dirs,
    project_slug,
    session_path,
)
from asyncai.transcripts.reader import (
    Transcript,
    TranscriptError,
    chain_messages,
    conversation_chain,
    load_transcript,
)
from asyncai.transcripts.session import RESTART_NOTE, ClaudeCodeSession

__all__ = [
    "RESTART_NOTE",
    "ClaudeCodeSession",
    "SessionInfo",
    "Transcript",
    "TranscriptError",
    "chain_messages",
    "claude_config_dir",
    "conversation_chain",
    "find_session",
    "is_session_id",
    "list_sessions",
    "load_transcript",
    "newest_session",
    "project_dir",
    "project_dirs",
    "project_slug",
    "session_path",
]
