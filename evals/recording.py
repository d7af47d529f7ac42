"""Model exchanges, recorded and replayed.

``Recorder`` is a loopback proxy in front of a real OpenAI-compatible server: each chat request and
the reply it got are kept (with the world's paths and ports replaced by placeholders, so a
recording made in one world replays in another), and the token counts summed. ``Replayer`` is a
loopback server that answers each request with the recorded reply, after checking the request is
the recorded one: a request that changed gets no answer, and ``mismatch`` says how it changed.
"""

from __future__ import annotations

import difflib
import json
import re
import socket
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

RERECORD = "make eval EVAL_ARGS='--stale'"
RECORDINGS = Path(__file__).resolve().parent / "recordings"
"""Where ``make eval --record`` keeps each attempt's exchanges, and ``make test`` finds them."""


@dataclass
class Exchange:
    request: dict[str, Any]
    reply: dict[str, Any]
    status: int = 200


def swap(value: Any, replacements: dict[str, str]) -> Any:
    """``value`` (JSON data) with every occurrence of each key replaced by its value, in strings."""
    text = json.dumps(value, ensure_ascii=False)
    for old, new in sorted(replacements.items(), key=lambda item: -len(item[0])):
        text = text.replace(
            json.dumps(old, ensure_ascii=False)[1:-1], json.dumps(new, ensure_ascii=False)[1:-1]
        )
    return json.loads(text)


_WORLD_PATH = re.compile(r"/tmp/asyncai-eval-\w+")
_LOOPBACK_URL = re.compile(r"http://127\.0\.0\.1:\d+")


def stable(text: str) -> str:
    """``text`` with what differs between two worlds (their directory and loopback ports) named
    the same way: two runs of one attempt in two worlds then read alike."""
    return _LOOPBACK_URL.sub("http://127.0.0.1:PORT", _WORLD_PATH.sub("{WORLD}", text))


def recorded_programs(records: Iterable[dict[str, Any]]) -> list[str]:
    """The distinct programs a real model wrote in recorded attempts, in order: ``run_code``'s code
    as the harness ran it (the calls in the requests are the repaired ones), and the ```python
    blocks of text-protocol replies."""
    from asyncai.backend.programs import python_code

    programs: list[str] = []
    for record in records:
        for exchange in record["exchanges"]:
            for message in exchange["request"]["messages"]:
                for call in message.get("tool_calls") or ():
                    if call["function"]["name"] == "run_code":
                        code = json.loads(call["function"]["arguments"]).get("code")
                        programs.append(code if isinstance(code, str) else "")
                if record["mode"] == "text" and message["role"] == "assistant":
                    programs.append(python_code(message.get("content")) or "")
    return [program for program in dict.fromkeys(programs) if program.strip()]


_FILE_TIME = re.compile(r"\w{3} \w{3} \d{2} \d{4} \d{2}:\d{2}:\d{2} GMT[+-]\d{4} \([^)]*\)")


def timeless(text: str) -> str:
    """``text`` with the times a file server reports (``created: Sat Dec 05 2026 09:46:07 GMT+0000
    (...)``) as ``{TIME}``: the files of a world made later were made at another time."""
    return _FILE_TIME.sub("{TIME}", text)


def canonical(request: dict[str, Any]) -> str:
    return json.dumps(request, indent=1, sort_keys=True, ensure_ascii=False)


class _LoopbackServer:
    """A Starlette app served by uvicorn on 127.0.0.1 in a thread of its own."""

    def __init__(self, app: Starlette) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(64)
        self.port = self._socket.getsockname()[1]
        config = uvicorn.Config(app, log_config=None, log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name="eval-model", daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()


class Recorder(_LoopbackServer):
    """A proxy to ``upstream`` (an OpenAI-compatible API root) that keeps every exchange."""

    def __init__(self, upstream: str, api_key: str | None = None, timeout: float = 900.0) -> None:
        self.upstream = upstream.rstrip("/")
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout = timeout
        self.exchanges: list[Exchange] = []
        self.placeholders: dict[str, str] = {}
        """The current world's paths and ports, by the placeholder a recording keeps instead."""
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self._tls = httpx2.create_ssl_context()
        """Made once: each request's client would spend 30 ms making its own."""
        self.stop_after: int | None = None
        """Refuse, unsent, every request of an attempt after this many (``evals.screen``: 1)."""
        super().__init__(Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])]))

    def take(self) -> tuple[list[Exchange], int, int]:
        """The exchanges and token counts since the last ``take``."""
        taken = (self.exchanges, self.prompt_tokens, self.completion_tokens)
        self.exchanges, self.prompt_tokens, self.completion_tokens = [], 0, 0
        return taken

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        if body.get("stream"):
            return JSONResponse({"error": {"message": "the eval's recorder takes no streamed requests"}}, 400)
        if self.stop_after is not None and len(self.exchanges) >= self.stop_after:
            refused = {"error": {"message": f"screening: stopped after {self.stop_after} request(s)"}}
            self.exchanges.append(Exchange(swap(body, self.placeholders), refused, 400))
            return JSONResponse(refused, 400)
        async with httpx2.AsyncClient(timeout=self.timeout, verify=self._tls) as client:
            answer = await client.post(f"{self.upstream}/chat/completions", json=body, headers=self.headers)
        try:
            reply = answer.json()
        except ValueError:
            reply = {"error": {"message": answer.text[:2000]}}
        usage = reply.get("usage") if isinstance(reply, dict) else None
        if isinstance(usage, dict):
            self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            self.completion_tokens += int(usage.get("completion_tokens") or 0)
        self.exchanges.append(
            Exchange(swap(body, self.placeholders), swap(reply, self.placeholders), answer.status_code)
        )
        return JSONResponse(reply, answer.status_code)


class Replayer(_LoopbackServer):
    """Answers the recorded requests, in order, with their recorded replies: those of the attempt
    last ``load``-ed (one server for many replays, as one model server answers a whole run)."""

    def __init__(self) -> None:
        self.exchanges: list[Exchange] = []
        self.values: dict[str, str] = {}
        """The replaying world's values, by the placeholder a recording holds in their place."""
        self.served = 0
        self.mismatch: str | None = None
        self._lock = threading.Lock()
        super().__init__(Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])]))

    def load(self, exchanges: list[Exchange], values: dict[str, str]) -> None:
        """Answer with ``exchanges`` from now on, in a world whose values are ``values``."""
        with self._lock:
            self.exchanges, self.values, self.served, self.mismatch = exchanges, values, 0, None

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        with self._lock:
            if self.served >= len(self.exchanges):
                self.mismatch = f"request {self.served + 1} was never recorded:\n{canonical(body)[:3000]}"
                return JSONResponse({"error": {"message": "not recorded"}}, 400)
            recorded = self.exchanges[self.served]
            self.served += 1
        wanted = swap(recorded.request, self.values)
        if timeless(canonical(body)) != timeless(canonical(wanted)):
            diff = difflib.unified_diff(
                canonical(wanted).splitlines(),
                canonical(body).splitlines(),
                "recorded",
                "now",
                lineterm="",
                n=2,
            )
            self.mismatch = f"request {self.served} changed since it was recorded:\n" + "\n".join(
                list(diff)[:80]
            )
            return JSONResponse({"error": {"message": "the request changed since it was recorded"}}, 400)
        return JSONResponse(swap(recorded.reply, self.values), recorded.status)
