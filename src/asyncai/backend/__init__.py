"""Model backends: ``OpenAiCompatibleBackend`` drives any OpenAI-compatible chat-completions server.

HTTP goes through ``httpx2``, already a dependency of asyncai through ``mcp``; no extra dependency.
"""

from .config import (
    DEFAULT_SYSTEM_PROMPT,
    FINAL_ROUND_INSTRUCTION,
    NO_ANSWER_TEXT,
    BackendConfig,
    Message,
    ToolCall,
)
from .harness import ModelTurn, SessionHarness
from .metrics import TurnSummary
from .openai import ModelServerError, OpenAiCompatibleBackend, RunResult

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "FINAL_ROUND_INSTRUCTION",
    "NO_ANSWER_TEXT",
    "BackendConfig",
    "Message",
    "ModelServerError",
    "ModelTurn",
    "OpenAiCompatibleBackend",
    "RunResult",
    "SessionHarness",
    "ToolCall",
    "TurnSummary",
]
