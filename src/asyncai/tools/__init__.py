"""The tool layer: tool definitions, call outputs, and executors that talk to MCP servers."""

from .environment import server_environment
from .mcp_client import McpToolExecutor, ServerStartError, ServerSummary
from .specs import (
    ConfigError,
    HttpServerSpec,
    ServerSpec,
    StdioServerSpec,
    http_spec,
    specs_from_config,
    stdio_spec,
)
from .types import (
    DuplicateTool,
    ResourceError,
    ToolCallOutput,
    ToolDefinition,
    ToolExecutor,
    ToolRoute,
)

__all__ = [
    "ConfigError",
    "DuplicateTool",
    "HttpServerSpec",
    "McpToolExecutor",
    "ResourceError",
    "ServerSpec",
    "ServerStartError",
    "ServerSummary",
    "StdioServerSpec",
    "ToolCallOutput",
    "ToolDefinition",
    "ToolExecutor",
    "ToolRoute",
    "http_spec",
    "server_environment",
    "specs_from_config",
    "stdio_spec",
]
