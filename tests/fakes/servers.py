"""Helpers to start the test MCP server: stdio command lines and a Streamable HTTP process."""

from __future__ import annotations

import contextlib
import json
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

SERVER_SCRIPT = Path(__file__).with_name("mcp_test_server.py")
RESOURCE_SERVER = Path(__file__).parent.parent / "tools" / "mcp" / "resource_server.py"


def server_command(name: str) -> str:
    """A ``--mcp-stdio`` command line for the test server called ``name``."""
    return shlex.join([sys.executable, str(SERVER_SCRIPT), "--name", name])


def resource_server(name: str) -> str:
    return shlex.join([sys.executable, str(RESOURCE_SERVER), name])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode} before listening on {port}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.05)  # polling a port that is not yet bound; bounded by the deadline
    raise TimeoutError(f"nothing listened on 127.0.0.1:{port} within {timeout}s")


@contextlib.contextmanager
def http_test_server(name: str) -> Iterator[str]:
    """The test server on Streamable HTTP; yields its MCP URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVER_SCRIPT), "--name", name, "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def broken_server_config(path: Path, good: Mapping[str, object] | None = None, *, bom: bool = False) -> Path:
    """A Claude-style config at ``path`` with a server that fails to start (it prints ``no token``
    and exits), a disabled one that would never start, and the ``good`` servers; ``bom`` writes a
    UTF-8 byte order mark first, as some editors do."""
    servers: dict[str, object] = {
        "broken": {
            "command": "python3",
            "args": ["-c", "import sys; print('no token', file=sys.stderr); sys.exit(3)"],
        },
        "off": {"command": "/nonexistent/never-started", "disabled": True},
        **(good or {}),
    }
    text = json.dumps({"mcpServers": servers}, indent=2)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode())
    return path
