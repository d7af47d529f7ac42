"""asyncai: an async agent harness where the model drives MCP tools through Python in Monty."""

__version__ = "0.1.0"
