"""The runtime: conversation threads, one run at a time per thread, coalesced follow-up runs."""

from asyncai.runtime.runtime import (
    ReplyCallback,
    RunBackend,
    RunReply,
    RunRequest,
    RunScope,
    Runtime,
    ScopeProvider,
    Session,
    SessionFactory,
    SharedScope,
    coalesce,
)

__all__ = [
    "ReplyCallback",
    "RunBackend",
    "RunReply",
    "RunRequest",
    "RunScope",
    "Runtime",
    "ScopeProvider",
    "Session",
    "SessionFactory",
    "SharedScope",
    "coalesce",
]
