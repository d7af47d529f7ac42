"""Several ``serve-mcp --http`` instances sharing one real ``redis-server`` (``--state-store
redis://…``): a session opened on one is served by the other with its REPL, two runs of one
session never run at once, a session ended on one is gone from both, and Redis that goes away
leaves warnings and a working server.

The load balancer is ``tests/fakes/round_robin.py``: each HTTP request goes to the next instance.
Where a test needs to choose the instance, it talks to each directly with raw JSON-RPC."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2
import pytest
import redis

from tests.fakes.redis import RedisServer, redis_server
from tests.fakes.round_robin import RoundRobin, round_robin
from tests.fakes.servers import free_port
from tests.fakes.slow_site import SlowSite, slow_site

from .helpers import (
    ASYNCAI,
    ENV,
    INITIALIZE,
    PROTOCOL,
    RAW_HEADERS,
    SIMPLE,
    TOKEN,
    HttpServe,
    Ran,
    client,
    log,
    ran,
    run_code,
    serve_http,
    wait_for_log,
)

pytestmark = pytest.mark.anyio

LEASE_WAIT = 3.0
TTL = 5000


@dataclass
class Cluster:
    redis: RedisServer
    a: HttpServe
    b: HttpServe
    proxy: RoundRobin
    site: SlowSite


def base(url: str) -> str:
    return url.removesuffix("/mcp")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with slow_site() as site, redis_server(tmp_path_factory.mktemp("redis")) as store:
        args = ("--verbose", "--state-store", store.url, "--lease-wait", str(LEASE_WAIT),
                "--state-ttl", str(TTL), "--mcp-stdio", SIMPLE)  # fmt: skip
        with (
            serve_http(*args, env=ENV) as a,
            serve_http(*args, env=ENV) as b,
            round_robin([base(a.url), base(b.url)]) as proxy,
        ):
            yield Cluster(store, a, b, proxy, site)


def answer(ran: Ran) -> str:
    """The snippet's value as its first text block says it."""
    return ran.text


class Raw:
    """One client session spoken as raw JSON-RPC over HTTP, each request to the instance named."""

    def __init__(self, http: httpx2.AsyncClient) -> None:
        self.http = http
        self.session_id = ""
        self.ids = iter(range(2, 10**6))

    async def open(self, url: str) -> str:
        opened = await self.http.post(url, json=INITIALIZE, headers=RAW_HEADERS)
        assert opened.status_code == 200, opened.text
        self.session_id = opened.headers["mcp-session-id"]
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await self.http.post(url, json=initialized, headers=self.headers())).status_code == 202
        return self.session_id

    def headers(self) -> dict[str, str]:
        return {**RAW_HEADERS, "Mcp-Session-Id": self.session_id, "MCP-Protocol-Version": PROTOCOL}

    async def run(self, url: str, code: str, request_id: int | None = None) -> tuple[str, bool]:
        """``run_code`` at ``url``: the value (without the variables note) and whether it is an error."""
        request_id = request_id if request_id is not None else next(self.ids)
        call = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                "params": {"name": "run_code", "arguments": {"code": code}}}  # fmt: skip
        response = await self.http.post(url, json=call, headers=self.headers())
        assert response.status_code == 200, (response.status_code, response.text)
        for line in response.text.splitlines():
            message = json.loads(line.removeprefix("data: ")) if line.startswith("data: {") else {}
            if message.get("id") == request_id:
                if "error" in message:
                    raise AssertionError(f"error answer: {message['error']}")
                result = ran(message["result"])
                return result.text, result.is_error
        raise AssertionError(f"no answer to request {request_id}: {response.text[:300]}")


@asynccontextmanager
async def raw_session() -> AsyncIterator[Raw]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120)) as http:
        yield Raw(http)


def run_events(served: HttpServe, session: str) -> int:
    return sum(1 for e in log(served) if e["event"] == "serve.run_code" and e["session"] == f"http:{session}")


def sessions_run(served: HttpServe) -> set[str]:
    return {e["session"] for e in log(served) if e["event"] == "serve.run_code"}


async def test_a_session_keeps_its_variables_across_instances(cluster: Cluster) -> None:
    before = sessions_run(cluster.a) | sessions_run(cluster.b)
    served_before = len(cluster.proxy.served)
    async with client(f"{cluster.proxy.url}/mcp") as session:
        await run_code(session, "pods = [{'name': f'p{i}', 'ok': i % 3 != 0} for i in range(30)]")
        assert answer(await run_code(session, "len([p for p in pods if not p['ok']])")) == "10"
        await run_code(session, "pods = pods[:3]")
        assert answer(await run_code(session, "[p['name'] for p in pods]")) == '["p0","p1","p2"]'
    upstreams = {index for _, _, index in cluster.proxy.served[served_before:]}
    assert upstreams == {0, 1}, "the proxy sent this session's requests to both instances"
    # Which session it was: the one new in the logs; both instances ran snippets of it.
    [key] = await wait_for_log(
        cluster.a, lambda _: (sessions_run(cluster.a) | sessions_run(cluster.b)) - before
    )
    session_id = key.removeprefix("http:")
    await wait_for_log(
        cluster.a, lambda _: run_events(cluster.a, session_id) + run_events(cluster.b, session_id) == 4
    )
    assert run_events(cluster.a, session_id) > 0 and run_events(cluster.b, session_id) > 0
    taken_up = [e for e in log(cluster.a) + log(cluster.b) if e["event"] == "serve.session_taken_up"]
    assert key in {e["session"] for e in taken_up}, "the instance that did not open it took it up"


