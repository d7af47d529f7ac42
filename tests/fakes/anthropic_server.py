"""A scripted Anthropic Messages API on loopback, for driving the real Claude Code CLI in tests.

    with ScriptedAnthropic([use("WaitForMcpServers", {}), use("mcp__asyncai__run_code", {"code": "1"}),
                            say("done")]) as model:
        env = {"ANTHROPIC_BASE_URL": model.base_url, ...}
        ...
        model.requests  # every request that carried tools, as parsed JSON, in order

Claude Code sends its agent's requests with tools and, beside them, small requests of its own (a
title, a quota check) without any; only the former take the next script entry, the others get a
one-word answer, so a test scripts what the agent's model does and nothing else. An entry is a dict
(``use`` or ``say``) or a callable ``(request_body) -> dict`` that sees what the CLI sent. Answers
stream as the Messages API's server-sent events when the request asks for a stream, else JSON.
When the script runs out, the answer is the text ``script exhausted`` and the turn ends.

In print mode the MCP servers connect in the background: a request sent before they did offers
``WaitForMcpServers`` and no ``mcp__`` tool. Such a request is answered with a call of
``WaitForMcpServers`` and takes no script entry, so a script starts where the servers are there.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.fakes.loopback import listening_socket, serving, url_of

WAIT = "WaitForMcpServers"
ScriptEntry = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]
_USAGE = {
    "input_tokens": 10,
    "output_tokens": 5,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}


def use(name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """The model calls ``name`` with ``tool_input``."""
    return {"tool_use": {"name": name, "input": tool_input}}


def say(text: str) -> dict[str, Any]:
    """The model answers ``text`` and ends its turn."""
    return {"text": text}


class ScriptedAnthropic:
    """A loopback Messages API answering the agent's requests from a script; see the module docstring."""

    def __init__(self, script: Iterable[ScriptEntry] = (), *, model: str = "claude-scripted") -> None:
        self.script: list[ScriptEntry] = list(script)
        self.model = model
        self.requests: list[dict[str, Any]] = []
        """The requests that carried tools (the agent's), in order."""
        self.side_requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._served = 0
        self._socket = listening_socket()
        self._serving: Any = None
        self.app = Starlette(routes=[Route("/v1/messages", self._messages, methods=["POST"])])

    @property
    def base_url(self) -> str:
        return url_of(self._socket)

    def __enter__(self) -> ScriptedAnthropic:
        self._serving = serving(self.app, self._socket)
        self._serving.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._serving.__exit__(*exc)

    def tool_results(self) -> list[dict[str, Any]]:
        """Every ``tool_result`` block the agent's last request sent, in order."""
        if not self.requests:
            return []
        return [
            block
            for message in self.requests[-1]["messages"]
            if message["role"] == "user" and isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        ]

    async def _messages(self, request: Request) -> Response:
        body = json.loads(await request.body())
        names = [tool.get("name", "") for tool in body.get("tools") or []]
        entry: ScriptEntry
        with self._lock:
            if not names:
                self.side_requests.append(body)
                entry = say("ok")
            elif WAIT in names and not any(name.startswith("mcp__") for name in names):
                self.requests.append(body)
                entry = use(WAIT, {})
            else:
                self.requests.append(body)
                entry = (
                    self.script[self._served] if self._served < len(self.script) else say("script exhausted")
                )
                self._served += 1
        spec = entry(body) if callable(entry) else entry
        message_id = f"msg_scripted_{len(self.requests)}_{len(self.side_requests)}"
        if "tool_use" in spec:
            block = {"type": "tool_use", "id": f"toolu_scripted{len(self.requests)}", **spec["tool_use"]}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": spec["text"]}
            stop = "end_turn"
        if body.get("stream"):
            return StreamingResponse(
                _events(message_id, self.model, block, stop), media_type="text/event-stream"
            )
        return JSONResponse(_message(message_id, self.model, [block], stop))


def _message(message_id: str, model: str, content: list[dict[str, Any]], stop: str | None) -> dict[str, Any]:
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": _USAGE,
    }


async def _events(message_id: str, model: str, block: dict[str, Any], stop: str) -> AsyncIterator[bytes]:
    """One message of one content block as the Messages API streams it."""
    if block["type"] == "tool_use":
        start = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    else:
        start = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    events = [
        ("message_start", {"type": "message_start", "message": _message(message_id, model, [], None)}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    for name, data in events:
        yield f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
