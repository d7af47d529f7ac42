"""The text protocol (``--protocol text``): no tools are offered, the model writes its program in a
```python block of a plain reply, the harness runs it with the same engine and REPL and sends the
result back as the next message, and a reply without a block is the answer. The scripted model
answers over loopback, streamed and not; the programs run in real workers."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator

import pytest

from asyncai.backend import BackendConfig, OpenAiCompatibleBackend
from asyncai.backend.programs import python_code
from asyncai.code_mode import CodeMode
from asyncai.code_mode.engine.scope import ReplScope
from asyncai.tools.functions import FunctionTools, tool
from tests.code_mode.conftest import TEST_LIMITS
from tests.fakes.openai_server import ScriptedOpenAI, text_reply

pytestmark = pytest.mark.anyio

STREAMED = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])


@tool(read_only=True)
def list_directory(path: str) -> list[str]:
    """The entries of a directory."""
    return [f"{path}/a.txt", f"{path}/b.txt", f"{path}/c.md"]


@pytest.fixture
async def scope() -> AsyncIterator[ReplScope]:
    async with CodeMode(FunctionTools([list_directory]), TEST_LIMITS) as code_mode:
        scope = code_mode.new_scope()
        try:
            yield scope
        finally:
            await scope.aclose()


@STREAMED
async def test_a_python_block_runs_and_a_reply_without_one_is_the_answer(
    scope: ReplScope, stream: bool
) -> None:
    first = "Let me look.\n```python\nentries = await list_directory(path='/data')\n[e for e in entries if e.endswith('.txt')]\n```"
    second = "```python\nlen(entries)\n```"
    with ScriptedOpenAI([text_reply(first), text_reply(second), text_reply("Two .txt files.")]) as server:
        config = BackendConfig(base_url=server.base_url, model="m", stream=stream, protocol="text")
        async with OpenAiCompatibleBackend(config) as backend:
            result = await backend.run(history=[], user_text="Which .txt files are in /data?", executor=scope)
    assert result.reply == "Two .txt files."
    assert all("tools" not in body for body in server.requests), "no tools are offered"
    system = server.requests[0]["messages"][0]["content"]
    assert "```python" in system and "async def list_directory(*, path: str)" in system
    after_first = server.requests[1]["messages"][-1]
    assert after_first == {
        "role": "user",
        "content": 'Result of your program:\n["/data/a.txt","/data/b.txt"]',
    }
    assert server.requests[2]["messages"][-1]["content"] == "Result of your program:\n3", "the REPL persists"
    assert result.summary.run_code_calls == 2 and result.summary.nested_calls == 1


async def test_an_error_goes_back_as_an_error_and_the_last_round_asks_for_the_answer(
    scope: ReplScope,
) -> None:
    script = [text_reply("```python\n1 / 0\n```"), text_reply("```python\nstill_code()\n```")]
    with ScriptedOpenAI(script) as server:
        config = BackendConfig(base_url=server.base_url, model="m", protocol="text", max_rounds=2)
        async with OpenAiCompatibleBackend(config) as backend:
            result = await backend.run(history=[], user_text="divide", executor=scope)
    assert server.requests[1]["messages"][-2]["content"].startswith("Error from your program:\nTraceback")
    # The last round's reply is the answer even with a block in it: nothing more runs.
    assert result.reply == "```python\nstill_code()\n```" and result.summary.run_code_calls == 1


def test_the_code_of_a_reply_is_its_python_blocks() -> None:
    assert python_code("no code here") is None
    assert python_code("```json\n{}\n```") is None, "only Python blocks are programs"
    assert python_code("```python\n\n```") is None
    assert python_code("```python\n# (no output; the last expression was None)\n```") is None, (
        "a copied result"
    )
    assert python_code("```python3\nx = 1\n```") == "x = 1"
    assert python_code("a\n```python\nx = 1\n```\nthen\n```py\nx + 1\n```") == "x = 1\nx + 1"


@STREAMED
async def test_pasted_stubs_are_dropped_and_the_same_program_is_not_run_twice(
    scope: ReplScope, stream: bool
) -> None:
    pasted = (
        "```python\nimport asyncio\n\nasync def list_directory(*, path: str) -> list[str]:\n"
        '    """The entries of a directory."""\n\nawait list_directory(path="/data")\n```'
    )
    again = "Here it is:\n```python\nawait list_directory(path='/data')  # the same call\n```"
    script = [text_reply(pasted), text_reply(again), text_reply("Three entries.")]
    with ScriptedOpenAI(script) as server:
        config = BackendConfig(base_url=server.base_url, model="m", stream=stream, protocol="text")
        async with OpenAiCompatibleBackend(config) as backend:
            result = await backend.run(history=[], user_text="What is in /data?", executor=scope)
    assert server.requests[1]["messages"][-1]["content"] == (
        "Result of your program:\n(your definitions of list_directory were dropped: the tool functions "
        'exist already; just call them)\n["/data/a.txt","/data/b.txt","/data/c.md"]'
    )
    assert server.requests[2]["messages"][-1]["content"].startswith(
        "Result of your program:\n(not run again: this turn already ran this same program; its "
        'result was:)\n["/data/a.txt","/data/b.txt","/data/c.md"]\n(If it answers'
    )
    assert result.reply == "Three entries." and result.summary.repairs == {"stub_pasted": 1}
    assert result.summary.nested_calls == 1


def test_the_protocol_is_a_flag_and_a_bad_one_is_a_one_line_error() -> None:
    asyncai = [sys.executable, "-m", "asyncai.cli.main"]
    shown = subprocess.run([*asyncai, "--help"], capture_output=True, text=True, check=True).stdout
    assert "--protocol {tools,text}" in shown
    bad = subprocess.run([*asyncai, "--protocol", "json", "-p", "x"], capture_output=True, text=True)
    assert bad.returncode == 2 and "invalid choice: 'json'" in bad.stderr and "Traceback" not in bad.stderr