async def test_the_note_keeps_each_variables_type_on_the_instance_that_takes_the_session_up(
    cluster: Cluster,
) -> None:
    async with raw_session() as session:
        await session.open(cluster.a.url)
        await session.run(cluster.a.url, "shared = 41")
        await session.run(cluster.b.url, "other = 'x'")  # reads nothing of ``shared``: not probed again
        request = {"jsonrpc": "2.0", "id": 99, "method": "tools/call",
                   "params": {"name": "run_code", "arguments": {"code": "more = [1]"}}}  # fmt: skip
        response = await session.http.post(cluster.b.url, json=request, headers=session.headers())
    [data] = [line for line in response.text.splitlines() if line.startswith("data: {")]
    note = ran(json.loads(data.removeprefix("data: "))["result"]).content["variables"]
    assert note == "[run_code variables still in scope: more: list[1], other: str[1], shared: int]"


async def test_records_expire_state_ttl_after_the_last_run(cluster: Cluster) -> None:
    keys = redis.Redis.from_url(cluster.redis.url)
    try:
        async with raw_session() as raw:
            session_id = await raw.open(cluster.a.url)
            session, repl = f"asyncai:session:{session_id}", f"asyncai:repl:mcp-{session_id}"
            assert 0 < keys.ttl(session) <= TTL
            keys.expire(session, 100)
            assert await raw.run(cluster.b.url, "x = 1\nx") == ("1", False)
            for key in (session, repl):
                assert 100 < keys.ttl(key) <= TTL, key
            keys.delete(session)  # as if it expired: the session is gone from both instances
            ping = {"jsonrpc": "2.0", "id": 99, "method": "ping"}
            for url in (cluster.a.url, cluster.b.url):
                assert (await raw.http.post(url, json=ping, headers=raw.headers())).status_code == 404
    finally:
        keys.close()


async def test_handing_a_session_over_does_not_grow_its_saved_repl(cluster: Cluster) -> None:
    """The instance taking a session up keeps the tool wrappers in the dump when they are its own
    (defining them again would add a preamble's worth, ~26 KB, to the dump at every hand-over)."""
    keys = redis.Redis.from_url(cluster.redis.url)
    try:
        async with raw_session() as raw:
            session_id = await raw.open(cluster.a.url)
            assert await raw.run(cluster.a.url, "x = 0\nx") == ("0", False)
            size = f"asyncai:repl:mcp-{session_id}"
            first = int(keys.hstrlen(size, "data"))
            for turn in range(1, 7):
                url = (cluster.b.url, cluster.a.url)[turn % 2]
                assert await raw.run(url, "x = x + 1\nx") == (str(turn), False)
            grown = int(keys.hstrlen(size, "data")) - first
    finally:
        keys.close()
    assert grown < 6 * 2_000, f"the saved REPL grew {grown} bytes over 6 hand-overs"


async def test_a_run_waits_for_the_same_sessions_run_on_the_other_instance(cluster: Cluster) -> None:
    site = cluster.site
    async with raw_session() as raw:
        session_id = await raw.open(cluster.a.url)
        assert await raw.run(cluster.b.url, "n = 0\nn") == ("0", False)
        first = asyncio.create_task(
            raw.run(cluster.a.url, f"v = n\nawait http_get(url='{site.url}/slow/serial')\nn = v + 1\nn")
        )
        await anyio.to_thread.run_sync(site.entered["serial"].wait, 30)
        second = asyncio.create_task(raw.run(cluster.b.url, "n = n + 1\nn"))
        waiting = {"event": "serve.lease_waiting", "session": session_id}
        await wait_for_log(cluster.b, lambda events: any(waiting.items() <= e.items() for e in events))
        assert not second.done(), "the second run waits while the first holds the session"
        site.release["serial"].set()
        assert await first == ("1", False)
        assert await second == ("2", False), "the second ran after the first, on the first's state"
        assert await raw.run(cluster.a.url, "n") == ("2", False), "and the first instance sees it"


async def test_a_run_that_waits_too_long_gets_a_clear_error_and_changes_nothing(cluster: Cluster) -> None:
    site = cluster.site
    async with raw_session() as raw:
        await raw.open(cluster.a.url)
        assert await raw.run(cluster.a.url, "n = 0\nn") == ("0", False)
        first = asyncio.create_task(
            raw.run(cluster.a.url, f"v = n\nawait http_get(url='{site.url}/slow/busy')\nn = v + 1\nn")
        )
        await anyio.to_thread.run_sync(site.entered["busy"].wait, 30)
        text, is_error = await raw.run(cluster.b.url, "n = 100\nn")
        assert is_error and text.startswith("error: this session is running on another asyncai instance")
        assert not first.done()
        site.release["busy"].set()
        assert await first == ("1", False)
        assert await raw.run(cluster.b.url, "n") == ("1", False), "the refused run changed nothing"


