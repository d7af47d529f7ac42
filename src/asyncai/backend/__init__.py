"""Model backends: ``OpenAiCompatibleBackend`` drives any OpenAI-compatible chat-completions server.

HTTP goes through ``httpx2``, already a dependency of asyncai through ``mcp``; no extra dependency.
"""

from typing import TYPE_CHECKING

from ..lazy import lazy_exports
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

if TYPE_CHECKING:
    from .openai import ModelServerError, OpenAiCompatibleBackend, RunResult

__getattr__ = lazy_exports(
    __name__, {"ModelServerError": "openai", "OpenAiCompatibleBackend": "openai", "RunResult": "openai"}
)

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
