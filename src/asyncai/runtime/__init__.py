"""The runtime: conversation threads, one run at a time per thread, coalesced follow-up runs."""

from asyncai.runtime.runtime import (
    ReplyCallback,
    RunBackend,
    RunReply,
    RunRequest,
    Runtime,
    Session,
    SessionFactory,
    coalesce,
)

__all__ = [
    "ReplyCallback",
    "RunBackend",
    "RunReply",
    "RunRequest",
    "Runtime",
    "Session",
    "SessionFactory",
    "coalesce",
]
