"""Ctrl-C: a cancelled command stops its in-flight run before the executors close, and exits 130."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import signal
import subprocess
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from asyncai.backend import RunResult
from asyncai.cli import agent_command, blocking, chat
from asyncai.runtime import Runtime
from tests.cli.conftest import BIN
from tests.fakes.executors import FakeScopes, FakeToolSource
from tests.fakes.openai_server import ScriptedOpenAI, text_reply

pytestmark = pytest.mark.anyio

WAIT = 10.0  # a safety net against hangs, never a synchronisation device


class BlockingBackend:
    """A backend whose run waits forever and records whether it was cancelled."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.never = asyncio.Event()
        self.cancelled = False

    async def run(self, **_: Any) -> RunResult:
        self.started.set()
        try:
            await self.never.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        raise AssertionError("unreachable")


async def _cancel_mid_run(backend: BlockingBackend, command: Awaitable[int]) -> None:
    task = asyncio.ensure_future(command)
    await asyncio.wait_for(backend.started.wait(), WAIT)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, WAIT)


async def test_cancelled_one_shot_stops_its_run() -> None:
    backend = BlockingBackend()
    runtime = Runtime(backend, FakeScopes(FakeToolSource()))
    await _cancel_mid_run(backend, agent_command._one_shot(runtime, "question"))
    assert backend.cancelled


async def test_cancelled_jsonl_stops_its_runs() -> None:
    backend = BlockingBackend()
    runtime = Runtime(backend, FakeScopes(FakeToolSource()))
    source = io.StringIO('{"thread": "t1", "text": "question"}\n')
    await _cancel_mid_run(backend, agent_command._jsonl(runtime, source, io.StringIO()))
    assert backend.cancelled


async def test_cancelled_chat_stops_its_run(monkeypatch: pytest.MonkeyPatch) -> None:
    typed: Callable[[str], str] = lambda prompt: "question"  # noqa: E731
    monkeypatch.setattr(blocking, "input", typed, raising=False)
    backend = BlockingBackend()
    executor = FakeScopes(FakeToolSource())
    runtime = Runtime(backend, executor)
    await _cancel_mid_run(backend, chat.Chat(runtime, executor).run())  # type: ignore[arg-type]
    assert backend.cancelled


def test_ctrl_c_while_jsonl_waits_for_stdin_exits_130_quietly() -> None:
    with ScriptedOpenAI([text_reply("first answer")]) as model:
        read_end, write_end = os.pipe()
        process = subprocess.Popen(
            [str(BIN / "asyncai"), "--jsonl", "--model", "m", "--base-url", model.base_url],
            stdin=read_end,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "HOME": "/nonexistent-home"},
        )
        os.close(read_end)
        try:
            os.write(write_end, b'{"thread": "t1", "text": "hi"}\n')
            assert process.stdout is not None
            # The reply line means the run ended and the command is blocked reading the next line.
            assert json.loads(process.stdout.readline())["reply"] == "first answer"
            process.send_signal(signal.SIGINT)
            status = process.wait(timeout=WAIT)
        finally:
            os.close(write_end)
            if process.poll() is None:
                process.kill()
            _, stderr = process.communicate()
    assert status == 130
    assert re.fullmatch(r"(session: [0-9a-f-]{36}\n)?", stderr), stderr  # no traceback, no noise
