"""Builds the executors every command shares from resolved settings."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from asyncai.activity import QUIET, Activity
from asyncai.cli.settings import (
    Settings,
    code_limits,
    mutation_policy,
    read_preamble,
    sandbox_config,
    server_requests,
    server_specs,
    sign_in_mode,
    skill_set,
    someone_can_sign_in,
)
from asyncai.tools.mcp.early_start import EarlyServers, early_servers

if TYPE_CHECKING:
    from asyncai.approvals import MutationPolicy
    from asyncai.approvals.gate import Approver
    from asyncai.code_mode import CodeMode
    from asyncai.state.stores import StateStore
    from asyncai.tools import McpServers, ServerSpec
    from asyncai.tools.mcp.oauth import SignInMode
    from asyncai.tools.mcp.server_requests import ServerRequests


def server_secrets(settings: Settings) -> list[str | None]:
    """The model API key (from --api-key, OPENAI_API_KEY or the settings file) is asyncai's secret:
    no stdio server inherits a variable holding it unless its config env names it."""
    return [settings.text("api_key")]


@contextlib.asynccontextmanager
async def mcp_executor(
    settings: Settings,
    sign_in: SignInMode | None = None,
    list_sign_in: bool = False,
    specs: list[ServerSpec] | None = None,
    requests: ServerRequests | None = None,
    early: EarlyServers | None = None,
) -> AsyncIterator[McpServers]:
    """The configured servers, started; ``sign_in`` says how a server asking for OAuth sign-in gets
    it (by default: in the browser when someone can answer, else it is reported); ``early`` holds
    the stdio servers already spawned (by default they are spawned here)."""
    limits = code_limits(settings)
    if sign_in is None:
        sign_in = sign_in_mode(settings, someone_can_sign_in())
    specs = server_specs(settings) if specs is None else specs
    secrets = server_secrets(settings)
    # Spawn the stdio servers first: their own start then overlaps the SDK import below.
    async with contextlib.AsyncExitStack() as spawned:
        if early is None:
            early = await spawned.enter_async_context(early_servers(specs, secrets))
        from asyncai.tools import McpServers  # loads the mcp SDK: only when a command needs servers

        # The code-mode per-call timeout fires first; the MCP one is a backstop for direct use.
        async with McpServers(
            specs,
            tool_timeout=limits.tool_timeout + 5.0,
            secrets=secrets,
            early=early,
            sign_in=sign_in,
            list_sign_in=list_sign_in,
            requests=requests or server_requests(settings),
        ) as executor:
            yield executor


@contextlib.asynccontextmanager
async def code_mode_executor(
    settings: Settings,
    approver: Approver | None = None,
    state_store: StateStore | None = None,
    activity: Activity | None = None,
    requests: ServerRequests | None = None,
    mutations: MutationPolicy | None = None,
    catalog_budget: int | None = None,
    skills_per_caller: bool = False,
) -> AsyncIterator[CodeMode]:
    """Code mode over the configured servers; ``approver`` decides mutating calls under
    ``--mutations ask`` (without one they are refused); ``state_store`` keeps thread REPLs for
    resumed sessions; ``requests`` answers what the servers ask (declined by default);
    ``mutations`` is the policy already resolved (default: ``--mutations``, else ``allow``);
    ``catalog_budget`` is the command's default for ``--catalog-budget``; with ``skills_per_caller``
    each caller's saved skills are its own (``SkillSet.per_caller``)."""
    limits = code_limits(settings, catalog_budget)
    sandbox = sandbox_config(settings)
    sandbox.resolved_kind()  # fail on a bad sandbox choice before any server starts
    preamble = read_preamble(settings)
    mutations = mutations or mutation_policy(settings)
    requests = requests or server_requests(settings)
    async with contextlib.AsyncExitStack() as stack:
        # The stdio servers start first, so their start overlaps the imports of the engine below.
        specs = server_specs(settings)  # read once: a config file is read for it
        early = await stack.enter_async_context(early_servers(specs, server_secrets(settings)))
        from asyncai.code_mode import CodeMode  # pydantic-monty and the engine: only to run code
        from asyncai.code_mode.catalog.observed import SHAPES_FILE, ObservedShapes
        from asyncai.code_mode.engine.clock import every_clock_paused
        from asyncai.state.stores import default_state_dir

        # A snippet's wall clock stops while a person answers what a server asked, as for approvals.
        requests.waiting = every_clock_paused
        inner = await stack.enter_async_context(
            mcp_executor(settings, specs=specs, requests=requests, early=early)
        )
        executor = CodeMode(
            inner,
            limits,
            sandbox=sandbox,
            preamble=preamble,
            mutations=mutations,
            approver=approver,
            state_store=state_store,
            activity=activity or QUIET,
            observed_shapes=ObservedShapes(default_state_dir().parent / SHAPES_FILE),
            speculate=not settings.switch("no_speculate"),
            speculate_tools=settings.texts("speculate"),
            trace_content=settings.switch("trace_content"),
            skills=skill_set(settings, inner.connections, state_store, per_caller=skills_per_caller),
        )
        try:
            await executor.refresh_skills()
            yield executor
        finally:
            # Both wait on processes (the workers, the servers' exits): side by side, not in turn.
            await asyncio.gather(executor.aclose(), inner.aclose())
