"""The FastMCP peer of ``asyncai serve-mcp`` for ``bench_peers.py``: a FastMCP proxy of the bench
stdio server with FastMCP's ``CodeMode`` transform applied, served over stdio.

    python benchmarks/peer_fastmcp_server.py

The proxy keeps one connection to ``bench_server.py`` (FastMCP's stdio transport keeps its
subprocess and session alive). ``CodeMode`` replaces the tools with ``search``, ``get_schema`` and
``execute``; inside ``execute`` a snippet calls ``await call_tool("name", {...})``. The sandbox limits
match asyncai's defaults (30 s execution, 4 GiB heap) and the per-``execute`` call cap is lifted
to ``MAX_TOOL_CALLS`` so the 1,000-call scenario fits, as ``--code-max-calls`` does for asyncai.
"""

from __future__ import annotations

import sys
from pathlib import Path

from fastmcp.client.transports import StdioTransport
from fastmcp.experimental.transforms.code_mode import CodeMode, MontySandboxProvider
from fastmcp.server import create_proxy

BENCH_SERVER = Path(__file__).resolve().with_name("bench_server.py")
MAX_TOOL_CALLS = 2_000
LIMITS = {"max_feed_duration_secs": 30.0, "max_memory": 4 * 1024**3}


def main() -> None:
    backend = StdioTransport(command=sys.executable, args=[str(BENCH_SERVER)])
    proxy = create_proxy(backend, name="fastmcp-code-mode")
    sandbox = MontySandboxProvider(limits=LIMITS)  # type: ignore[arg-type]
    proxy.add_transform(CodeMode(sandbox_provider=sandbox, max_tool_calls=MAX_TOOL_CALLS))
    proxy.run(show_banner=False, log_level="WARNING")


if __name__ == "__main__":
    main()
