"""asyncai: code mode for agents. A model writes Python that calls your tools (MCP servers and
Python functions) as ``async def`` functions; the Python runs in the Monty sandbox, in worker
processes with a heap cap, and the REPL keeps its variables per conversation.

    import asyncai

    async with asyncai.McpServers([asyncai.stdio_spec("asyncai-mcp-simple")]) as mcp, \\
               asyncai.CodeMode([mcp, asyncai.FunctionTools([add])]) as code_mode:
        out = await code_mode.call_tool("run_code", {"code": "await add(a=1, b=2)"})

Every name below is imported on first use: ``import asyncai`` loads neither the ``mcp`` SDK nor
pydantic-monty.
"""

from typing import TYPE_CHECKING

from asyncai.lazy import lazy_exports
from asyncai.version import __version__

_EXPORTS = {
    # Code mode
    "CodeMode": "code_mode.executor",
    "CodeModeLimits": "code_mode.limits",
    "SandboxConfig": "code_mode.sandbox.config",
    "SandboxConfigError": "code_mode.sandbox.config",
    "ReplScope": "code_mode.engine.scope",
    "ReplScopes": "code_mode.scopes",
    "ScopeUse": "code_mode.scopes",
    "ObservedShapes": "code_mode.catalog.observed",
    # Tool sources
    "ToolSource": "tools.types",
    "ToolDefinition": "tools.types",
    "ToolCallOutput": "tools.types",
    "ResourceError": "tools.types",
    "RoutedTools": "tools.routing",
    "FunctionTools": "tools.functions",
    "tool": "tools.functions",
    "McpServers": "tools.mcp.client",
    "ServerStartError": "tools.types",
    "StdioServerSpec": "tools.mcp.specs",
    "HttpServerSpec": "tools.mcp.specs",
    "ConfigError": "tools.mcp.specs",
    "stdio_spec": "tools.mcp.specs",
    "http_spec": "tools.mcp.specs",
    "specs_from_config": "tools.mcp.specs",
    "OAuthSettings": "tools.mcp.specs",
    # What MCP servers ask of their client
    "ServerRequests": "tools.mcp.server_requests",
    "Person": "tools.mcp.asking",
    "FormAnswer": "tools.mcp.asking",
    "Sampler": "tools.mcp.asking",
    "SampleRequest": "tools.mcp.asking",
    "Sample": "tools.mcp.asking",
    # Approvals of mutating calls
    "MutationPolicy": "approvals",
    "Approver": "approvals.gate",
    "Approval": "approvals.gate",
    "ApprovalRequest": "approvals.gate",
    # Where REPLs are saved
    "StateStore": "state.stores",
    "DirectoryStore": "state.stores",
    "RedisStore": "state.stores",
    # Skills
    "Skill": "skills.skill",
    "SkillError": "skills.skill",
    "SkillSet": "skills.skillset",
    "SkillSource": "skills.sources",
    "DirectorySkills": "skills.sources",
    "ServerSkills": "skills.servers",
    # What a run is doing
    "Activity": "activity",
    "NestedCall": "activity",
}

if TYPE_CHECKING:
    from asyncai.activity import Activity, NestedCall
    from asyncai.approvals import MutationPolicy
    from asyncai.approvals.gate import Approval, ApprovalRequest, Approver
    from asyncai.code_mode.catalog.observed import ObservedShapes
    from asyncai.code_mode.engine.scope import ReplScope
    from asyncai.code_mode.executor import CodeMode
    from asyncai.code_mode.limits import CodeModeLimits
    from asyncai.code_mode.sandbox.config import SandboxConfig, SandboxConfigError
    from asyncai.code_mode.scopes import ReplScopes, ScopeUse
    from asyncai.skills.servers import ServerSkills
    from asyncai.skills.skill import Skill, SkillError
    from asyncai.skills.skillset import SkillSet
    from asyncai.skills.sources import DirectorySkills, SkillSource
    from asyncai.state.stores import DirectoryStore, RedisStore, StateStore
    from asyncai.tools.functions import FunctionTools, tool
    from asyncai.tools.mcp.asking import FormAnswer, Person, Sample, Sampler, SampleRequest
    from asyncai.tools.mcp.client import McpServers
    from asyncai.tools.mcp.server_requests import ServerRequests
    from asyncai.tools.mcp.specs import (
        ConfigError,
        HttpServerSpec,
        OAuthSettings,
        StdioServerSpec,
        http_spec,
        specs_from_config,
        stdio_spec,
    )
    from asyncai.tools.routing import RoutedTools
    from asyncai.tools.types import (
        ResourceError,
        ServerStartError,
        ToolCallOutput,
        ToolDefinition,
        ToolSource,
    )

if not TYPE_CHECKING:  # the type checker sees the imports above, and no attribute it does not know
    __getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "Activity",
    "Approval",
    "ApprovalRequest",
    "Approver",
    "CodeMode",
    "CodeModeLimits",
    "ConfigError",
    "DirectorySkills",
    "DirectoryStore",
    "FormAnswer",
    "FunctionTools",
    "HttpServerSpec",
    "McpServers",
    "MutationPolicy",
    "NestedCall",
    "OAuthSettings",
    "ObservedShapes",
    "Person",
    "RedisStore",
    "ReplScope",
    "ReplScopes",
    "ResourceError",
    "RoutedTools",
    "Sample",
    "SampleRequest",
    "Sampler",
    "SandboxConfig",
    "SandboxConfigError",
    "ScopeUse",
    "ServerRequests",
    "ServerSkills",
    "ServerStartError",
    "Skill",
    "SkillError",
    "SkillSet",
    "SkillSource",
    "StateStore",
    "StdioServerSpec",
    "ToolCallOutput",
    "ToolDefinition",
    "ToolSource",
    "__version__",
    "http_spec",
    "specs_from_config",
    "stdio_spec",
    "tool",
]


def __dir__() -> list[str]:
    return list(__all__)
