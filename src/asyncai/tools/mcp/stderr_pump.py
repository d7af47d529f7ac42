"""A stdio MCP server's stderr: read on a thread, logged line by line, the last lines kept for the
start error. Light to import (no ``mcp``), so servers can be started before the SDK is loaded."""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from typing import TextIO

from asyncai.log import log_event

TAIL_LINES = 8
LINE_CHARS = 300


class StderrPump:
    """Reads a child's stderr on a thread: every line goes to the log, the last few are kept.

    The last lines, because a server that dies at start prints its imports and traceback frames
    first and the actual error last.
    """

    def __init__(self, server: str) -> None:
        self.server = server
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        read_fd, write_fd = os.pipe()
        self.writer: TextIO = os.fdopen(write_fd, "w")
        self._reader = os.fdopen(read_fd, "rb")  # buffered: unbuffered reads a byte a system call
        self._thread = threading.Thread(target=self._pump, name=f"mcp-stderr-{server}", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        with self._reader:
            for raw in self._reader:
                line = raw.decode(errors="replace").rstrip()
                if not line:
                    continue
                kept = line.strip()
                if len(kept) > LINE_CHARS:
                    kept = kept[:LINE_CHARS] + "..."
                self.tail.append(kept)
                log_event("mcp.server_stderr", logging.INFO, server=self.server, line=line)

    def close_writer(self) -> None:
        if not self.writer.closed:
            self.writer.close()

    def wait(self, timeout: float) -> None:
        self.close_writer()
        self._thread.join(timeout)
