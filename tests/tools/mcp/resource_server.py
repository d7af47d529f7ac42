"""A stdio MCP server with resources and a prompt but no tools (lowlevel ``Server``, so it declares
no ``tools`` capability): ``python tests/tools/mcp/resource_server.py NAME``.

Resources: ``NAME://doc/0`` .. ``NAME://doc/4`` (text), listed two per page, and ``NAME://bin``
(bytes 0..255, base64). ``NAME://broken`` is listed but every read of it fails; reading the
unlisted ``NAME://exit`` ends the server process.
"""

from __future__ import annotations

import base64
import os
import sys

import anyio
import mcp.types as mt
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

PAGE = 2


def build(name: str) -> Server:
    resources = [
        mt.Resource(uri=f"{name}://doc/{i}", name=f"doc-{i}", mime_type="text/plain", description=f"doc {i}")
        for i in range(5)
    ]
    resources.append(
        mt.Resource(uri=f"{name}://bin", name="bin", mime_type="application/octet-stream", size=256)
    )
    resources.append(mt.Resource(uri=f"{name}://broken", name="broken"))

    async def list_resources(ctx: object, params: mt.PaginatedRequestParams | None) -> mt.ListResourcesResult:
        start = int(params.cursor) if params and params.cursor else 0
        end = start + PAGE
        return mt.ListResourcesResult(
            resources=resources[start:end], next_cursor=str(end) if end < len(resources) else None
        )

    async def read_resource(ctx: object, params: mt.ReadResourceRequestParams) -> mt.ReadResourceResult:
        uri = str(params.uri)
        if uri == f"{name}://exit":
            os._exit(3)
        if uri == f"{name}://bin":
            blob = base64.b64encode(bytes(range(256))).decode()
            part: mt.TextResourceContents | mt.BlobResourceContents = mt.BlobResourceContents(
                uri=uri, mime_type="application/octet-stream", blob=blob
            )
        elif uri.startswith(f"{name}://doc/"):
            part = mt.TextResourceContents(uri=uri, mime_type="text/plain", text=f"{name} says {uri}")
        else:
            raise MCPError(code=mt.INVALID_PARAMS, message=f"no resource {uri}\nsecond line")
        return mt.ReadResourceResult(contents=[part])

    async def list_prompts(ctx: object, params: mt.PaginatedRequestParams | None) -> mt.ListPromptsResult:
        return mt.ListPromptsResult(prompts=[mt.Prompt(name="summarise", description="Summarise a doc")])

    return Server(
        name,
        version="0.0.1",
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
    )


async def main(name: str) -> None:
    server = build(name)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main, sys.argv[1] if len(sys.argv) > 1 else "res")
