"""The tool layer: tool definitions, call outputs, and executors that talk to MCP servers.

``McpServers`` and ``ServerSummary`` load the ``mcp`` SDK (about a second to import), so they
are imported on first use: ``asyncai --help`` and the argument parsing never pay for it.
"""

from typing import TYPE_CHECKING

from asyncai.lazy import lazy_exports
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

if TYPE_CHECKING:
    from asyncai.tools.mcp.client import McpServers, ServerSummary

if not TYPE_CHECKING:  # the type checker sees the imports above, and no attribute it does not know
    __getattr__ = lazy_exports(__name__, {"McpServers": "mcp.client", "ServerSummary": "mcp.client"})


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
