"""A loopback WebSocket relay to ``monty subprocess`` workers: the stand-in for a monty-server fleet.

Each WebSocket connection gets its own worker with an empty environment. The stdio worker frames
every protobuf message with a 4-byte little-endian length; the WebSocket transport sends one binary
message per frame, so the relay only re-frames.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import threading
from collections.abc import Iterator

from pydantic_monty._binary import find_monty_binary
from websockets.asyncio.server import ServerConnection, serve


async def _relay(connection: ServerConnection) -> None:
    worker = await asyncio.create_subprocess_exec(
        find_monty_binary(),
        "subprocess",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env={},
    )
    assert worker.stdin is not None and worker.stdout is not None
    stdin, stdout = worker.stdin, worker.stdout

    async def to_worker() -> None:
        async for message in connection:
            data = message if isinstance(message, bytes) else message.encode()
            stdin.write(struct.pack("<I", len(data)) + data)
            await stdin.drain()

    async def from_worker() -> None:
        while True:
            header = await stdout.readexactly(4)
            (size,) = struct.unpack("<I", header)
            await connection.send(await stdout.readexactly(size))

    tasks = [asyncio.create_task(to_worker()), asyncio.create_task(from_worker())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        with contextlib.suppress(ProcessLookupError):
            worker.kill()
        await worker.wait()


@contextlib.contextmanager
def running_relay() -> Iterator[str]:
    """Serve the relay on 127.0.0.1 in a background thread; yields its ``ws://`` URL."""
    loop = asyncio.new_event_loop()
    ready: asyncio.Future[str] = loop.create_future()
    stop = asyncio.Event()

    async def main() -> None:
        async with serve(_relay, "127.0.0.1", 0, max_size=None) as server:
            port = next(iter(server.sockets)).getsockname()[1]
            ready.set_result(f"ws://127.0.0.1:{port}")
            await stop.wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    url = asyncio.run_coroutine_threadsafe(_wait(ready), loop).result(timeout=10)
    try:
        yield url
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=10)
        loop.close()


async def _wait(future: asyncio.Future[str]) -> str:
    return await future
