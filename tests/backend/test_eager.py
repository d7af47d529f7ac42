"""Snippets that run while the model still writes them: the scripted model streams a ``run_code``
call and holds its stream part way; what ran by then, and when the server saw each call, shows what
ran early (real workers; the tools are in-memory functions that record their calls)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from asyncai.backend.config import BackendConfig
from asyncai.backend.eager import streamed_code
from asyncai.backend.openai import OpenAiCompatibleBackend
from asyncai.code_mode import CodeMode
from asyncai.code_mode.engine.plan import Statement, complete_statements, runs_early
from asyncai.code_mode.engine.scope import ReplScope
from asyncai.tools.functions import FunctionTools, tool
from tests.code_mode.conftest import TEST_LIMITS, FakeExecutor
from tests.fakes.openai_server import ScriptedOpenAI, held_reply, text_reply

pytestmark = pytest.mark.anyio


@pytest.fixture
def fake() -> FakeExecutor:
    return FakeExecutor()


@pytest.fixture
async def scope(fake: FakeExecutor) -> AsyncIterator[ReplScope]:
    async with CodeMode(fake, TEST_LIMITS) as executor:
        scope = executor.new_scope()
        try:
            yield scope
        finally:
            await scope.aclose()


async def agent_held(
    scope: ReplScope, reply: dict[str, Any], while_held: Callable[[], Awaitable[None]], *, eager: bool = True
) -> tuple[Any, ScriptedOpenAI]:
    """Run the agent on ``reply``, await ``while_held()`` while its stream is held, then let it go
    on; return the agent's result and the model server."""
    with ScriptedOpenAI([reply, text_reply("done")]) as server:
        config = BackendConfig(base_url=server.base_url, model="m", stream=True, eager=eager)
        async with OpenAiCompatibleBackend(config) as backend, anyio.create_task_group() as group:
            outcome: dict[str, Any] = {}

            async def agent() -> None:
                outcome["run"] = await backend.run(history=[], user_text="go", executor=scope)

            group.start_soon(agent)
            await anyio.to_thread.run_sync(reply["holding"].wait, 30)
            await while_held()
            reply["release"].set()
    return outcome["run"], server


async def run_held(
    scope: ReplScope, fake: FakeExecutor, reply: dict[str, Any], *, eager: bool = True, calls: int = 1
) -> tuple[Any, list[str], ScriptedOpenAI]:
    """Run the agent on ``reply``; return its result, the tools that had been called when the
    stream was held, and the model server."""
    seen: list[str] = []

    async def until_called() -> None:
        if eager:  # the first statement ran while the stream is held: its call reached the tool
            with anyio.fail_after(20):
                while len(fake.spans) < calls:
                    called = anyio.Event()
                    fake.on_call = called.set
                    if len(fake.spans) < calls:
                        await called.wait()
        seen.extend(span.tool for span in fake.spans)

    result, server = await agent_held(scope, reply, until_called, eager=eager)
    return result, seen, server


async def test_a_read_only_call_runs_while_the_snippet_streams(scope: ReplScope, fake: FakeExecutor) -> None:
    code = "a = await pods()\nb = await wait(seconds=0, tag='x')\n[len(a['items']), b['tag']]"
    result, seen, server = await run_held(scope, fake, held_reply(code, "b = await"))
    assert seen == ["pods"]  # held after the second line began: the first had run
    tool_result = result.messages[-2].content
    assert json.loads(tool_result) == [10, "x"]
    assert result.summary.eager_statements >= 1  # the turn summary (and its log line) counts them
    assert [span.tool for span in fake.spans] == ["pods", "wait"]
    assert fake.spans[0].started < server.stream_ended[0]  # the first call ran before the stream ended


async def test_a_mutating_call_never_starts_before_the_stream_ends(
    scope: ReplScope, fake: FakeExecutor
) -> None:
    code = "a = await pods()\nd = await delete_item(name='web')\nn = 1\n[d, n]"
    result, seen, server = await run_held(scope, fake, held_reply(code, "n = 1"))
    assert seen == ["pods"]
    assert json.loads(result.messages[-2].content) == ["deleted web", 1]
    [delete] = [span for span in fake.spans if span.tool == "delete-item"]
    assert delete.started >= server.stream_ended[0]  # the server saw it only after the stream ended


