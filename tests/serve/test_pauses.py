"""Approvals that pause a snippet and resume it anywhere: under the stateless 2026-07-28 protocol
with ``--mutations ask``, a mutating call answers ``input_required`` with an elicitation and a
sealed request state; the SDK client's retry with the person's answer resumes the snippet from its
Monty snapshot, on whichever instance receives it (real serve-mcp processes, a real redis-server,
the round-robin proxy)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp.types as mt
import pytest
import redis
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from asyncai.code_mode.engine.finish import ABANDONED_NOTE, ABANDONED_REASON
from asyncai.code_mode.engine.pausing import PausedSnippet
from asyncai.serve.pauses import PausedSnippets
from asyncai.serve.server import PAUSE_GONE
from tests.fakes.redis import redis_server
from tests.fakes.round_robin import round_robin

from .helpers import ENV, TOKEN, HttpServe, log, ran, serve_http
from .test_stdio import TEST_SERVER, Person

pytestmark = pytest.mark.anyio
ASK = ("--mcp-stdio", TEST_SERVER, "--mutations", "ask")
WRITE = (
    "before = await echo(text='read first')\n"
    "try:\n    r = await write_note(text='{0}')\nexcept PermissionError as e:\n    r = str(e)\n[before, r]"
)


@asynccontextmanager
async def modern(url: str, person: Person | None = None) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http,
        Client(
            streamable_http_client(url, http_client=http, max_sse_event_size=None),
            elicitation_callback=person,
        ) as session,
    ):
        assert session.protocol_version == "2026-07-28"
        yield session


def value(result: mt.CallToolResult) -> Any:
    return ran(result).content["value"]


def events(served: HttpServe, name: str) -> list[dict[str, Any]]:
    return [line for line in log(served) if line.get("event") == name]


@pytest.fixture(scope="module")
def asking() -> Any:
    with serve_http(*ASK, env=ENV) as serve:
        yield serve


async def test_the_person_allows_the_call_and_the_snippet_returns_its_value(asking: HttpServe) -> None:
    person = Person("yes")
    async with modern(asking.url, person) as session:
        result = await session.call_tool("run_code", {"code": "kept = 1\n" + WRITE.format("a")})
        assert not result.is_error, result
        assert value(result) == ["read first", {"stored": "a"}]
        assert person.questions == [
            "asyncai: a run_code snippet wants to call write_note(text='a'). Allow it?"
        ]
        handle = (result.structured_content or {})["repl"]
        later = await session.call_tool("run_code", {"code": "[kept, r]", "repl": handle})
    assert value(later) == [1, {"stored": "a"}]
    calls = ran(result).audit["nested_calls"]
    assert [(call["tool"], call["mutating"]) for call in calls] == [("echo", False), ("write_note", True)]


async def test_declined_the_call_is_a_permission_error_at_the_call_site(asking: HttpServe) -> None:
    async with modern(asking.url, Person("no")) as session:
        result = await session.call_tool("run_code", {"code": WRITE.format("b")})
    assert value(result) == ["read first", "write_note() was not run: the user declined it"]
    assert ran(result).audit["nested_calls"][1]["refused"] is True


async def test_a_replayed_or_forged_request_state_is_refused(asking: HttpServe) -> None:
    async with modern(asking.url, Person()) as session:  # it can ask; the test answers itself
        arguments = {"code": WRITE.format("c")}
        first = await session.session.call_tool("run_code", arguments, allow_input_required=True)
        assert isinstance(first, mt.InputRequiredResult) and first.request_state is not None
        [(key, request)] = (first.input_requests or {}).items()
        assert isinstance(request, mt.ElicitRequest) and "write_note(text='c')" in request.params.message
        assert "pause-" not in first.request_state  # sealed: the client cannot read the pause's id
        answer: mt.InputResponses = {key: mt.ElicitResult(action="accept", content={"allow": True})}
        done = await session.session.call_tool(
            "run_code", arguments, input_responses=answer, request_state=first.request_state
        )
        assert value(done) == ["read first", {"stored": "c"}]
        replayed = await session.session.call_tool(
            "run_code", arguments, input_responses=answer, request_state=first.request_state
        )
        assert replayed.is_error and PAUSE_GONE in replayed.content[0].text  # type: ignore[union-attr]
        forged = first.request_state[:-4] + ("AAAA" if not first.request_state.endswith("AAAA") else "BBBB")
        with pytest.raises(MCPError) as refused:
            await session.session.call_tool(
                "run_code", arguments, input_responses=answer, request_state=forged
            )
    assert refused.value.error.code == mt.INVALID_PARAMS


async def test_the_retry_resumes_on_the_other_instance_and_nothing_is_left_behind(tmp_path: Path) -> None:
    with redis_server(tmp_path) as store:
        args = ("--state-store", store.url, *ASK, "-v")
        with (
            serve_http(*args, env=ENV) as a,
            serve_http(*args, env=ENV) as b,
            round_robin([a.url.removesuffix("/mcp"), b.url.removesuffix("/mcp")]) as proxy,
        ):
            async with modern(f"{proxy.url}/mcp", Person("yes", "no")) as session:
                allowed = await session.call_tool("run_code", {"code": "n = 41\n" + WRITE.format("d")})
                handle = (allowed.structured_content or {})["repl"]
                declined = await session.call_tool("run_code", {"code": WRITE.format("e"), "repl": handle})
                after = await session.call_tool("run_code", {"code": "n + 1", "repl": handle})
            paused = events(a, "serve.paused") + events(b, "serve.paused")
            resumed = events(a, "serve.resumed") + events(b, "serve.resumed")
            leftover = redis.Redis.from_url(store.url).keys("asyncai:pause:*")
    assert value(allowed) == ["read first", {"stored": "d"}]
    assert value(declined) == ["read first", "write_note() was not run: the user declined it"]
    assert value(after) == 42
    assert len(paused) == len(resumed) == 2
    for pause in paused:  # each pause was resumed by the instance that did not pause it
        [pausing] = [name for name, served in (("a", a), ("b", b)) if pause in events(served, "serve.paused")]
        [resuming] = [
            name
            for name, served in (("a", a), ("b", b))
            if any(r["pause"] == pause["pause"] for r in events(served, "serve.resumed"))
        ]
        assert pausing != resuming
    assert leftover == []


async def test_a_pause_nobody_answers_expires_and_its_retry_says_so(tmp_path: Path) -> None:
    with (
        redis_server(tmp_path) as store,
        serve_http("--state-store", store.url, *ASK, "--approval-wait", "1", env=ENV) as served,
    ):
        async with modern(served.url, Person()) as session:
            bound = await session.call_tool("run_code", {"code": "x = 1"})
            handle = (bound.structured_content or {})["repl"]
            arguments = {"code": "x = 2\n" + WRITE.format("f"), "repl": handle}
            first = await session.session.call_tool("run_code", arguments, allow_input_required=True)
            assert isinstance(first, mt.InputRequiredResult)
            watcher = redis.Redis.from_url(store.url)
            [stored] = watcher.keys("asyncai:pause:*")
            assert watcher.ttl(stored) <= 1
            _wait_until_gone(watcher, stored)
            [(key, _)] = (first.input_requests or {}).items()
            answer: mt.InputResponses = {key: mt.ElicitResult(action="accept", content={"allow": True})}
            late = await session.session.call_tool(
                "run_code",
                arguments,
                input_responses=answer,
                request_state=first.request_state,
            )
            after = await session.call_tool("run_code", {"code": "[x, r]", "repl": handle})
    assert late.is_error and PAUSE_GONE in late.content[0].text  # type: ignore[union-attr]
    # The REPL went on from the paused snippet, finished as if declined: nothing was written.
    assert after.content[0].text.startswith(ABANDONED_NOTE)  # type: ignore[union-attr]
    assert json.loads(after.content[0].text.removeprefix(ABANDONED_NOTE)) == [  # type: ignore[union-attr]
        2,
        f"this call was not run: {ABANDONED_REASON}",
    ]
    assert not any('"stored": "f"' in line for line in served.stderr_lines)


def _wait_until_gone(client: redis.Redis, key: bytes | str, deadline: float = 10.0) -> None:
    """Redis expires the key by itself; block until it has (a blocking wait on a keyspace event)."""
    client.config_set("notify-keyspace-events", "Ex")
    pubsub = client.pubsub()
    pubsub.psubscribe("__keyevent@*__:expired")
    if not client.exists(key):
        return
    while True:
        message = pubsub.get_message(timeout=deadline)
        assert message is not None, "the pause did not expire"
        if message["type"] == "pmessage" and message["data"] == key:
            return


async def test_pauses_in_memory_expire_and_are_taken_once() -> None:
    now = [0.0]
    pauses = PausedSnippets(ttl=10, clock=lambda: now[0])
    first = PausedSnippet(id="pause-" + "a" * 24, held=())
    await pauses.save(first)
    assert (await pauses.take(first.id)) is not None and await pauses.take(first.id) is None
    for index in range(50):
        await pauses.save(PausedSnippet(id=f"pause-{index:024d}", held=()))
        now[0] += 1
    assert len(pauses) <= 11  # the expired ones went as new ones came
    assert await pauses.take("pause-" + "0" * 24) is None  # expired
