"""Running ``asyncai serve-mcp`` for tests: stdio parameters for the SDK client, and an HTTP server
process whose URL is read from its ``listening on`` line (no sleeps, no polling); an SDK client
session over HTTP, its ``run_code`` calls, and the server's NDJSON log."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from asyncai.code_mode.engine.contract import EMPTY_STRING_TEXT, NO_OUTPUT_TEXT
from asyncai.code_mode.engine.values import dump_json
from asyncai.serve.server import AUDIT_META_KEY

BIN = Path(sys.executable).parent
ASYNCAI = str(BIN / "asyncai")
SIMPLE = str(BIN / "asyncai-mcp-simple")
LISTENING = re.compile(r"listening on (http://\S+)")
T = TypeVar("T")

TOKEN = "s3cret-test-token"
ENV = {"ASYNCAI_MCP_TOKEN": TOKEN, "HOME": "/nonexistent-home"}
PROTOCOL = "2025-11-25"
RAW_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def stdio_params(*args: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    """``asyncai serve-mcp ARGS`` as a stdio server for ``mcp.Client(stdio_client(...))``."""
    return StdioServerParameters(
        command=ASYNCAI, args=["serve-mcp", *args], env={**os.environ, **(env or {})}
    )


@dataclass
class HttpServe:
    url: str
    process: subprocess.Popen[str]
    stderr_lines: list[str] = field(default_factory=list)
    arrived: threading.Condition = field(default_factory=threading.Condition)

    def add_line(self, line: str) -> None:
        with self.arrived:
            self.stderr_lines.append(line)
            self.arrived.notify_all()

    def wait_for(self, found: Callable[[list[str]], T], timeout: float = 10) -> T:
        """Block until ``found(stderr_lines)`` is truthy (woken by each new line); its value.
        ``AssertionError`` after ``timeout`` seconds."""
        with self.arrived:
            value = found(list(self.stderr_lines))
            if not value:
                self.arrived.wait_for(lambda: found(list(self.stderr_lines)), timeout)
                value = found(list(self.stderr_lines))
        assert value, f"not in serve-mcp's stderr within {timeout} s"
        return value


@contextmanager
def serve_http(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> Iterator[HttpServe]:
    """``asyncai serve-mcp --http 127.0.0.1:0 ARGS``; yields once it prints its URL. Its later stderr
    is collected in ``stderr_lines``; the process is terminated and reaped on exit."""
    process = subprocess.Popen(
        [ASYNCAI, "serve-mcp", "--http", "127.0.0.1:0", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert process.stderr is not None
    early: list[str] = []
    url = None
    for line in process.stderr:  # blocks until the line arrives or the process ends
        early.append(line)
        match = LISTENING.search(line)
        if match:
            url = match.group(1)
            break
    if url is None:
        process.wait(timeout)
        raise AssertionError(f"serve-mcp did not start: {''.join(early)}")
    served = HttpServe(url, process, early)

    def read() -> None:
        for line in process.stderr or []:
            served.add_line(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        yield served
    finally:
        process.terminate()
        try:
            process.wait(timeout)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        reader.join(5)


@asynccontextmanager
async def client(url: str, token: str | None = TOKEN, **headers: str) -> AsyncIterator[Client]:
    """A legacy (handshake, ``Mcp-Session-Id``) SDK client session."""
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as hc:
        transport = streamable_http_client(url, http_client=hc, max_sse_event_size=None)
        async with Client(transport, mode="legacy") as session:
            yield session


@dataclass(frozen=True)
class Ran:
    """A ``run_code`` result, once ``ran`` checked that its text and structured content agree."""

    text: str
    """The first text block: the value, or the error."""
    content: dict[str, Any]
    """The structured content: what a client such as Claude Code hands its model."""
    audit: dict[str, Any]
    """The nested calls' audit, from ``_meta``."""
    is_error: bool


def first_block(content: dict[str, Any]) -> str:
    """The first text block a structured content must come with (``engine.contract``'s rendering)."""
    if "error" in content:
        return str(content["error"])
    value, output = content["value"], content.get("output")
    if output is not None:
        body = dump_json({"output": output} if value is None else {"output": output, "result": value})
    elif value is None:
        body = NO_OUTPUT_TEXT
    elif isinstance(value, str):
        body = value or EMPTY_STRING_TEXT
    else:
        body = dump_json(value)
    return body if "notice" not in content else f"{content['notice']}\n{body}"


def ran(result: CallToolResult | dict[str, Any]) -> Ran:
    """``result`` (or its JSON) read, once its text blocks and structured content say the same and
    no audit is in what a model reads."""
    if isinstance(result, dict):
        result = CallToolResult.model_validate(result)
    content = result.structured_content
    assert content is not None, result
    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    assert len(texts) == len(result.content), "only text blocks"
    assert texts[0] == first_block(content), (texts[0], content)
    assert ("error" in content) == bool(result.is_error)
    shown = [content[key] for key in ("variables",) if key in content]
    assert texts[1 : 1 + len(shown)] == shown
    assert ("repl" in content) == (len(texts) == 2 + len(shown)), texts
    assert set(content) <= {"value", "output", "error", "notice", "variables", "repl"}, content
    audit = (result.meta or {}).get(AUDIT_META_KEY)
    assert isinstance(audit, dict) and {"nested_calls", "nested_call_counts"} <= set(audit), result.meta
    return Ran(texts[0], content, audit, bool(result.is_error))


async def run_code(session: Client, code: str) -> Ran:
    return ran(await session.call_tool("run_code", {"code": code}))


def log(served: HttpServe) -> list[dict[str, Any]]:
    return [json.loads(line) for line in list(served.stderr_lines) if line.startswith("{")]


async def wait_for_log(served: HttpServe, found: Callable[[list[dict[str, Any]]], Any]) -> Any:
    """Wait (in a thread, woken by each new stderr line) until ``found`` holds for the log."""
    return await anyio.to_thread.run_sync(lambda: served.wait_for(lambda _: found(log(served))))