async def test_a_snippet_that_does_not_compile_runs_nothing_mutating_and_says_what_ran(
    scope: ReplScope, fake: FakeExecutor
) -> None:
    # wait's argument is not a literal: it runs as the statement, not as a launch
    code = "a = await pods()\nx = await wait(seconds=0, tag=str(len(a)))\nd = await delete_item(name='web')\n)broken("
    result, seen, _ = await run_held(scope, fake, held_reply(code, "d = await"), calls=2)
    text = result.messages[-2].content
    assert seen == ["pods", "wait"] and [span.tool for span in fake.spans] == ["pods", "wait"]
    assert text.startswith(
        "error: the finished snippet does not compile, so the rest of the snippet did not run"
    )
    assert "- a = await pods()\n- x = await wait(seconds=0, tag=str(len(a)))" in text
    after = await scope.call_tool("run_code", {"code": "x['tag']"})
    assert after.content == "1"  # the REPL is as the statements that ran left it


async def test_without_eager_nothing_runs_before_the_stream_ends(
    scope: ReplScope, fake: FakeExecutor
) -> None:
    code = "a = await pods()\nb = await wait(seconds=0, tag='x')\n[len(a['items']), b['tag']]"
    reply = held_reply(code, "b = await")
    result, seen, server = await run_held(scope, fake, reply, eager=False)
    assert seen == []
    assert json.loads(result.messages[-2].content) == [10, "x"]
    assert fake.spans[0].started >= server.stream_ended[0]


CORPUS = [
    "x = 1\ny = x + 1\n[x, y]",
    "a = await pods()\nrunning = [p for p in a['items'] if p['status']['phase'] == 'Running']\nlen(running)",
    "print('one')\nprint('two')\nz = 3",
    "a = await pods()\nb = await fail(message='boom')\nc = 1",
    "import asyncio\nr = await asyncio.gather(wait(seconds=0, tag='p'), wait(seconds=0, tag='q'))\n[t['tag'] for t in r]",
    "for i in range(3):\n    print(i)\nelse:\n    done = True\ndone",
    "n = 0\nwhile n < 3:\n    n += 1\nn",
    "q = undefined_name\nq",
    "p = await pods()\nnames_ = [dig(i, 'metadata', 'name') for i in items(p)]\nnames_[:3]",
    "def double(v):\n    return v * 2\nr = double(21)\nr",
    "import json\ns = json.dumps({'a': 1})\ntext = '''\nmulti\nline\n'''\n[s, text]",
    "try:\n    await fail(message='x')\nexcept RuntimeError as e:\n    caught = str(e)\ncaught",
    "p = await pods(namespace='a', bogus=1)\np",
    "w = await wait(seconds=0, tag='t')\nw['tag'] * 2\n",
    "big = list(range(10))\nsum(big)\n_",
    "a = await pods()\nb = await pods()\nc = len(a['items']) + len(b['items'])\nprint(c)\nc",
    "r = await asyncio.gather(*[wait(seconds=0, tag=str(i)) for i in range(3)])\n[t['tag'] for t in r]",
    # Values changed in place before the last expression (the streamed chat once failed on each).
    "xs = []\nxs.append(1)\nlen(xs)",
    "xs = [3]\nxs.extend([1, 2])\nxs.insert(0, 9)\nxs",
    "d = {}\nd.update({'a': 1})\nd.setdefault('b', []).append(2)\nd",
    "s = set()\ns.add(1)\ns.discard(2)\nsorted(s)",
    # The note names what the whole snippet bound, in its order, and what an error left bound.
    "total = 0\nfor v in range(3):\n    total += v\ntotal",
    "big = list(range(10))\nsum(big)\nundefined_name",
]


@pytest.mark.parametrize("code", CORPUS)
async def test_results_are_the_same_with_and_without_eager_execution(fake: FakeExecutor, code: str) -> None:
    async with CodeMode(fake, TEST_LIMITS) as executor:
        plain, eager = executor.new_scope(), executor.new_scope()
        try:
            expected = await plain.call_tool("run_code", {"code": code})
            run = eager.eager()
            for end in range(0, len(code) + 1, 3):
                run.update(code[:end])
                await anyio.lowlevel.checkpoint()  # let it feed what is complete, as a stream would
            got = await run.finish({"code": code})
            notes = plain.context_note(), eager.context_note()
        finally:
            await plain.aclose()
            await eager.aclose()
    # Each statement that ran early was a feed of its own: only a traceback's feed number differs.
    assert (feeds_unnumbered(got.content), got.is_error) == (
        feeds_unnumbered(expected.content),
        expected.is_error,
    )
    assert notes[1] == notes[0], "the variables note is the same"


