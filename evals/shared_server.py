"""``python -m evals.shared_server FD``: the bundled ``asyncai-mcp-simple`` (``http_get``) over
Streamable HTTP on the listening socket FD, inherited from the process that made it. The attempts
of one eval run share it (``evals.world.services``): no task can change it, and starting it takes
0.9 s of CPU, nearly all of it importing the MCP SDK.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Sequence

import uvicorn


def main(argv: Sequence[str]) -> None:
    from asyncai.servers.simple import server

    [fd] = argv
    config = uvicorn.Config(server.streamable_http_app(), log_level="error", lifespan="on")
    uvicorn.Server(config).run(sockets=[socket.socket(fileno=int(fd))])


if __name__ == "__main__":
    main(sys.argv[1:])
