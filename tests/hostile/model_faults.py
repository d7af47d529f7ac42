"""A scripted model server that fails on cue: ``ScriptedOpenAI`` plus a connection cut mid-stream.

``two_prompt_responder(after_first)`` answers by what the conversation holds rather than by
position, so it does not care how often the backend retries a failed request:

* prompt ``first``: a ``run_code`` call (``first_code``), then, once its result is in, ``after_first``
  (the fault under test);
* prompt ``second``: a ``run_code`` call (``1 + 1``), then a text reply echoing its result.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.responses import Response, StreamingResponse

from tests.fakes.openai_server import ScriptedOpenAI, call, text_reply, tool_reply

CUT = {"cut": True}
"""A script entry: a streamed answer that starts, then the connection is dropped."""


class ConnectionCut(Exception):
    """Raised inside the streaming body so uvicorn aborts the connection mid-response."""


class _DropCuts(logging.Filter):
    """uvicorn logs the aborted response as an application error; it is the point of the test."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], ConnectionCut))


class CuttingOpenAI(ScriptedOpenAI):
    """``ScriptedOpenAI`` that also understands ``{"cut": True}``: status 200, an SSE stream with one
    valid chunk and half of a second one, then the TCP connection is closed without the final chunk."""

    _quiet = _DropCuts()

    def start(self) -> CuttingOpenAI:
        super().start()
        logging.getLogger("uvicorn.error").addFilter(self._quiet)
        return self

    def stop(self) -> None:
        super().stop()
        logging.getLogger("uvicorn.error").removeFilter(self._quiet)

    def _respond(self, spec: dict[str, Any], body: dict[str, Any], number: int) -> Response:
        if not spec.get("cut"):
            return super()._respond(spec, body, number)

        async def broken() -> AsyncIterator[bytes]:
            first = {
                "id": f"chatcmpl-{number}",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": self.model,
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hal"}}],
            }
            yield f"data: {json.dumps(first)}\n\n".encode()
            yield b'data: {"id": "chatcmpl-cut", "choices": [{"index": 0, "delta": {"cont'
            raise ConnectionCut("the model server dropped the connection mid-stream")

        return StreamingResponse(broken(), media_type="text/event-stream")


def _prompt(body: dict[str, Any]) -> str:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    content = users[-1]["content"] if users else ""
    return content if isinstance(content, str) else json.dumps(content)


def two_prompt_responder(
    after_first: dict[str, Any], first_code: str = "x = 41"
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def respond(body: dict[str, Any]) -> dict[str, Any]:
        last = body["messages"][-1]
        first = _prompt(body).startswith("first")
        if last["role"] == "user":
            return tool_reply(call("run_code", {"code": first_code if first else "1 + 1"}))
        if first:
            return after_first
        return text_reply(f"result: {last['content']}")

    return respond
