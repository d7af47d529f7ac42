"""A scripted OpenAI-compatible chat-completions server on loopback, for tests.

    with ScriptedOpenAI([tool_reply(call("run_code", {"code": "1 + 1"})), text_reply("2")]) as server:
        backend = OpenAiCompatibleBackend(BackendConfig(base_url=server.base_url, model="m"))
        ...
        server.requests  # every request body (parsed JSON), in order

The server is a starlette app run by uvicorn in a background thread on ``127.0.0.1`` and a port
the kernel picks. The listening socket is bound before the thread starts, so ``base_url`` is usable
at once (connections wait in the backlog until uvicorn accepts them): no sleeps, no polling.

A script is a list of entries answered in order, one per ``POST .../chat/completions``. An entry is
a dict, or a callable ``(request_body) -> dict`` for dynamic answers. Dict keys (all optional):

``content``            assistant text (``None``/absent: ``null``)
``tool_calls``         list of ``{"name", "arguments", "id"}``; ``arguments`` is sent as given (a
                       string, or an object to imitate servers that send decoded arguments); no
                       ``id`` key means an id is generated, ``"id": None`` sends ``null``
``finish_reason``      default ``"tool_calls"`` when there are calls, else ``"stop"``
``reasoning_content``  sent next to ``content``
``status``             HTTP error status to answer with (``error`` is its message)
``error_body``         with ``status``: the error body verbatim (a dict, sent as JSON), as a real
                       server words it (llama.cpp's ``exceed_context_size_error``, say)
``headers``            extra response headers (e.g. ``{"Retry-After": "0"}``)
``raw``                the response body verbatim (str/bytes, or JSON for dict/list)
``stream``             ``True``/``False`` to force SSE or JSON; default follows the request
``all_index_zero``     streaming: every call at ``index`` 0
``arg_chunk``          streaming: split arguments into deltas of this many characters
``content_chunk``      streaming: split content into deltas of this many characters
``resend_name``        streaming: repeat the function name on every delta
``fresh_ids``          streaming: a new id on every argument delta (LM Studio style)
``usage``              streaming: send the ``choices: []`` usage chunk (default ``True``)
``hold_at``            streaming: before chunk N, wait until the test sets ``release`` (a
                       ``threading.Event`` it gives as ``release``); ``holding`` is set meanwhile
``chunk_delay``        streaming: seconds between chunks (a model writing at a given rate)

``stream_ended`` records ``time.perf_counter()`` as each streamed answer's last chunk goes out (just
before it, so the client cannot have seen the end earlier).

When the script runs out the server answers HTTP 500 "script exhausted".
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

import anyio
import anyio.to_thread
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

ScriptEntry = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]

_USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def call(name: str, arguments: dict[str, Any] | str | None = None, **extra: Any) -> dict[str, Any]:
    """A scripted tool call; dict arguments are JSON-encoded like a well-behaved server does."""
    encoded = (
        json.dumps(arguments if arguments is not None else {})
        if not isinstance(arguments, str)
        else arguments
    )
    return {"name": name, "arguments": encoded, **extra}


def text_reply(content: str, **extra: Any) -> dict[str, Any]:
    return {"content": content, **extra}


def tool_reply(*calls: dict[str, Any], content: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"content": content, "tool_calls": list(calls), **extra}


HELD_ARG_CHUNK = 6


def held_reply(code: str, after: str) -> dict[str, Any]:
    """A ``run_code`` call streamed ``HELD_ARG_CHUNK`` characters at a time, held once ``after`` (a part
    of ``code``) and the first word after it have gone out, until the test releases it."""
    arguments = json.dumps({"code": code})
    sent = arguments.index(json.dumps(after)[1:-1]) + len(json.dumps(after)[1:-1]) + 4
    # chunk 0 is the role, 1 the call's name and id, then the argument pieces
    hold_at = 2 + -(-sent // HELD_ARG_CHUNK)
    return tool_reply(
        call("run_code", arguments),
        arg_chunk=HELD_ARG_CHUNK,
        hold_at=hold_at,
        holding=threading.Event(),
        release=threading.Event(),
    )


def _pieces(text: str, size: int | None) -> list[str]:
    if not size or size <= 0 or not text:
        return [text]
    return [text[i : i + size] for i in range(0, len(text), size)]


class ScriptedOpenAI:
    """A loopback OpenAI-compatible server answering from a script; see the module docstring."""

    def __init__(self, script: Iterable[ScriptEntry] = (), *, model: str = "fake-model") -> None:
        self.script: list[ScriptEntry] = list(script)
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.raw_requests: list[bytes] = []
        self.request_headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._served = 0
        self._socket: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        self.stream_ended: list[float] = []
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def add(self, *entries: ScriptEntry) -> None:
        with self._lock:
            self.script.extend(entries)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self.script) - self._served

    def start(self) -> ScriptedOpenAI:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        self._socket = sock
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app,
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=2,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="scripted-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()
        self._server = self._thread = self._socket = None

    def __enter__(self) -> ScriptedOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- handlers -------------------------------------------------------------------------------

    async def _models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": self.model, "object": "model"}]})

    async def _chat(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body = json.loads(raw)
        except ValueError:
            return JSONResponse({"error": {"message": "request body is not JSON"}}, status_code=400)
        with self._lock:
            number = len(self.requests) + 1
            self.requests.append(body)
            self.raw_requests.append(raw)
            self.request_headers.append(dict(request.headers))
            entry = self.script[self._served] if self._served < len(self.script) else None
            self._served += 1
        if entry is None:
            message = f"ScriptedOpenAI: script exhausted after {len(self.script)} responses"
            return JSONResponse({"error": {"message": message}}, status_code=500)
        spec = entry(body) if callable(entry) else entry
        return self._respond(spec, body, number)

    def _respond(self, spec: dict[str, Any], body: dict[str, Any], number: int) -> Response:
        headers = {str(k): str(v) for k, v in (spec.get("headers") or {}).items()}
        if "status" in spec and spec["status"] >= 400:
            error_text = spec.get("error") or f"scripted HTTP {spec['status']}"
            error = spec.get("error_body") or {"error": {"message": error_text, "type": "scripted"}}
            return JSONResponse(error, status_code=spec["status"], headers=headers)
        if "raw" in spec:
            raw = spec["raw"]
            if isinstance(raw, dict | list):
                return JSONResponse(raw, status_code=spec.get("status", 200), headers=headers)
            media_type = spec.get("media_type", "application/json")
            return Response(raw, status_code=spec.get("status", 200), headers=headers, media_type=media_type)
        calls = [self._with_id(c, number, i) for i, c in enumerate(spec.get("tool_calls") or [])]
        finish_reason = spec.get("finish_reason", "tool_calls" if calls else "stop")
        stream = spec.get("stream")
        if stream is None:
            stream = bool(body.get("stream"))
        if stream:
            chunks = self._chunks(spec, calls, finish_reason, number)
            return StreamingResponse(self._sse(chunks, spec), media_type="text/event-stream", headers=headers)
        message: dict[str, Any] = {"role": "assistant", "content": spec.get("content")}
        if spec.get("reasoning_content") is not None:
            message["reasoning_content"] = spec["reasoning_content"]
        if calls:
            message["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for c in calls
            ]
        completion = {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": 0,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": _USAGE,
        }
        return JSONResponse(completion, headers=headers)

    @staticmethod
    def _with_id(scripted: dict[str, Any], number: int, index: int) -> dict[str, Any]:
        result = dict(scripted)
        if "id" not in result:
            result["id"] = f"call_srv_{number}_{index}"
        result.setdefault("arguments", "{}")
        return result

    def _chunks(
        self, spec: dict[str, Any], calls: list[dict[str, Any]], finish_reason: str | None, number: int
    ) -> list[dict[str, Any]]:
        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {
                "id": f"chatcmpl-{number}",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": self.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }

        chunks = [chunk({"role": "assistant"})]
        if spec.get("reasoning_content"):
            chunks.append(chunk({"reasoning_content": spec["reasoning_content"]}))
        content = spec.get("content")
        if content:
            chunks.extend(chunk({"content": piece}) for piece in _pieces(content, spec.get("content_chunk")))
        fresh = 0
        for position, scripted in enumerate(calls):
            index = 0 if spec.get("all_index_zero") else position
            first: dict[str, Any] = {
                "index": index,
                "id": scripted["id"],
                "type": "function",
                "function": {"name": scripted["name"], "arguments": ""},
            }
            chunks.append(chunk({"tool_calls": [first]}))
            arguments = scripted["arguments"]
            pieces: list[Any] = (
                _pieces(arguments, spec.get("arg_chunk")) if isinstance(arguments, str) else [arguments]
            )
            for piece in pieces:
                function: dict[str, Any] = {"arguments": piece}
                if spec.get("resend_name"):
                    function["name"] = scripted["name"]
                delta: dict[str, Any] = {"index": index, "function": function}
                if spec.get("fresh_ids"):
                    fresh += 1
                    delta["id"] = f"fresh_{number}_{fresh}"
                chunks.append(chunk({"tool_calls": [delta]}))
        chunks.append(chunk({}, finish_reason))
        if spec.get("usage", True):
            chunks.append(
                {
                    "id": f"chatcmpl-{number}",
                    "object": "chat.completion.chunk",
                    "choices": [],
                    "usage": _USAGE,
                }
            )
        return chunks

    async def _sse(self, chunks: list[dict[str, Any]], spec: dict[str, Any]) -> AsyncIterator[bytes]:
        for number, item in enumerate(chunks):
            if number == spec.get("hold_at"):
                spec["holding"].set()
                await anyio.to_thread.run_sync(spec["release"].wait, 30)
            elif number and spec.get("chunk_delay"):
                await anyio.sleep(spec["chunk_delay"])  # the model's writing speed, not synchronisation
            yield f"data: {json.dumps(item)}\n\n".encode()
        # Before the last bytes go out: after them the client may act before this generator resumes.
        self.stream_ended.append(time.perf_counter())
        yield b"data: [DONE]\n\n"