async def test_a_session_its_client_ended_is_gone_from_every_instance(cluster: Cluster) -> None:
    keys = redis.Redis.from_url(cluster.redis.url)
    async with raw_session() as raw:
        session_id = await raw.open(cluster.a.url)
        assert await raw.run(cluster.b.url, "x = 7\nx") == ("7", False)
        assert keys.exists(f"asyncai:repl:mcp-{session_id}")
        ended = await raw.http.delete(cluster.b.url, headers=raw.headers())
        assert ended.status_code == 200
        for url in (cluster.a.url, cluster.b.url):
            ping = {"jsonrpc": "2.0", "id": 99, "method": "ping"}
            gone = await raw.http.post(url, json=ping, headers=raw.headers())
            assert gone.status_code == 404, (
                url,
                cluster.a.url,
                gone.text,
                "".join(cluster.a.stderr_lines[-30:]),
            )
    assert not keys.exists(f"asyncai:session:{session_id}", f"asyncai:repl:mcp-{session_id}")
    keys.close()


async def test_a_cancelled_run_releases_its_lease(cluster: Cluster) -> None:
    site = cluster.site
    async with raw_session() as raw:
        await raw.open(cluster.a.url)
        assert await raw.run(cluster.a.url, "n = 0\nn") == ("0", False)
        running = asyncio.create_task(
            raw.run(cluster.a.url, f"await http_get(url='{site.url}/slow/cancelled')\nn = 1", request_id=500)
        )
        await anyio.to_thread.run_sync(site.entered["cancelled"].wait, 30)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 500}}
        assert (await raw.http.post(cluster.a.url, json=cancel, headers=raw.headers())).status_code == 202
        with pytest.raises(AssertionError, match=r"error answer: .*cancel"):
            await running
        # Within the lease wait, not after LEASE_SECONDS: the cancelled run let go of the session.
        assert await raw.run(cluster.b.url, "n") == ("0", False)
        site.release["cancelled"].set()


async def test_requests_racing_to_take_up_a_session_all_get_served(cluster: Cluster) -> None:
    async with raw_session() as raw:
        await raw.open(cluster.a.url)
        assert await raw.run(cluster.a.url, "k = 20\nk") == ("20", False)
        # The other instance has never seen this session: these all arrive before it holds it.
        answers = await asyncio.gather(*(raw.run(cluster.b.url, f"k + {i}") for i in range(4)))
    assert sorted(answers) == [(str(20 + i), False) for i in range(4)]


async def test_redis_going_away_mid_run_leaves_warnings_and_a_working_server(tmp_path: Path) -> None:
    args = ("--verbose", "--mcp-stdio", SIMPLE, "--state-store")
    with (
        slow_site() as site,
        redis_server(tmp_path) as store,
        serve_http(*args, store.url, env=ENV) as served,
    ):
        async with client(served.url) as session:
            await run_code(session, "x = 1")
            running = asyncio.create_task(
                run_code(session, f"await http_get(url='{site.url}/slow/mid')\nx + 1")
            )
            await anyio.to_thread.run_sync(site.entered["mid"].wait, 30)
            store.stop()
            site.release["mid"].set()
            assert answer(await running) == "2", "the run in progress finishes"
            assert answer(await run_code(session, "x + 2")) == "3", "the session goes on from memory"
        async with client(served.url) as fresh:  # a session opened while Redis is away
            await run_code(fresh, "y = 5")
            assert answer(await run_code(fresh, "y * 2")) == "10"
        warned = await wait_for_log(
            served,
            lambda events: (
                {"state.not_saved", "serve.lease_failed", "serve.session_not_shared"}
                <= {e["event"] for e in events if e.get("level") == "warn"}
            ),
        )
        assert warned
        assert served.process.poll() is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--state-store", "redis://127.0.0.1:{port}/0"],
            "asyncai: cannot reach state store redis://127.0.0.1:",
        ),
        (["--state-store", "/tmp/some-dir"], "asyncai: serve-mcp shares sessions through Redis only"),
        (["--lease-wait", "3"], "asyncai: --lease-wait is for sessions shared with --state-store"),
    ],
)
def test_a_store_it_cannot_use_is_a_one_line_error(args: list[str], message: str) -> None:
    port = free_port()  # nothing listens there
    command = [ASYNCAI, "serve-mcp", "--http", "127.0.0.1:0", "--mcp-stdio", SIMPLE,
               *(arg.format(port=port) for arg in args)]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, env={**os.environ, **ENV})
    assert result.returncode == 2
    assert result.stderr.startswith(message) and result.stderr.count("\n") == 1, result.stderr


def test_a_redis_store_without_http_is_a_usage_error() -> None:
    command = [ASYNCAI, "serve-mcp", "--mcp-stdio", SIMPLE, "--state-store", "redis://127.0.0.1:1/0"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 2
    assert result.stderr == "asyncai: --state-store shares HTTP sessions between instances: it needs --http\n"
