"""Saved REPL state: a thread's Monty session (``dump()``) kept under its session id, so a resumed
conversation still has its variables.

What is stored is an envelope: a magic line, one JSON header line (format, the pydantic-monty
version that wrote it, the variables note, the bound names) and the dump. A dump from another
pydantic-monty version, or bytes that are not an envelope, are discarded with a warning: the
scope starts empty. The dump goes only to Monty's own ``load_session``,
and the restored REPL's helpers and tool wrappers are defined afresh by this process.

``DirectoryStore`` keeps one file per session, ``<session id>.repl``, under
``$XDG_STATE_HOME/asyncai/scopes/`` (else ``~/.local/state/asyncai/scopes/``), written atomically
and readable only by the user, and removes files not saved for the TTL; ``RedisStore`` lets Redis
expire them.

Every save gets a new *stamp*; a process that holds a scope in memory compares stamps to learn
whether someone else saved it since (``SavedCopy.sync``) without reading the dump.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from asyncai.arguments import check_instance, check_number
from asyncai.humanize import one_line
from asyncai.wording import setting

MAGIC = b"asyncai-scope\n"
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
SUFFIX = ".repl"
"""A saved scope's file name ends so (``*.scope`` files, from before stamps, only expire)."""
FORMAT = 1
_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


StateLoad = Literal["restored", "none", "discarded"]
"""``SavedCopy.load``: the state was taken up, there was none, or it was unusable and dropped."""


class StateDiscarded(Exception):
    """Saved state that cannot be used; the message says why, in one line."""


@dataclass(frozen=True)
class SavedScope:
    dump: bytes
    note: str | None = None
    """The variables note when it was saved: what the model is told is still there."""
    bound: tuple[str, ...] = ()
    preamble: str | None = None
    """The fingerprint of the tool wrappers and helpers in the dump: a process whose own are the
    same need not define them again (each definition would stay in the dump)."""
    paused_as: str | None = None
    """The id of the REPL's snippet that waits for an approval (``ReplScope.run_pausing``)."""
    variables: tuple[tuple[str, str, int], ...] = ()
    """``(name, type, size)`` of each name in the note: a process that takes the scope up tells
    the types the saving one saw, without probing names the next snippet does not touch."""
    functions: tuple[tuple[str, str], ...] = ()
    """``(name, source)`` of the functions its snippets defined (what ``save_skill`` stores)."""


def monty_version() -> str:
    import importlib.metadata  # only when a scope is saved or read: the CLI starts without it

    return importlib.metadata.version("pydantic-monty")


def pack(saved: SavedScope) -> bytes:
    header = {
        "format": FORMAT,
        "pydantic_monty": monty_version(),
        "note": saved.note,
        "bound": saved.bound,
        "preamble": saved.preamble,
        "paused_as": saved.paused_as,
        "variables": [list(variable) for variable in saved.variables],
        "functions": [list(function) for function in saved.functions],
    }
    return MAGIC + json.dumps(header).encode() + b"\n" + saved.dump


def unpack(data: bytes) -> SavedScope:
    if not data.startswith(MAGIC):
        raise StateDiscarded("not a saved scope (corrupt or foreign bytes)")
    header_line, _, dump = data[len(MAGIC) :].partition(b"\n")
    try:
        header = json.loads(header_line)
    except ValueError:
        raise StateDiscarded("its header is corrupt") from None
    if not isinstance(header, Mapping) or header.get("format") != FORMAT:
        raise StateDiscarded(f"it has an unknown format ({str(header)[:60]})")
    written_by = header.get("pydantic_monty")
    if written_by != monty_version():
        raise StateDiscarded(f"it was saved by pydantic-monty {written_by}, this is {monty_version()}")
    note = header.get("note")
    bound = header.get("bound")
    names = tuple(name for name in bound if isinstance(name, str)) if isinstance(bound, list) else ()
    preamble = header.get("preamble")
    paused_as = header.get("paused_as")
    return SavedScope(
        dump,
        note if isinstance(note, str) else None,
        names,
        preamble if isinstance(preamble, str) else None,
        paused_as if isinstance(paused_as, str) else None,
        _variables(header.get("variables")),
        _functions(header.get("functions")),
    )


def _functions(listed: object) -> tuple[tuple[str, str], ...]:
    """The header's ``functions`` pairs that have the shape written (a malformed one is left out)."""
    if not isinstance(listed, list):
        return ()
    return tuple(
        (row[0], row[1])
        for row in listed
        if isinstance(row, list) and len(row) == 2 and isinstance(row[0], str) and isinstance(row[1], str)
    )


def _variables(listed: object) -> tuple[tuple[str, str, int], ...]:
    """The header's ``variables`` rows that have the shape written (a malformed one is left out)."""
    if not isinstance(listed, list):
        return ()
    return tuple(
        (row[0], row[1], row[2])
        for row in listed
        if isinstance(row, list)
        and len(row) == 3
        and isinstance(row[0], str)
        and isinstance(row[1], str)
        and type(row[2]) is int
    )


class StateStoreError(Exception):
    """A state store that cannot be used; the message is one line naming it."""


@dataclass(frozen=True)
class Stored:
    data: bytes
    stamp: str
    """Changes with every save: what ``stamp()`` answers until the next one."""


STAMP_LENGTH = 32


def new_stamp() -> str:
    return uuid.uuid4().hex


class StateStore(Protocol):
    """Where saved scopes live; every call is bounded in time by the caller."""

    async def check(self) -> None:
        """Raise ``StateStoreError`` when the store cannot be used (at start-up)."""

    async def load(self, key: str) -> Stored | None: ...

    async def save(self, key: str, data: bytes) -> str:
        """Store ``data`` under ``key``; the new stamp."""
        ...

    async def stamp(self, key: str) -> str | None:
        """The stamp of what is saved under ``key`` now (``None``: nothing)."""
        ...

    async def delete(self, key: str) -> None: ...

    async def aclose(self) -> None: ...


