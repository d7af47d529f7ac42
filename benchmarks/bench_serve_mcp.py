"""What serve-mcp saves an MCP client: bytes into the client's context for the same question, asked
directly of the wrapped kcp tools versus through one ``run_code``.

    .venv/bin/python benchmarks/bench_serve_mcp.py

Starts the fixture kcp on loopback and ``asyncai serve-mcp --expose-direct`` wrapping the bundled
read-only kcp server (real kubectl), then asks the quick-start demo's questions both ways with the
``mcp`` SDK client over stdio.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

import mcp.types as mt
from mcp import Client
from mcp.client.stdio import stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.kcp.demo import QUESTIONS, server_command
from tests.kcp.fake_kcp import serve, write_kubeconfig
from tests.serve.helpers import stdio_params

DIRECT_CALLS = (
    ("get_api_resources", {"workspace": "root:app"}),
    ("list_objects", {"workspace": "root:app", "resource": "configmaps"}),
)


def size(result: mt.CallToolResult) -> int:
    """Bytes a client puts into its model's context: every text block."""
    return sum(len(block.text.encode()) for block in result.content if isinstance(block, mt.TextContent))


async def measure(kubeconfig: Path) -> None:
    params = stdio_params("--mcp-stdio", server_command(kubeconfig), "--expose-direct")
    async with Client(stdio_client(params), mode="legacy") as client:
        columns = ["question", "direct tool call: bytes to the client", "run_code: bytes", "time"]
        print("| " + " | ".join(columns) + " |")
        print("|---|---|---|---|")
        for question, (tool, arguments) in zip(QUESTIONS, DIRECT_CALLS, strict=True):
            direct = await client.call_tool(tool, arguments)
            start = time.perf_counter()
            coded = await client.call_tool("run_code", {"code": question.program, "restart": True})
            elapsed = time.perf_counter() - start
            print(f"| {question.text} | {size(direct):,} | {size(coded):,} | {elapsed * 1000:.0f} ms |")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, serve() as (base_url, _):
        kubeconfig = write_kubeconfig(Path(tmp) / "fake-kcp.kubeconfig", base_url)
        asyncio.run(measure(kubeconfig))


if __name__ == "__main__":
    main()
