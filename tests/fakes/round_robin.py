"""A load balancer for tests: an HTTP proxy on loopback that sends each request to the next
upstream in turn (no stickiness), streaming the answer back (SSE included). ``served`` records
which upstream took each request."""

from __future__ import annotations

import asyncio
import itertools
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx2
import uvicorn
from starlette.types import Receive, Scope, Send

HOP_BY_HOP = {b"host", b"connection", b"keep-alive", b"transfer-encoding", b"content-length"}


@dataclass
class RoundRobin:
    upstreams: list[str]
    """Base URLs (``http://127.0.0.1:PORT``); a request's path and query are kept."""
    url: str = ""
    served: list[tuple[str, str, int]] = field(default_factory=list)
    """(method, path, upstream index) of each request, in order."""

    def __post_init__(self) -> None:
        self._next = itertools.cycle(range(len(self.upstreams)))
        self._client: httpx2.AsyncClient | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if self._client is None:
            self._client = httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300))
        index = next(self._next)
        self.served.append((scope["method"], scope["path"], index))
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        query = f"?{scope['query_string'].decode()}" if scope["query_string"] else ""
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in HOP_BY_HOP]
        request = self._client.build_request(
            scope["method"], f"{self.upstreams[index]}{scope['path']}{query}", headers=headers, content=body
        )
        response = await self._client.send(request, stream=True)
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": [(k, v) for k, v in response.headers.raw if k.lower() not in HOP_BY_HOP],
                }
            )
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await response.aclose()


@contextmanager
def round_robin(upstreams: list[str]) -> Iterator[RoundRobin]:
    """Serve a ``RoundRobin`` over ``upstreams`` on a free loopback port, in a thread of its own.
    The socket listens before this yields, so no request can come too early."""
    proxy = RoundRobin(upstreams)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # TCP_NODELAY, as serve-mcp
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    proxy.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    # "critical": its shutdown cancels open GET streams, which uvicorn would print as tracebacks.
    server = uvicorn.Server(uvicorn.Config(proxy, log_level="critical", lifespan="off"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        server.should_exit = server.force_exit = True  # open SSE streams do not hold it up
        thread.join(10)
        sock.close()
