"""``asyncai serve-mcp``: code mode as an MCP server wrapping the user's MCP servers."""

from asyncai.serve.http import BindError, HttpOptions, check_bind, listen, serve_http
from asyncai.serve.server import CodeModeServer, serve_stdio

__all__ = ["BindError", "CodeModeServer", "HttpOptions", "check_bind", "listen", "serve_http", "serve_stdio"]
