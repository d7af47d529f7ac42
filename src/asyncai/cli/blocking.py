"""Blocking reads of stdin from async code."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def _settle(future: asyncio.Future[Any], outcome: Callable[[], object]) -> None:
    if not future.done():  # a cancelled reader gets nothing
        outcome()


async def read_in_thread(read: Callable[..., T], *args: Any) -> T:
    """``read(*args)`` on a daemon thread, awaited without blocking the event loop.

    Unlike ``asyncio.to_thread``, a read still blocked on stdin when the command is cancelled
    (Ctrl-C) does not keep ``asyncio.run`` and the interpreter waiting for one more line.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def work() -> None:
        outcome: Callable[[], object]
        try:
            outcome = functools.partial(future.set_result, read(*args))
        except BaseException as exc:  # raised in the awaiting task, e.g. EOFError
            outcome = functools.partial(future.set_exception, exc)
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(_settle, future, outcome)

    threading.Thread(target=work, name="asyncai-stdin", daemon=True).start()
    return await future


class LineReader:
    """Lines typed at the terminal, each read by ``input(prompt)`` on a daemon thread. A read whose
    reader gave up waiting (Ctrl-C while a question was on screen) is not lost: the next read
    shows its own prompt and takes that line, instead of a second ``input()`` racing the first."""

    def __init__(self) -> None:
        self._pending: asyncio.Future[str] | None = None

    async def read(self, prompt: str) -> str:
        if self._pending is None:
            self._pending = asyncio.ensure_future(read_in_thread(input, prompt))
        else:
            print(prompt, end="", flush=True)
        pending = self._pending
        try:
            return await asyncio.shield(pending)
        finally:
            if pending.done():
                self._pending = None
