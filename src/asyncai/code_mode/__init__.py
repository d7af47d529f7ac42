"""Code mode: the model's single ``run_code`` tool, running Python in the Monty sandbox."""

from typing import TYPE_CHECKING

from ..lazy import lazy_exports
from .limits import CodeModeLimits, parse_size
from .sandbox_config import SANDBOX_KINDS, SandboxConfig, SandboxConfigError

if TYPE_CHECKING:
    from .executor import CodeModeToolExecutor

__getattr__ = lazy_exports(__name__, {"CodeModeToolExecutor": "executor"})

__all__ = [
    "SANDBOX_KINDS",
    "CodeModeLimits",
    "CodeModeToolExecutor",
    "SandboxConfig",
    "SandboxConfigError",
    "parse_size",
]