@pytest.mark.parametrize(
    ("code", "value"),
    [
        ("xs = []\nxs.append(1)\nlen(xs)", "1"),
        ("d = {}\nd.update({'a': 1})\nd.setdefault('b', []).append(2)\nd", '{"a":1,"b":[2]}'),
        ("s = set()\ns.add(1)\ns.discard(2)\nsorted(s)", "[1]"),
        ("xs = [3]\nxs.extend([1])\nxs.insert(0, 9)\nxs", "[9,3,1]"),
    ],
)
async def test_a_value_changed_in_place_by_statements_run_early_reaches_the_last_expression(
    scope: ReplScope, code: str, value: str
) -> None:
    early = code.splitlines()[:-1]
    run = scope.eager()
    run.update(code[: code.rindex("\n") + 2])  # every statement but the last has arrived
    with anyio.fail_after(10):
        while len(run.ran) < len(early):  # until each has run early, as they do in the chat
            await anyio.lowlevel.checkpoint()
    output = await run.finish({"code": code})
    assert run.ran == early
    assert (output.content, output.is_error) == (value, False)


async def test_a_refusal_found_after_statements_ran_names_both(fake: FakeExecutor) -> None:
    code = "x = 5\npods()\nx"
    async with CodeMode(fake, TEST_LIMITS) as executor:
        scope = executor.new_scope()
        try:
            run = scope.eager()
            for end in range(len(code) + 1):
                run.update(code[:end])
                await anyio.lowlevel.checkpoint()
            got = await run.finish({"code": code})
        finally:
            await scope.aclose()
    assert got.is_error and got.content.startswith(
        "error: the finished snippet was refused (`pods(...)` is called without await, so it would never "
        "run. Write `result = await pods(...)`.), so the rest of the snippet did not run."
    )
    assert got.content.endswith("the REPL keeps what they did:\n- x = 5")


def feeds_unnumbered(text: str) -> str:
    return re.sub(r"<python-input-\d+>", "<python-input>", text)


# -- the rules, without workers -------------------------------------------------------------------


def test_a_statement_is_complete_once_the_next_one_has_begun() -> None:
    code = "a = 1\nif a:\n    b = 2\nelse:\n    b = 3\nx = f(\n1)\nlast"
    assert [s.start_line for s in complete_statements(code, 0)] == [1, 2, 6]
    assert complete_statements("a = 1\nif a:\n    b = 2\nel", 0) == [Statement("a = 1\n", 1)]  # "else"?
    assert complete_statements("a = 1\nb", 0) == [Statement("a = 1\n", 1)]  # whatever "b" becomes
    assert complete_statements("a = 1\n", 0) == []  # nothing after it yet
    # Comments before the first statement are no statement: nothing runs for them.
    assert complete_statements("# a note\n\n# more\na = 1\nb = 2\n", 0) == [Statement("a = 1\n", 4)]


def test_only_statements_that_change_nothing_run_early(fake: FakeExecutor) -> None:
    from asyncai.code_mode.catalog.entries import build_catalog

    catalog = build_catalog(fake.tools())
    early = lambda source: runs_early(Statement(source, 1), catalog)  # noqa: E731
    assert early("a = await pods()\n") and early("n = len(a['items'])\n") and early("print(sorted(x))\n")
    assert not early("await delete_item(name='x')\n")  # a mutating tool
    assert not early("r = helper(1)\n")  # a function the REPL defined: it may call anything
    assert not early("pods = 1\n")  # the scan refuses it: it must not run before the refusal


def test_the_code_so_far_is_read_from_partial_arguments() -> None:
    assert streamed_code('{"code": "x = 1\\ny = ') == "x = 1\ny = "
    assert streamed_code('{"restart": true, "co') is None
    assert streamed_code("not json") is None


async def test_restart_after_statements_ran_runs_nothing_more_and_says_so(
    scope: ReplScope, fake: FakeExecutor
) -> None:
    await scope.call_tool("run_code", {"code": "kept = 1"})
    code = "a = await pods()\nb = await delete_item(name='x')\nb"
    reply = held_reply(code, "b = await")
    reply["tool_calls"][0]["arguments"] = json.dumps({"code": code, "restart": True})  # restart comes last
    result, seen, _ = await run_held(scope, fake, reply)
    text = result.messages[-2].content
    assert seen == ["pods"] and [span.tool for span in fake.spans] == ["pods"]
    assert text.startswith("error: restart was asked for after statements had already run, so the rest")
    assert "- a = await pods()" in text
    kept = await scope.call_tool("run_code", {"code": "[kept, len(a['items'])]"})
    assert json.loads(kept.content) == [1, 10]  # not restarted: as the statement that ran left it


