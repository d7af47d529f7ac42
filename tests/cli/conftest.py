from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

BIN = Path(sys.executable).parent


@dataclass
class CliResult:
    status: int
    stdout: str
    stderr: str

    def log(self) -> list[dict[str, Any]]:
        """The NDJSON lines of stderr."""
        return [json.loads(line) for line in self.stderr.splitlines() if line.startswith("{")]


def asyncai(
    *args: str,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    cwd: Path | None = None,
) -> CliResult:
    """Run the installed ``asyncai`` command (in ``cwd``); stdin is closed (not a terminal) unless given."""
    full_env = {**os.environ, "HOME": os.environ.get("ASYNCAI_TEST_HOME", "/nonexistent-home"), **(env or {})}
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ASYNCAI_MODEL"):
        if env is None or name not in env:
            full_env.pop(name, None)
    process = subprocess.run(
        [str(BIN / "asyncai"), *args],
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        cwd=cwd,
    )
    assert process.returncode >= 0, (
        f"asyncai died from signal {-process.returncode}: {process.stderr[-2000:]}"
    )
    return CliResult(process.returncode, process.stdout, process.stderr)


SIMPLE = str(BIN / "asyncai-mcp-simple")


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps({"path": self.path, "items": [{"name": f"n{i}"} for i in range(200)]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="session")
def http_url() -> Iterator[str]:
    """A loopback HTTP server answering every GET with a JSON document of 200 items."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
