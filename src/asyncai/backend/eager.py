"""Snippets that run while the model still writes them: the streamed ``run_code`` calls of one
model reply, each fed to an eager snippet of the executor's REPL (``code_mode.engine.eager``) as
its ``code`` argument grows. Arguments that are not yet whole JSON are read with pydantic-core's
partial mode (a trailing string is taken as far as it has arrived)."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import pydantic_core

from asyncai.log import log_event
from asyncai.tools.types import ToolCallOutput

RUN_CODE = "run_code"


class EagerRun(Protocol):
    def update(self, code: str) -> None: ...

    async def finish(self, arguments: dict[str, Any]) -> ToolCallOutput: ...

    async def abandon(self) -> str | None: ...

    def started(self) -> bool: ...


@runtime_checkable
class EagerExecutor(Protocol):
    """An executor that can run a snippet while it streams (``ReplScope``)."""

    def eager(self) -> EagerRun: ...


def streamed_code(arguments: str) -> str | None:
    """The ``code`` argument as far as it has arrived, if it has begun."""
    try:
        parsed = pydantic_core.from_json(arguments, allow_partial="trailing-strings")
    except ValueError:
        return None
    code = parsed.get("code") if isinstance(parsed, dict) else None
    return code if isinstance(code, str) else None


class EagerCalls:
    """The eager snippets of one model reply, by the position of their call in it."""

    def __init__(self, executor: EagerExecutor) -> None:
        self.executor = executor
        self.runs: dict[int, EagerRun] = {}

    def on_arguments(self, position: int, name: str | None, arguments: str) -> None:
        if name != RUN_CODE:
            return
        code = streamed_code(arguments)  # a few µs per chunk for snippets of a few KB
        if code is None:
            return
        run = self.runs.get(position)
        if run is None:
            run = self.runs[position] = self.executor.eager()
            log_event("code_mode.eager_started", call=position)
        run.update(code)

    def ran_any(self) -> bool:
        """Whether a statement of these calls has begun to run."""
        return any(run.started() for run in self.runs.values())

    async def abandon(self) -> list[str]:
        """Nothing more comes of these calls; the reports of the statements that ran."""
        reports = [await run.abandon() for run in self.runs.values()]
        self.runs.clear()
        return [report for report in reports if report]
