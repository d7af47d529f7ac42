"""``MemorySandbox``: a stand-in for the ``Sandbox`` in tests, as httpx ships ``MockTransport``.

Its workers are namespaces in this process, and CPython runs the snippets: a snippet's tool calls,
print capture, last value, variables, errors (as tracebacks that read like Monty's) and parking
behave as on a Monty worker, in microseconds and with no worker process. It is **not a sandbox**:
nothing is isolated, and no limit on the snippet's own computation holds (memory, recursion, a
loop that never awaits). Imports are limited to the modules Monty offers. What it cannot do:
the type check (every snippet runs unchecked) and pausing a snippet for an approval
(``feed_start``, ``load_snapshot``). Use it for tests of the engine's rules and of an embedder's
own code (``SandboxConfig(kind="memory")``); run snippets in a ``PoolSandbox``.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import itertools
import linecache
import traceback
from collections.abc import Callable
from typing import Any, Literal

from asyncai.code_mode.engine.contract import IMPORTABLE_MODULES
from asyncai.code_mode.limits import CodeModeLimits
from asyncai.code_mode.sandbox.config import SandboxConfig
from asyncai.code_mode.sandbox.interface import SnippetRaised, Worker

_INPUT = "<python-input-{}>"  # the name Monty gives a REPL's Nth feed, which tracebacks quote
_NO_PAUSE = "MemorySandbox cannot pause a snippet (feed_start, load_snapshot): use a PoolSandbox"
_numbers = itertools.count()


class MemoryWorker:
    """One REPL: a namespace; ``dump`` keeps a copy in its sandbox and names it."""

    def __init__(self, sandbox: MemorySandbox) -> None:
        self._sandbox = sandbox
        self._namespace: dict[str, Any] = {"__builtins__": _builtins(), "__name__": "__main__"}
        self.feeds = 0
        """Feeds run so far (round trips a Monty worker would have made)."""

    async def feed_run(
        self,
        code: str,
        *,
        external_lookup: dict[str, Callable[..., Any]] | None = None,
        print_callback: Callable[[str, str], None] | None = None,
        os: Callable[..., Any] | None = None,
        skip_type_check: bool = False,
    ) -> Any:
        filename = _INPUT.format(self.feeds)
        self.feeds += 1
        linecache.cache[filename] = (len(code), None, code.splitlines(keepends=True), filename)
        namespace = self._namespace
        namespace.update(external_lookup or {})
        namespace["__builtins__"]["print"] = _printer(print_callback)
        try:
            tree = ast.parse(code, filename)
            last = tree.body[-1] if tree.body else None
            if isinstance(last, ast.Expr):
                tree.body.pop()
            else:
                last = None
            await _run(compile(tree, filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT), namespace)
            if last is None:
                return None
            expression = ast.Expression(last.value)
            return await _run(
                compile(expression, filename, "eval", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT), namespace
            )
        except Exception as exc:
            raise SnippetRaised(_traceback(exc)) from None

    async def feed_start(self, code: str, **_: Any) -> Any:
        raise NotImplementedError(_NO_PAUSE)

    async def dump(self) -> bytes:
        return self._sandbox.keep(dict(self._namespace))

    async def load_session(self, state: bytes) -> None:
        self._namespace = dict(self._sandbox.kept(state))

    async def load_snapshot(self, state: bytes, **_: Any) -> Any:
        raise NotImplementedError(_NO_PAUSE)


class MemorySandbox:
    """The ``Sandbox`` whose workers are ``MemoryWorker`` namespaces (see the module's docstring)."""

    kind: Literal["memory"] = "memory"

    def __init__(self, config: SandboxConfig | None = None, limits: CodeModeLimits | None = None) -> None:
        self.config = config or SandboxConfig(kind="memory")
        self.limits = limits or CodeModeLimits()
        self._open: list[MemoryWorker] = []
        self._dumps: dict[bytes, dict[str, Any]] = {}

    async def checkout(self, type_check_stubs: str | None = None) -> Worker:
        worker = MemoryWorker(self)
        self._open.append(worker)
        return worker

    async def release(self, session: Worker, *, discard: bool = False) -> None:
        if session in self._open:
            self._open.remove(session)

    def holds(self, session: Worker) -> bool:
        return session in self._open

    def exit_watch(self, session: Worker) -> int | None:
        return None

    def keep(self, namespace: dict[str, Any]) -> bytes:
        """Keep a dumped REPL; its name is the dump."""
        name = f"memory-dump-{next(_numbers)}".encode()
        self._dumps[name] = namespace
        return name

    def kept(self, name: bytes) -> dict[str, Any]:
        try:
            return self._dumps[name]
        except KeyError:
            raise ValueError("not a dump of this MemorySandbox") from None

    async def aclose(self) -> None:
        self._open.clear()
        self._dumps.clear()


async def _run(code: Any, namespace: dict[str, Any]) -> Any:
    result = eval(code, namespace)  # the stand-in's whole job: run the snippet
    return await result if inspect.iscoroutine(result) else result


def _builtins() -> dict[str, Any]:
    allowed = builtins.__dict__.copy()
    real_import = builtins.__import__

    def only_monty_modules(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.split(".")[0] not in IMPORTABLE_MODULES:
            raise ModuleNotFoundError(f"No module named '{name}'")
        return real_import(name, *args, **kwargs)

    allowed["__import__"] = only_monty_modules
    return allowed


def _printer(callback: Callable[[str, str], None] | None) -> Callable[..., None]:
    def printed(*values: Any, sep: str | None = " ", end: str | None = "\n", **_: Any) -> None:
        if callback is not None:
            callback(
                "stdout",
                (" " if sep is None else sep).join(map(str, values)) + ("\n" if end is None else end),
            )

    return printed


def _traceback(exc: Exception) -> str:
    """``exc``'s traceback through the snippet's own frames only, as Monty prints one."""
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if frame.filename.startswith("<python-input-")
    ]
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames)] if frames else []
    lines += traceback.format_exception_only(type(exc), exc)
    return "".join(lines)
