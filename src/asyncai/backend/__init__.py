"""Model backends: ``OpenAiCompatibleBackend`` drives any OpenAI-compatible chat-completions server.

HTTP goes through ``httpx2``, already a dependency of asyncai through ``mcp``; no extra dependency.
"""

from typing import TYPE_CHECKING

from asyncai.lazy import lazy_exports

if TYPE_CHECKING:
    from asyncai.backend.config import (
        DEFAULT_SYSTEM_PROMPT,
        FINAL_ROUND_INSTRUCTION,
        NO_ANSWER_TEXT,
        BackendConfig,
        Message,
        ToolCall,
    )
    from asyncai.backend.harness import ModelTurn, SessionHarness
    from asyncai.backend.metrics import TurnSummary
    from asyncai.backend.openai import ModelServerError, OpenAiCompatibleBackend, RunResult

if not TYPE_CHECKING:  # the type checker sees the imports above, and no attribute it does not know
    __getattr__ = lazy_exports(
        __name__,
        {
            **dict.fromkeys(
                (
                    "DEFAULT_SYSTEM_PROMPT",
                    "FINAL_ROUND_INSTRUCTION",
                    "NO_ANSWER_TEXT",
                    "BackendConfig",
                    "Message",
                    "ToolCall",
                ),
                "config",
            ),
            "ModelServerError": "openai",
            "OpenAiCompatibleBackend": "openai",
            "RunResult": "openai",
            "ModelTurn": "harness",
            "SessionHarness": "harness",
            "TurnSummary": "metrics",
        },
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
