"""``ReplScopes``: the lifecycle every run goes through, against real workers and a real store."""

from __future__ import annotations

import pytest

from asyncai.code_mode import CodeMode, CodeModeLimits
from asyncai.code_mode.scopes import ReplScopes
from tests.code_mode.conftest import FakeExecutor

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_idle_scopes_are_released_and_busy_ones_are_kept() -> None:
    clock = Clock()
    async with CodeMode(FakeExecutor(), CodeModeLimits()) as code_mode:
        scopes = ReplScopes(code_mode, idle_timeout=60, clock=clock)
        async with scopes.use("a") as use:
            await use.scope.call_tool("run_code", {"code": "x = 1"})
        busy = scopes.get("b")
        clock.now += 61
        with busy.hold():  # a running snippet keeps its REPL
            async with scopes.use("c"):
                pass
        assert set(scopes.idle()) == {"b", "c"}  # "a" went, with its worker
        async with scopes.use("a") as use:
            result = await use.scope.call_tool("run_code", {"code": "x"})
        notes = [scopes.note_if_changed("b", note) for note in ("[vars: x]", "[vars: x]", None, "[vars: y]")]
    assert result.is_error and "NameError" in result.content
    assert notes == ["[vars: x]", None, None, "[vars: y]"]  # passed on only when it changed
