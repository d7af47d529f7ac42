"""Code mode: the model's single ``run_code`` tool, running Python in the Monty sandbox."""

from .executor import CodeModeToolExecutor
from .limits import CodeModeLimits, parse_size
from .sandbox import SANDBOX_KINDS, SandboxConfig, SandboxConfigError

__all__ = [
    "SANDBOX_KINDS",
    "CodeModeLimits",
    "CodeModeToolExecutor",
    "SandboxConfig",
    "SandboxConfigError",
    "parse_size",
]