def default_state_dir(environ: Mapping[str, str] = os.environ) -> Path:
    home = Path(environ.get("HOME", "~")).expanduser()
    base = Path(environ["XDG_STATE_HOME"]) if environ.get("XDG_STATE_HOME") else home / ".local" / "state"
    return base / "asyncai" / "scopes"


class DirectoryStore:
    """One file per session (the envelope, then its stamp); files not saved for ``ttl``
    seconds (and temporary files a killed process left) are removed when the store is opened."""

    def __init__(self, root: Path | str, ttl: float | None = None) -> None:
        check_instance(root, Path | str, "DirectoryStore", "root", "a directory (a pathlib.Path or str)")
        if ttl is not None:
            check_number(ttl, "DirectoryStore", "ttl")
        self.root = Path(root)
        self.ttl = ttl

    async def check(self) -> None:
        try:
            await asyncio.to_thread(self._check)
        except OSError as exc:
            raise StateStoreError(f"cannot use state directory {self.root}: {exc.strerror or exc}") from None

    def _check(self) -> None:
        """The directory exists and takes a file (a read-only one fails now, not at every save)."""
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(dir=self.root, prefix=".", suffix=".tmp")
        os.close(handle)
        os.unlink(probe)
        if self.ttl is not None:
            self._expire(time.time() - self.ttl)

    def _expire(self, before: float) -> None:
        for path in [*self.root.glob(f"*{SUFFIX}"), *self.root.glob("*.scope"), *self.root.glob(".*.tmp")]:
            with contextlib.suppress(OSError):  # another process may remove it first
                if path.stat().st_mtime < before:
                    path.unlink()

    async def aclose(self) -> None:
        pass

    def _path(self, key: str) -> Path:
        if not _KEY.match(key):
            raise ValueError(f"not a usable state key: {key!r}")
        return self.root / f"{key}{SUFFIX}"

    async def load(self, key: str) -> Stored | None:
        try:
            data = await asyncio.to_thread(self._path(key).read_bytes)
        except FileNotFoundError:
            return None
        scope, stamp = data[:-STAMP_LENGTH], data[-STAMP_LENGTH:]
        return Stored(scope, stamp.decode(errors="replace"))

    async def stamp(self, key: str) -> str | None:
        try:
            return await asyncio.to_thread(self._read_stamp, self._path(key))
        except FileNotFoundError:
            return None

    @staticmethod
    def _read_stamp(path: Path) -> str:
        with path.open("rb") as file:
            file.seek(max(os.fstat(file.fileno()).st_size - STAMP_LENGTH, 0))
            return file.read().decode(errors="replace")

    async def save(self, key: str, data: bytes) -> str:
        stamp = new_stamp()
        await asyncio.to_thread(self._write, self._path(key), data + stamp.encode())
        return stamp

    def _write(self, path: Path, data: bytes) -> None:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")  # mode 0600
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    async def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            await asyncio.to_thread(self._path(key).unlink)


def _as_bytes(value: bytes | str) -> bytes:
    return value.encode() if isinstance(value, str) else value  # str only with decode_responses


class RedisStore:
    """Saved scopes in Redis (``redis://HOST:PORT/DB``), each a hash of its dump and stamp that
    expires ``ttl`` seconds after its last save, so several asyncai processes, on several machines,
    share them. ``client`` is there for the other shared records (``serve.shared``)."""

    PREFIX = "asyncai:repl:"

    def __init__(self, url: str, ttl: float, timeout: float = 5.0) -> None:
        check_instance(url, str, "RedisStore", "url", "a redis:// URL (a str)")
        check_number(ttl, "RedisStore", "ttl")
        check_number(timeout, "RedisStore", "timeout")
        import redis.asyncio as aioredis  # only when Redis is configured

        self.url = url
        self.ttl = max(int(ttl), 1)
        self.client = aioredis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)

    async def check(self) -> None:
        try:
            await self.client.ping()
        except Exception as exc:
            raise StateStoreError(f"cannot reach state store {self.url}: {one_line(str(exc), 200)}") from None

    def key(self, key: str) -> str:
        """The Redis key of the scope saved under ``key``."""
        return self.PREFIX + key

    async def load(self, key: str) -> Stored | None:
        data, stamp = await self.client.hmget(self.PREFIX + key, ["data", "stamp"])
        if data is None or stamp is None:
            return None
        return Stored(_as_bytes(data), _as_bytes(stamp).decode())

    async def stamp(self, key: str) -> str | None:
        stamp = await self.client.hget(self.PREFIX + key, "stamp")
        return _as_bytes(stamp).decode() if stamp is not None else None

    async def save(self, key: str, data: bytes) -> str:
        stamp = new_stamp()
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.hset(self.PREFIX + key, mapping={"data": data, "stamp": stamp})
            pipe.expire(self.PREFIX + key, self.ttl)
            await pipe.execute()
        return stamp

    async def delete(self, key: str) -> None:
        await self.client.delete(self.PREFIX + key)

    async def aclose(self) -> None:
        await self.client.aclose()


def open_store(location: str | None, ttl: float) -> StateStore:
    """``redis://``/``rediss://`` URLs are Redis, anything else a directory; ``None`` the default."""
    if location is None:
        return DirectoryStore(default_state_dir(), ttl)
    if location.startswith(REDIS_SCHEMES):
        try:
            return RedisStore(location, ttl)
        except ValueError as exc:
            raise StateStoreError(f"{setting('location', location)}: {exc}") from None
    return DirectoryStore(Path(location).expanduser(), ttl)
