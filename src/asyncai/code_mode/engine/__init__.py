"""The engine: one REPL per scope, its snippets fed to a sandbox worker, their nested calls
dispatched to the tool sources, and what comes back turned into the text the model reads."""
