"""Resumable SSE streams on the wire (SEP-1699) against a real ``asyncai serve-mcp --http``: a POST's
stream opens with a priming event and a ``retry`` field, and a client whose stream was cut gets
the rest with a GET and ``Last-Event-ID``, while the run goes on and after it ended; a result too
big to keep is not kept, and the resume says so."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import pytest

from asyncai.serve.events import MAX_EVENT_BYTES, RETRY_MS
from asyncai.serve.http import MCP_PATH
from tests.fakes.slow_site import SlowSite, slow_site

from .helpers import ENV, INITIALIZE, PROTOCOL, RAW_HEADERS, SIMPLE, TOKEN, HttpServe, ran, serve_http

pytestmark = pytest.mark.anyio

Event = dict[str, str]
"""One SSE event as sent: its fields (``id``, ``event``, ``data``, ``retry``) and their values."""


@pytest.fixture(scope="module")
def site() -> Iterator[SlowSite]:
    with slow_site() as fixture:
        yield fixture


@pytest.fixture(scope="module")
def served() -> Iterator[HttpServe]:
    # Results up to twice what an event may keep (the default cap is 20,000 chars).
    with serve_http("--code-max-result", str(2 * MAX_EVENT_BYTES), "--mcp-stdio", SIMPLE, env=ENV) as process:
        assert process.url.endswith(MCP_PATH)
        yield process


@dataclass
class Session:
    hc: httpx2.AsyncClient
    url: str
    headers: dict[str, str]

    def call(self, request_id: int, code: str) -> dict[str, Any]:
        params = {"name": "run_code", "arguments": {"code": code}}
        return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}

    @contextlib.asynccontextmanager
    async def post(self, request_id: int, code: str) -> AsyncIterator[AsyncIterator[Event]]:
        """A ``run_code`` call's SSE stream, event by event; leaving cuts it."""
        body = self.call(request_id, code)
        async with self.hc.stream("POST", self.url, json=body, headers=self.headers) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            yield events(response)

    @contextlib.asynccontextmanager
    async def resume(self, last_event_id: str) -> AsyncIterator[AsyncIterator[Event]]:
        headers = {k: v for k, v in self.headers.items() if k != "Content-Type"}
        headers["Last-Event-ID"] = last_event_id
        async with self.hc.stream("GET", self.url, headers=headers) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            yield events(response)


async def events(response: httpx2.Response) -> AsyncIterator[Event]:
    """The events as they arrive, each exactly as sent (an id is not carried over, as a browser
    would, so a priming event is told from the rest)."""
    event: Event = {}
    async for line in response.aiter_lines():
        if not line:
            if event:
                yield event
            event = {}
        elif not line.startswith(":"):  # a comment: the keep-alive ping
            name, _, value = line.partition(":")
            event[name] = value.removeprefix(" ")


async def collect(stream: AsyncIterator[Event]) -> list[Event]:
    return [event async for event in stream]


@contextlib.asynccontextmanager
async def session(served: HttpServe) -> AsyncIterator[Session]:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx2.AsyncClient(headers=auth, timeout=httpx2.Timeout(30, read=120)) as hc:
        opened = await hc.post(served.url, json=INITIALIZE, headers=RAW_HEADERS)
        assert opened.status_code == 200
        headers = {
            **RAW_HEADERS,
            "Mcp-Session-Id": opened.headers["mcp-session-id"],
            "MCP-Protocol-Version": PROTOCOL,
        }
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await hc.post(served.url, json=initialized, headers=headers)).status_code == 202
        yield Session(hc, served.url, headers)


def result(event: Event, request_id: int) -> str:
    message = json.loads(event["data"])
    assert message["id"] == request_id and event["event"] == "message", message
    return ran(message["result"]).text


async def test_a_post_stream_opens_with_a_priming_event_and_a_retry(served: HttpServe) -> None:
    async with session(served) as client, client.post(2, "6 * 7") as stream:
        priming, answer, *rest = await collect(stream)
    assert priming == {"id": priming["id"], "data": "", "retry": str(RETRY_MS)}, "an id, no data"
    assert priming["id"] and answer["id"] and answer["id"] != priming["id"]
    assert result(answer, 2) == "42" and rest == []


async def test_a_stream_cut_mid_run_is_resumed_with_last_event_id(served: HttpServe, site: SlowSite) -> None:
    code = f"r = await http_get(url='{site.url}/slow/cut')\nr['status']"
    async with session(served) as client:
        async with client.post(2, code) as stream:
            priming = await anext(stream)
            await anyio.to_thread.run_sync(site.entered["cut"].wait, 30)  # running, and held there
        assert priming["data"] == "" and "id" in priming
        async with client.resume(priming["id"]) as resumed:
            site.release["cut"].set()  # the run ends while the client is back
            answer, *rest = await collect(resumed)
    assert result(answer, 2).startswith("200") and answer["id"] != priming["id"]
    assert rest == [], "the stream ends with the response"


async def test_a_stream_is_resumed_after_its_run_ended(served: HttpServe) -> None:
    async with session(served) as client:
        async with client.post(3, "'done'") as stream:
            priming, answer = await collect(stream)
        async with client.resume(priming["id"]) as resumed:
            assert await collect(resumed) == [answer], "the same event again, with its id"
        async with client.resume(answer["id"]) as resumed:
            assert await collect(resumed) == [], "nothing after the response"


async def test_a_result_too_big_to_keep_is_not_resent(served: HttpServe) -> None:
    async with session(served) as client:
        async with client.post(4, f"'x' * {MAX_EVENT_BYTES + 1}") as stream:
            priming, answer = await collect(stream)
        assert len(result(answer, 4)) == MAX_EVENT_BYTES + 1, "it went out live"
        async with client.resume(priming["id"]) as resumed:
            [stand_in] = await collect(resumed)
    error = json.loads(stand_in["data"])
    assert error["id"] == 4 and stand_in["id"] == answer["id"]
    assert "cannot be sent again: it is over the 16.0 MB an event may keep" in error["error"]["message"]
