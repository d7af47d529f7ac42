"""REPL handles: the MCP SDK's default ``Client`` speaks the stateless 2026-07-28 protocol, which has
no session, so ``serve-mcp`` names each REPL by a handle the model passes back as ``repl``. A
handle belongs to the caller whose bearer token it was minted for; with ``--state-store redis://``
any instance serves any handle."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent

from asyncai.serve.handles import ANONYMOUS, HandleCheck, ReplHandles, caller_identity
from tests.fakes.redis import redis_server
from tests.fakes.round_robin import round_robin

from .helpers import ENV, SIMPLE, TOKEN, HttpServe, client, ran, serve_http

pytestmark = pytest.mark.anyio
OTHER = "another-callers-token"


# -- the rules, without processes ---------------------------------------------------------------


async def test_a_handle_is_its_callers_until_it_expires() -> None:
    now = [1000.0]
    handles = ReplHandles(ttl=60, clock=lambda: now[0])
    mine, theirs = caller_identity("Bearer a"), caller_identity("Bearer b")
    handle = await handles.mint(mine)
    assert handle.startswith("repl-") and handle != await handles.mint(mine)
    assert await handles.check(handle, mine) is HandleCheck.MINE
    assert await handles.check(handle, theirs) is HandleCheck.FOREIGN
    assert await handles.check("repl-never-minted-here", mine) is HandleCheck.UNKNOWN
    assert await handles.check("not a handle", mine) is HandleCheck.UNKNOWN
    now[0] += 59
    await handles.touch(handle, mine)  # used: a new ttl from now
    now[0] += 59
    assert await handles.check(handle, mine) is HandleCheck.MINE
    now[0] += 2
    assert await handles.check(handle, mine) is HandleCheck.UNKNOWN


def test_the_caller_is_a_hash_of_the_token_never_the_token() -> None:
    identity = caller_identity("Bearer s3cret")
    assert "s3cret" not in identity and identity == caller_identity("Bearer s3cret")
    assert identity != caller_identity("Bearer s3cre7") and caller_identity(None) == ANONYMOUS


# -- serve-mcp over HTTP -------------------------------------------------------------------------


@asynccontextmanager
async def modern(url: str, token: str = TOKEN) -> AsyncIterator[Client]:
    """The SDK's default client (``mode="auto"``: 2026-07-28 with serve-mcp)."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http, max_sse_event_size=None)) as session,
    ):
        assert session.protocol_version == "2026-07-28"
        yield session


async def run(session: Client, code: str, repl: str | None = None) -> tuple[str, dict[str, Any], bool]:
    arguments: dict[str, Any] = {"code": code} | ({"repl": repl} if repl is not None else {})
    result = await session.call_tool("run_code", arguments)
    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    return "\n".join(texts), ran(result).content, bool(result.is_error)


@pytest.fixture(scope="module")
def tokens(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tokens") / "tokens"
    path.write_text(f"{TOKEN}\n\n{OTHER}\n")  # one caller per line
    return path


@pytest.fixture(scope="module")
def served(tokens: Path) -> Any:
    env = {key: value for key, value in ENV.items() if key != "ASYNCAI_MCP_TOKEN"}
    with serve_http("--token-file", str(tokens), "--mcp-stdio", SIMPLE, env=env) as serve:
        yield serve


async def test_the_default_client_keeps_its_variables_by_handle(served: HttpServe) -> None:
    async with modern(served.url) as session:
        [tool] = (await session.list_tools()).tools
        assert "keep its variables" in tool.input_schema["properties"]["repl"]["description"]
        text, first, _ = await run(session, "x = 41\nx")
        handle = first["repl"]
        assert text.startswith("41") and f"repl={handle!r}" in text
        _, again, error = await run(session, "x + 1", repl=handle)
        assert (again["value"], again["repl"], error) == (42, handle, False)
        _, fresh, _ = await run(session, "x")  # no handle: a new REPL
    assert "NameError" in fresh["error"] and fresh["repl"] != handle


async def test_another_callers_handle_is_refused_and_an_unknown_one_starts_afresh(served: HttpServe) -> None:
    async with modern(served.url) as session:
        _, first, _ = await run(session, "secret = 'kept'")
    async with modern(served.url, token=OTHER) as intruder:
        text, content, error = await run(intruder, "secret", repl=first["repl"])
        assert error and "belongs to another caller" in text and "kept" not in text
        assert "repl" not in content
        text, content, error = await run(intruder, "1 + 1", repl="repl-expired-or-never-minted")
    assert not error and content["value"] == 2
    assert "unknown or expired" in text and content["repl"] != "repl-expired-or-never-minted"
    async with modern(served.url) as owner:  # still the owner's, untouched
        _, content, _ = await run(owner, "secret", repl=first["repl"])
    assert content["value"] == "kept"


async def test_clients_of_the_2025_era_keep_their_session(served: HttpServe) -> None:
    async with client(served.url) as session:
        [tool] = (await session.list_tools()).tools
        assert "repl" not in tool.input_schema["properties"]
        await session.call_tool("run_code", {"code": "y = 7"})
        result = await session.call_tool("run_code", {"code": "y"})
    content = ran(result).content
    assert content["value"] == 7 and "repl" not in content


async def test_two_instances_sharing_redis_serve_one_handle_alternately(tmp_path: Path) -> None:
    with redis_server(tmp_path) as store:
        args = ("--state-store", store.url, "--mcp-stdio", SIMPLE)
        with (
            serve_http(*args, env=ENV) as a,
            serve_http(*args, env=ENV) as b,
            round_robin([a.url.removesuffix("/mcp"), b.url.removesuffix("/mcp")]) as proxy,
        ):
            async with modern(f"{proxy.url}/mcp") as session:
                _, first, _ = await run(session, "n = 1")
                handle = first["repl"]
                for expected in range(2, 6):
                    _, content, error = await run(session, "n = n + 1\nn", repl=handle)
                    assert (content["value"], error) == (expected, False)
            served_by = {index for *_, index in proxy.served}
    assert served_by == {0, 1}, "both instances served the handle's runs"


async def test_expired_handles_do_not_pile_up_in_memory() -> None:
    now = [0.0]
    handles = ReplHandles(ttl=10, clock=lambda: now[0])
    for _ in range(100):
        await handles.mint("someone")
        now[0] += 1
    kept = await handles.mint("someone")
    assert len(handles._owners) <= 11 and await handles.check(kept, "someone") is HandleCheck.MINE
