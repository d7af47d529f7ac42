"""``asyncai serve-mcp --http``: per-session REPLs, the audit, the bearer token, the Origin check, the
bind rules, and sessions released when the client leaves or disconnects mid-snippet."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import subprocess
import threading
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import MCPError
from mcp.types import INVALID_PARAMS

from .helpers import (
    ASYNCAI,
    ENV,
    INITIALIZE,
    PROTOCOL,
    RAW_HEADERS,
    SIMPLE,
    TOKEN,
    HttpServe,
    client,
    log,
    ran,
    run_code,
    serve_http,
    wait_for_log,
)

pytestmark = pytest.mark.anyio


@dataclass
class Fixture:
    """The loopback site ``http_get`` fetches from; ``/slow/NAME`` sets ``entered[NAME]`` and then
    blocks until ``release`` (set in teardown)."""

    url: str
    paths: list[str] = field(default_factory=list)
    entered: defaultdict[str, threading.Event] = field(default_factory=lambda: defaultdict(threading.Event))
    release: threading.Event = field(default_factory=threading.Event)


@pytest.fixture(scope="module")
def site() -> Iterator[Fixture]:
    fixture = Fixture("")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            fixture.paths.append(self.path)
            if self.path.startswith("/fail-after/"):  # once /slow/NAME is in flight: no response at all
                fixture.entered[self.path.removeprefix("/fail-after/")].wait(30)
                return
            if self.path.startswith("/slow/"):
                fixture.entered[self.path.removeprefix("/slow/")].set()
                fixture.release.wait(60)
            body = json.dumps({"path": self.path, "items": [{"n": i} for i in range(50)]}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):  # the caller gave up (the mid-snippet disconnect)
                self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fixture.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield fixture
    fixture.release.set()
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def shared() -> Iterator[HttpServe]:
    """One verbose, token-protected server for the tests that need nothing of their own."""
    with serve_http("--verbose", "--mcp-stdio", SIMPLE, env=ENV) as served:
        yield served


async def refused_by_sdk_client(url: str, token: str | None = TOKEN, **headers: str) -> None:
    with pytest.raises(ExceptionGroup) as refused:
        async with client(url, token, **headers):
            pass
    assert refused.group_contains(MCPError, match="error response", depth=2)


def sessions_that_ran(events: list[dict[str, Any]]) -> list[str]:
    keys = [e["session"] for e in events if e["event"] == "serve.run_code"]
    return list(dict.fromkeys(keys))


def released(events: list[dict[str, Any]]) -> list[str]:
    return [e["session"] for e in events if e["event"] == "serve.session_released"]


async def test_each_http_session_has_its_own_repl(shared: HttpServe) -> None:
    async with client(shared.url) as a, client(shared.url) as b:
        assert (await run_code(a, "x = 1")).audit["nested_calls"] == []
        await run_code(b, "x = 2")
        assert (await run_code(a, "x")).content["value"] == 1
        assert (await run_code(b, "x")).content["value"] == 2
        await run_code(a, "x += 10")
        assert (await run_code(a, "x * 2")).content["value"] == 22, "a session's state persists"
        assert (await run_code(b, "x")).content["value"] == 2


async def test_gathered_calls_return_the_filtered_value_and_the_audit(
    site: Fixture, shared: HttpServe
) -> None:
    code = (
        "import asyncio, json\n"
        f"a, b = await asyncio.gather(http_get(url='{site.url}/a'), http_get(url='{site.url}/b'))\n"
        "[json.loads(r['body'])['path'] + ':' + str(len(json.loads(r['body'])['items'])) for r in (a, b)]"
    )
    async with client(shared.url) as session:
        content = await run_code(session, code)
    assert content.content == {"value": ["/a:50", "/b:50"], "variables": content.content["variables"]}
    assert content.text == '["/a:50","/b:50"]', "only the filtered value"
    calls = sorted(content.audit["nested_calls"], key=lambda call: call["arguments"]["url"])
    assert [call["arguments"] for call in calls] == [{"url": f"{site.url}/a"}, {"url": f"{site.url}/b"}]
    for call in calls:
        assert call["tool"] == "http_get" and call["is_error"] is False and call["mutating"] is False
        assert call["bytes"] > 50 * len('{"n": 0}'), "bytes counts the whole response the snippet saw"


async def test_the_bearer_token_is_required(shared: HttpServe) -> None:
    async with httpx2.AsyncClient(timeout=30) as hc:
        for auth in ({}, {"Authorization": "Bearer wrong-token"}, {"Authorization": TOKEN}):
            refused = await hc.post(shared.url, json=INITIALIZE, headers={**RAW_HEADERS, **auth})
            assert refused.status_code == 401, auth
            assert refused.headers["www-authenticate"] == "Bearer"
        accepted = await hc.post(
            shared.url, json=INITIALIZE, headers={**RAW_HEADERS, "Authorization": f"Bearer {TOKEN}"}
        )
        assert accepted.status_code == 200 and "mcp-session-id" in accepted.headers
    for token in (None, "wrong-token"):
        await refused_by_sdk_client(shared.url, token=token)
    async with client(shared.url) as session:
        assert (await run_code(session, "6 * 7")).content["value"] == 42


async def test_no_auth_on_loopback_needs_no_token() -> None:
    # A token in the environment (a developer's shell) does not override the typed --no-auth.
    with serve_http("--no-auth", "--mcp-stdio", SIMPLE, env=ENV) as served:
        async with client(served.url, token=None) as session:
            assert (await run_code(session, "6 * 7")).content["value"] == 42


async def test_a_foreign_origin_is_refused_and_nothing_runs(site: Fixture, shared: HttpServe) -> None:
    async with httpx2.AsyncClient(timeout=30, headers={"Authorization": f"Bearer {TOKEN}"}) as hc:
        opened = await hc.post(shared.url, json=INITIALIZE, headers=RAW_HEADERS)
        assert opened.status_code == 200
        headers = {
            **RAW_HEADERS,
            "Mcp-Session-Id": opened.headers["mcp-session-id"],
            "MCP-Protocol-Version": PROTOCOL,
        }
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await hc.post(shared.url, json=initialized, headers=headers)).status_code == 202

        def call(path: str) -> dict[str, Any]:
            code = f"r = await http_get(url='{site.url}{path}')\nr['status']"
            params = {"name": "run_code", "arguments": {"code": code}}
            return {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}

        evil = await hc.post(
            shared.url, json=call("/evil"), headers={**headers, "Origin": "http://evil.example"}
        )
        assert evil.status_code == 403
        local = f"http://127.0.0.1:{httpx2.URL(shared.url).port}"
        fine = await hc.post(shared.url, json=call("/fine"), headers={**headers, "Origin": local})
        assert fine.status_code == 200
        # The one event with data: the stream opens with a priming event (an id, no data).
        [data] = [
            line[5:] for line in fine.text.splitlines() if line.startswith("data:") and line[5:].strip()
        ]
        assert ran(json.loads(data)["result"]).content["value"] == 200
    await refused_by_sdk_client(shared.url, Origin="http://evil.example")
    assert "/fine" in site.paths, "the same call from a local Origin runs"
    assert "/evil" not in site.paths
    key = f"http:{opened.headers['mcp-session-id']}"
    logged = await wait_for_log(shared, lambda events: [e for e in events if e.get("session") == key])
    assert [e["event"] for e in logged if e["event"] == "serve.run_code"] == ["serve.run_code"]


def serve_mcp(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": "/nonexistent-home"}
    env.pop("ASYNCAI_MCP_TOKEN", None)
    return subprocess.run(
        [ASYNCAI, "serve-mcp", *args, "--mcp-stdio", SIMPLE],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--http", "0.0.0.0:0", "--no-auth"], "--allow-remote"),
        (["--http", "10.1.2.3:0", "--token-file", "TOKEN"], "--allow-remote"),
        (["--http", "0.0.0.0:0", "--no-auth", "--allow-remote"], "--no-auth is only allowed on a loopback"),
        (["--http", "nope", "--no-auth"], "HOST:PORT"),
        (["--http", "host:99999", "--no-auth"], "HOST:PORT"),
        (["--http", "127.0.0.1:0"], "--token-file"),
        (["--http", "127.0.0.1:0", "--no-auth", "--token-file", "TOKEN"], "contradict"),
    ],
)
def test_bad_http_configurations_are_one_line_errors(args: list[str], needle: str, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    done = serve_mcp(*[str(token_file) if arg == "TOKEN" else arg for arg in args])
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("asyncai: "), done.stderr
    assert needle in done.stderr
    if args == ["--http", "127.0.0.1:0"]:
        assert "ASYNCAI_MCP_TOKEN" in done.stderr


async def test_a_session_is_released_when_its_client_leaves() -> None:
    with serve_http("--verbose", "--mcp-stdio", SIMPLE, env=ENV) as served:
        async with client(served.url) as first:
            await run_code(first, "x = 1")
        async with client(served.url) as second:
            assert "NameError" in (await run_code(second, "x")).content["error"], "a new session, a new REPL"
            assert (await run_code(second, "1 + 1")).content["value"] == 2
        logged = await wait_for_log(served, lambda events: len(sessions_that_ran(events)) == 2 and events)
        first_key, second_key = sessions_that_ran(logged)
        assert first_key.startswith("http:") and first_key != second_key
        await wait_for_log(served, lambda events: {first_key, second_key} <= set(released(events)))


async def test_a_client_that_disconnects_mid_snippet(site: Fixture) -> None:
    with serve_http("--verbose", "--mcp-stdio", SIMPLE, env=ENV) as served:
        async with client(served.url) as first:
            await run_code(first, "x = 1")
            async with anyio.create_task_group() as tg:
                tg.start_soon(run_code, first, f"r = await http_get(url='{site.url}/slow/mid')\nr['status']")
                await anyio.to_thread.run_sync(site.entered["mid"].wait, 30)
                tg.cancel_scope.cancel()
        [first_key] = await wait_for_log(served, sessions_that_ran)
        async with client(served.url) as second:
            await run_code(second, "x = 2")
            assert (await run_code(second, "x")).content["value"] == 2, "the server still answers"
        await wait_for_log(served, lambda events: first_key in released(events))
        assert served.process.poll() is None


async def test_a_session_is_released_once(shared: HttpServe) -> None:
    before = set(sessions_that_ran(log(shared)))
    async with client(shared.url) as session:
        await run_code(session, "ended = True")
    async with client(shared.url) as later:
        await run_code(later, "1")
        await run_code(later, "2")  # its log line comes after the first session's release

    def both(events: list[dict[str, Any]]) -> list[str] | None:
        new = [key for key in sessions_that_ran(events) if key not in before]
        runs = [e for e in events if e["event"] == "serve.run_code" and new[1:] == [e["session"]]]
        return new if len(runs) == 2 else None

    ended, _ = await wait_for_log(shared, both)
    assert released(log(shared)).count(ended) == 1


async def test_a_call_left_running_by_a_failed_snippet_is_not_audited_as_a_success(
    site: Fixture, shared: HttpServe
) -> None:
    code = (
        "import asyncio\n"
        f"await asyncio.gather(http_get(url='{site.url}/fail-after/orphan'), "
        f"http_get(url='{site.url}/slow/orphan'))"
    )
    async with client(shared.url) as session:
        content = await run_code(session, code)
    failed, orphan = content.audit["nested_calls"]
    assert failed["is_error"] is True and orphan["arguments"]["url"].endswith("/slow/orphan")
    assert "Server disconnected" in content.content["error"]
    assert orphan["is_error"] is True or orphan["bytes"] > 0, orphan


async def test_http_sessions_announce_list_changes_and_an_unknown_tool_is_a_protocol_error(
    shared: HttpServe,
) -> None:
    async with client(shared.url) as session:
        tools = session.server_capabilities.tools
        assert tools is not None and tools.list_changed is True  # it sends the notices over HTTP too
        with pytest.raises(MCPError) as raised:
            await session.call_tool("no_such_tool", {})
    assert raised.value.code == INVALID_PARAMS and "unknown tool 'no_such_tool'" in raised.value.message
    assert "run_code" in raised.value.message
