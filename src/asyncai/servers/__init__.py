"""MCP servers bundled with asyncai (stdio): ``simple`` (http_get) and the kcp servers."""
