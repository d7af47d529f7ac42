"""Two changes to the ``mcp`` 2.3 stdio client: linear line reassembly, and adopting a server
process that was started early (``early_start``).

Line reassembly:

``mcp.client.stdio`` rebuilds ``buffer + chunk`` and splits it for every 64 KiB chunk, so one
large JSON-RPC line costs O(n²): a 10 MB structured tool result took 6.2 s here, 1.1 s with this
fix; 10 MB of plain text 1.0 s, 62 ms with it (benchmarks/RESULTS.md). Handing the SDK chunks that
already end in a newline makes its loop linear.
The SDK reads stdout through the module-level name ``TextReceiveStream``; we substitute a subclass
that batches chunks up to the next newline. Nothing else about the transport changes.

Adoption: the SDK spawns its process through the module-level ``_create_platform_compatible_process``;
inside ``adopting(process)`` that returns the given, already running process instead.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

import anyio
import mcp.client.stdio as sdk_stdio
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream

_spawn = sdk_stdio._create_platform_compatible_process
_adopted: contextvars.ContextVar[Process | None] = contextvars.ContextVar("asyncai_adopted", default=None)


class LineBatchingTextReceiveStream(TextReceiveStream):
    """A text stream whose every chunk ends at a newline (or at the end of the stream)."""

    async def receive(self) -> str:
        parts = [await super().receive()]
        while "\n" not in parts[-1]:
            try:
                parts.append(await super().receive())
            except anyio.EndOfStream:
                break
        return "".join(parts)


@contextlib.contextmanager
def adopting(process: Process) -> Iterator[None]:
    """The next stdio transport opened in this context uses ``process`` instead of spawning one."""
    token = _adopted.set(process)
    try:
        yield
    finally:
        _adopted.reset(token)


async def _spawn_or_adopt(*args: Any, **kwargs: Any) -> Any:
    process = _adopted.get()
    if process is None:
        return await _spawn(*args, **kwargs)
    _adopted.set(None)
    return process


def apply() -> None:
    sdk_stdio.TextReceiveStream = LineBatchingTextReceiveStream  # type: ignore[attr-defined]
    sdk_stdio._create_platform_compatible_process = _spawn_or_adopt
