"""Both state stores keep a stamp with each saved scope: what a process holding a scope compares
to learn that someone else saved it since (serve-mcp behind a load balancer)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from asyncai.state.stores import SavedScope, StateStore, open_store, pack, unpack
from tests.fakes.redis import redis_server


@pytest.fixture(params=["directory", "redis"])
def store_location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "directory":
        yield str(tmp_path / "scopes")
        return
    with redis_server(tmp_path) as redis:
        yield redis.url


async def stamps(store: StateStore) -> None:
    await store.check()
    assert await store.stamp("s1") is None and await store.load("s1") is None
    first = await store.save("s1", b"one")
    assert await store.stamp("s1") == first
    loaded = await store.load("s1")
    assert loaded is not None and (loaded.data, loaded.stamp) == (b"one", first)
    second = await store.save("s1", b"one")  # the same bytes again: still a new save
    assert second != first and await store.stamp("s1") == second
    assert await store.stamp("s2") is None, "stamps are per key"
    await store.delete("s1")
    assert await store.stamp("s1") is None and await store.load("s1") is None
    await store.aclose()


def test_every_save_has_a_new_stamp_that_load_and_stamp_report(store_location: str) -> None:
    asyncio.run(stamps(open_store(store_location, ttl=3600)))


def test_the_envelope_keeps_each_variables_type_and_size() -> None:
    saved = SavedScope(b"dump", "[note]", ("n", "xs"), None, None, (("n", "int", -1), ("xs", "list", 3)))
    assert unpack(pack(saved)) == saved
    malformed = pack(SavedScope(b"dump")).replace(b'"variables": []', b'"variables": [["n", 1, 2], "x"]')
    assert unpack(malformed).variables == (), "a row of another shape is left out"
