"""MCP servers as a tool source: specs and config files, the servers' environment, the clients."""
