"""Builds the executors every command shares from resolved settings."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from ..code_mode import CodeModeToolExecutor
from ..tools import McpToolExecutor
from .settings import Settings, code_limits, read_preamble, sandbox_config, server_specs


@contextlib.asynccontextmanager
async def mcp_executor(settings: Settings) -> AsyncIterator[McpToolExecutor]:
    limits = code_limits(settings)
    # The code-mode per-call timeout fires first; the MCP one is a backstop for direct use.
    async with McpToolExecutor(server_specs(settings), tool_timeout=limits.tool_timeout + 5.0) as executor:
        yield executor


@contextlib.asynccontextmanager
async def code_mode_executor(settings: Settings) -> AsyncIterator[CodeModeToolExecutor]:
    limits = code_limits(settings)
    sandbox = sandbox_config(settings)
    sandbox.resolved_kind()  # fail on a bad sandbox choice before any server starts
    preamble = read_preamble(settings)
    async with (
        mcp_executor(settings) as inner,
        CodeModeToolExecutor(inner, limits, sandbox=sandbox, preamble=preamble) as executor,
    ):
        yield executor
