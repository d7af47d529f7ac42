"""The tool layer: tool definitions, call outputs, and executors that talk to MCP servers.

Every name is imported on first use: ``McpServers`` and ``ServerSummary`` load the ``mcp`` SDK
(about a second to import), and a command that only parses its options (``asyncai --help``) must
not pay even for the specs' dataclasses when it imports a light module of this package.
"""

from typing import TYPE_CHECKING

from asyncai.lazy import lazy_exports

if TYPE_CHECKING:
    from asyncai.tools.mcp.client import McpServers, ServerSummary
    from asyncai.tools.mcp.environment import server_environment
    from asyncai.tools.mcp.specs import (
        ConfigError,
        HttpServerSpec,
        ServerSpec,
        StdioServerSpec,
        http_spec,
        specs_from_config,
        stdio_spec,
    )
    from asyncai.tools.types import (
        DuplicateTool,
        ResourceError,
        ServerStartError,
        ToolCallOutput,
        ToolDefinition,
        ToolRoute,
        ToolSource,
    )

_MODULES = {
    "McpServers": "mcp.client",
    "ServerSummary": "mcp.client",
    "server_environment": "mcp.environment",
    **dict.fromkeys(
        (
            "ConfigError",
            "HttpServerSpec",
            "ServerSpec",
            "StdioServerSpec",
            "http_spec",
            "specs_from_config",
            "stdio_spec",
        ),
        "mcp.specs",
    ),
    **dict.fromkeys(
        (
            "DuplicateTool",
            "ResourceError",
            "ServerStartError",
            "ToolCallOutput",
            "ToolDefinition",
            "ToolRoute",
            "ToolSource",
        ),
        "types",
    ),
}

if not TYPE_CHECKING:  # the type checker sees the imports above, and no attribute it does not know
    __getattr__ = lazy_exports(__name__, _MODULES)


__all__ = [
    "ConfigError",
    "DuplicateTool",
    "HttpServerSpec",
    "McpServers",
    "ResourceError",
    "ServerSpec",
    "ServerStartError",
    "ServerSummary",
    "StdioServerSpec",
    "ToolCallOutput",
    "ToolDefinition",
    "ToolRoute",
    "ToolSource",
    "http_spec",
    "server_environment",
    "specs_from_config",
    "stdio_spec",
]
