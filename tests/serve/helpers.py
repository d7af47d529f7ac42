"""Running ``asyncai serve-mcp`` for tests: stdio parameters for the SDK client, and an HTTP server
process whose URL is read from its ``listening on`` line (no sleeps, no polling)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from mcp import StdioServerParameters

BIN = Path(sys.executable).parent
ASYNCAI = str(BIN / "asyncai")
SIMPLE = str(BIN / "asyncai-mcp-simple")
LISTENING = re.compile(r"listening on (http://\S+)")


def stdio_params(*args: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    """``asyncai serve-mcp ARGS`` as a stdio server for ``mcp.Client(stdio_client(...))``."""
    return StdioServerParameters(
        command=ASYNCAI, args=["serve-mcp", *args], env={**os.environ, **(env or {})}
    )


@dataclass
class HttpServe:
    url: str
    process: subprocess.Popen[str]
    stderr_lines: list[str] = field(default_factory=list)


@contextmanager
def serve_http(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> Iterator[HttpServe]:
    """``asyncai serve-mcp --http 127.0.0.1:0 ARGS``; yields once it prints its URL. Its later stderr
    is collected in ``stderr_lines``; the process is terminated and reaped on exit."""
    process = subprocess.Popen(
        [ASYNCAI, "serve-mcp", "--http", "127.0.0.1:0", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert process.stderr is not None
    early: list[str] = []
    url = None
    for line in process.stderr:  # blocks until the line arrives or the process ends
        early.append(line)
        match = LISTENING.search(line)
        if match:
            url = match.group(1)
            break
    if url is None:
        process.wait(timeout)
        raise AssertionError(f"serve-mcp did not start: {''.join(early)}")
    served = HttpServe(url, process, early)
    reader = threading.Thread(target=lambda: served.stderr_lines.extend(process.stderr or []), daemon=True)
    reader.start()
    try:
        yield served
    finally:
        process.terminate()
        try:
            process.wait(timeout)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        reader.join(5)
