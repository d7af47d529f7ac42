"""A real ``redis-server`` on loopback for the tests that share state through Redis.

``.ci/run`` installs Debian's redis-server where it is missing; on a developer machine without it
those tests are skipped, saying so (under CI they fail instead).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.fakes.binaries import require
from tests.fakes.servers import free_port

READY = "Ready to accept connections"


@dataclass
class RedisServer:
    url: str
    process: subprocess.Popen[str]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


@contextmanager
def redis_server(directory: Path) -> Iterator[RedisServer]:
    """Start one on a free loopback port, without persistence; wait for its ready line."""
    binary = require("redis-server", "apt-get install redis-server (.ci/run does it)")
    port = free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(directory), "--protected-mode", "yes"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    server = RedisServer(f"redis://127.0.0.1:{port}/0", process)
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if READY in line:
                break
        else:
            raise RuntimeError(f"redis-server exited before it was ready (status {process.wait()})")
        yield server
    finally:
        server.stop()