async def test_a_call_cut_off_mid_snippet_reports_what_ran(scope: ReplScope, fake: FakeExecutor) -> None:
    code = "a = await pods()\nb = await wait(seconds=0, tag='x')\nb['tag']"
    reply = held_reply(code, "b = await")
    cut = reply["tool_calls"][0]["arguments"]
    reply["tool_calls"][0]["arguments"] = cut[: cut.index("b = await") + 12]  # the JSON never closes
    result, seen, _ = await run_held(scope, fake, reply)
    text = result.messages[-2].content
    assert seen == ["pods"] and [span.tool for span in fake.spans] == ["pods"]
    assert "the run_code call was cut off before the whole snippet arrived" in text
    assert "- a = await pods()" in text


async def test_a_literal_read_only_call_in_a_branch_starts_early_and_is_claimed(
    scope: ReplScope, fake: FakeExecutor
) -> None:
    code = (
        "a = await wait(seconds=0, tag='x')\nif a['tag'] == 'x':\n    p = await pods(namespace='default')\n"
        "    n = len(p['items'])\nn"
    )
    result, seen, _ = await run_held(scope, fake, held_reply(code, "    n = len"), calls=2)
    assert seen == ["wait", "pods"]  # pods started while its branch was still being written
    assert json.loads(result.messages[-2].content) == 10
    assert [span.tool for span in fake.spans] == ["wait", "pods"]  # the snippet took the launch's result
    assert result.summary.nested_calls == 2


async def test_an_unclaimed_launch_is_cancelled_and_not_billed(scope: ReplScope, fake: FakeExecutor) -> None:
    # TEST_LIMITS allows 5 nested calls: the snippet makes 5, the launch it never claims is not one
    code = (
        "a = await wait(seconds=0, tag='x')\nif a['tag'] == 'y':\n    await hang()\n"
        "r = [await wait(seconds=0, tag=str(i)) for i in range(4)]\nlen(r)"
    )
    result, seen, _ = await run_held(scope, fake, held_reply(code, "r = [await"), calls=2)
    assert seen == ["wait", "hang"]
    assert json.loads(result.messages[-2].content) == 4
    [hang] = [span for span in fake.spans if span.tool == "hang"]
    assert hang.ended > 0  # cancelled when the snippet ended


async def test_a_launch_is_not_claimed_after_a_mutating_call() -> None:
    # ``count`` streams (and is launched) before ``bump`` may run: its early answer is stale
    ledger = {"count": 0}
    launched = threading.Event()

    @tool(read_only=True)
    def count() -> int:
        """How many bumps so far."""
        launched.set()
        return ledger["count"]

    @tool(destructive=True)
    def bump() -> int:
        """One more."""
        ledger["count"] += 1
        return ledger["count"]

    code = "await bump()\nn = await count()\nn"
    reply = held_reply(code, "n = await count()")

    async def launched_while_held() -> None:
        assert await anyio.to_thread.run_sync(launched.wait, 20)

    async with CodeMode(FunctionTools([count, bump]), TEST_LIMITS) as code_mode:
        scope = code_mode.new_scope()
        result, _ = await agent_held(scope, reply, launched_while_held)
        await scope.aclose()
    assert json.loads(result.messages[-2].content) == 1  # read after the bump, not before
    assert ledger["count"] == 1


async def test_a_snippet_the_check_stops_says_which_calls_started_early(
    scope: ReplScope, fake: FakeExecutor
) -> None:
    # the def ends early feeding; the literal calls are launched as their lines arrive
    code = (
        "def f():\n    return 1\nif f():\n    p = await pods(namespace='x')\nq = await pods(namespace=1)\nq"
    )
    result, seen, _ = await run_held(scope, fake, held_reply(code, "p = await pods(namespace='x')"))
    assert seen == ["pods"]
    text = result.messages[-2].content
    # both literal calls were launched as their lines arrived, the snippet's own call was not made
    assert text.startswith(
        "error: the type check found mistakes before anything ran (the snippet called no tool; "
        "2 read-only calls started early while it streamed, unused):"
    )
    assert [span.arguments for span in fake.spans] == [{"namespace": "x"}, {"namespace": 1}]
