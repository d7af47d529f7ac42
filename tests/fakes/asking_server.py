"""An MCP server that asks its client things, for tests: ``python tests/fakes/asking_server.py``.

Written with the SDK's resolvers, so under the 2026-07-28 protocol (what asyncai and this server
negotiate over stdio) its questions ride ``InputRequiredResult`` rounds rather than standalone
server-to-client requests (the npm server-everything covers the 2025 era).

Tools: ``ask_settings`` (a form whose every field has a default: ``colour`` "teal", ``size`` 3),
``roots`` (the client's roots, as URIs) and ``summarise`` (samples the client's model).
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import (
    AcceptedElicitation,
    Elicit,
    ElicitationResult,
    ListRoots,
    MCPServer,
    Resolve,
    Sample,
)
from mcp.types import CreateMessageResult, ListRootsResult, SamplingMessage, TextContent
from pydantic import BaseModel, Field

server = MCPServer("asker", version="0.0.1")


class Settings(BaseModel):
    colour: str = Field(default="teal", description="a colour")
    size: int = Field(default=3, description="a size")


def which_settings() -> Elicit[Settings]:
    return Elicit("Which settings?", Settings)


def the_roots() -> ListRoots:
    return ListRoots()


def summary_request(text: str) -> Sample:
    message = SamplingMessage(role="user", content=TextContent(type="text", text=f"Summarise: {text}"))
    return Sample([message], max_tokens=32, system_prompt="You summarise.")


@server.tool()
async def ask_settings(
    answer: Annotated[ElicitationResult[Settings], Resolve(which_settings)],
) -> dict[str, Any]:
    """Ask for the settings; what the client answered."""
    if isinstance(answer, AcceptedElicitation):
        return {"action": "accept", "content": answer.data.model_dump()}
    return {"action": answer.action}


@server.tool()
async def roots(listed: Annotated[ListRootsResult, Resolve(the_roots)]) -> list[str]:
    """The client's roots."""
    return [str(root.uri) for root in listed.roots]


@server.tool()
async def summarise(text: str, sampled: Annotated[CreateMessageResult, Resolve(summary_request)]) -> str:
    """The client's model summarising ``text``."""
    content = sampled.content
    return f"{sampled.model}: {content.text}" if isinstance(content, TextContent) else sampled.model


if __name__ == "__main__":
    server.run()
