"""Code mode: the model's single ``run_code`` tool, running Python in the Monty sandbox."""

from typing import TYPE_CHECKING

from asyncai.lazy import lazy_exports

if TYPE_CHECKING:
    from asyncai.code_mode.executor import CodeMode
    from asyncai.code_mode.limits import CodeModeLimits, parse_size
    from asyncai.code_mode.sandbox.config import SANDBOX_KINDS, SandboxConfig, SandboxConfigError

if not TYPE_CHECKING:  # the type checker sees the imports above, and no attribute it does not know
    __getattr__ = lazy_exports(
        __name__,
        {
            "CodeMode": "executor",
            "CodeModeLimits": "limits",
            "parse_size": "limits",
            "SANDBOX_KINDS": "sandbox.config",
            "SandboxConfig": "sandbox.config",
            "SandboxConfigError": "sandbox.config",
        },
    )

__all__ = [
    "SANDBOX_KINDS",
    "CodeMode",
    "CodeModeLimits",
    "SandboxConfig",
    "SandboxConfigError",
    "parse_size",
]
