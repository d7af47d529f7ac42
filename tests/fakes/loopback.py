"""An ASGI app served by uvicorn on 127.0.0.1 in a thread, for the HTTP fakes: the socket listens
before the block starts, so a client may connect at once."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

import uvicorn


def listening_socket(port: int = 0) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    return sock


def url_of(sock: socket.socket) -> str:
    return f"http://127.0.0.1:{sock.getsockname()[1]}"


@contextlib.contextmanager
def serving(app: Any, sock: socket.socket) -> Iterator[None]:
    """Serve ``app`` on ``sock`` until the block ends (lifespan on), then close the socket."""
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="on"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve([sock])), daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
