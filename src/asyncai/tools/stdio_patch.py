"""Work around quadratic line reassembly in the ``mcp`` 2.3 stdio client.

``mcp.client.stdio`` rebuilds ``buffer + chunk`` and splits it for every 64 KiB chunk, so one
large JSON-RPC line costs O(n²): a 10 MB structured tool result took 6.2 s here, 1.1 s with this
fix; 10 MB of plain text 1.0 s, 62 ms with it (benchmarks/RESULTS.md). Handing the SDK chunks that
already end in a newline makes its loop linear.
The SDK reads stdout through the module-level name ``TextReceiveStream``; we substitute a subclass
that batches chunks up to the next newline. Nothing else about the transport changes.
"""

from __future__ import annotations

import anyio
import mcp.client.stdio as sdk_stdio
from anyio.streams.text import TextReceiveStream


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


def apply() -> None:
    sdk_stdio.TextReceiveStream = LineBatchingTextReceiveStream  # type: ignore[attr-defined]
