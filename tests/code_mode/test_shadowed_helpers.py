"""A snippet may bind a helper's name (issue 35: a correct program was refused for a variable
called ``names``): the helper is shadowed in that REPL only, and the tool wrappers and the other
helpers, which call helpers through private aliases, keep working. Tool functions stay protected."""

from __future__ import annotations

import json
from typing import Any

import anyio.lowlevel
import pytest

from asyncai.code_mode import CodeMode
from asyncai.code_mode.catalog.stubs import RESERVED_HELPERS
from asyncai.tools.functions import FunctionTools, tool
from asyncai.tools.types import ToolsChangedListener
from tests.code_mode.conftest import TEST_LIMITS, FakeExecutor, pods, run, wait

pytestmark = pytest.mark.anyio

PHASES = {"Running": 8, "Pending": 1, "Failed": 1}


async def test_every_helper_name_may_be_bound_and_the_rest_still_works(code_mode: CodeMode) -> None:
    # The program the model wrote, in spirit: its own variable named like a helper.
    output = await run(
        code_mode,
        "p = await pods()\nnames = [i['metadata']['name'] for i in p['items']]\nnames[:2]",
    )
    assert (output.content, output.is_error) == ('["pod-0","pod-1"]', False)
    shadowed = "\n".join(f"{name} = {n}" for n, name in enumerate(RESERVED_HELPERS) if name != "count_by")
    output = await run(code_mode, f"{shadowed}\np = await pods()\ncount_by(p, 'status.phase')")
    assert json.loads(output.content) == PHASES, "count_by reaches items, dig and to_json privately"
    output = await run(code_mode, "count_by = 'mine'\n[count_by, names, len((await pods())['items'])]")
    assert json.loads(output.content) == ["mine", 1, 10], "the tool wrappers call no helper"


@pytest.mark.parametrize(
    "code",
    [
        "try:\n    1 / 0\nexcept ZeroDivisionError as names:\n    pass\n'ran'",
        "y = [(items := 3)]\n'ran'",
        "def f():\n    global dig\n    dig = 1\nf()\n'ran'",
        "def shape(x):\n    return 'mine'\nshape(1) and 'ran'",
        "for to_json in range(2):\n    pass\n'ran'",
        "import json as count_by\n'ran'",
    ],
)
async def test_any_way_of_binding_a_helper_runs(code_mode: CodeMode, code: str) -> None:
    output = await run(code_mode, code)
    assert (output.content, output.is_error) == ("ran", False)


async def test_a_shadowed_helper_is_shadowed_in_its_own_repl_only(code_mode: CodeMode) -> None:
    first, second = code_mode.new_scope(), code_mode.new_scope()
    try:
        await run(first, "names = 'mine'")
        assert (await run(first, "names")).content == "mine"
        assert (await run(second, "names({'items': [{'name': 'a'}]})")).content == '["a"]'
    finally:
        await first.aclose()
        await second.aclose()


async def test_the_description_and_the_type_check_accept_a_shadowing_program(code_mode: CodeMode) -> None:
    description = code_mode.tools()[0].description
    assert "never rebind" not in description and "a variable of the same name hides one" in description
    # Checked (it calls a tool): the checker's objection to a helper's name rebound is not a certain one.
    output = await run(code_mode, "items = (await pods())['items']\nlen(items)")
    assert (output.content, output.is_error) == ("10", False)


class ChangingTools(FunctionTools):
    """Function tools that tell their listeners when one is added, as a server's
    ``tools/list_changed`` does."""

    def __init__(self) -> None:
        super().__init__([wait, pods])
        self.listeners: list[ToolsChangedListener] = []

    def on_tools_changed(self, listener: ToolsChangedListener) -> None:
        self.listeners.append(listener)

    async def offer(self, function: Any) -> None:
        self.add(function)
        for listener in self.listeners:
            await listener()


@tool(read_only=True)
def later() -> str:
    """A tool that arrives after the REPL started."""
    return "later"


async def test_a_shadowing_variable_survives_new_tool_functions() -> None:
    tools = ChangingTools()
    async with CodeMode(tools, TEST_LIMITS) as code_mode:
        await run(code_mode, "names = ['mine']\njson = 'also mine'")
        await tools.offer(later)
        output = await run(code_mode, "[await later(), names, json, count_by([{'a': 1}], 'a')]")
    assert json.loads(output.content) == ["later", ["mine"], "also mine", {"1": 1}]


async def test_a_call_to_a_shadowed_helper_does_not_run_while_the_snippet_streams(
    code_mode: CodeMode, fake: FakeExecutor
) -> None:
    """A statement runs early only when all it calls is known to be harmless: a helper is, a
    function of the REPL's own under a helper's name is not."""
    scope = code_mode.new_scope()
    try:
        await run(scope, "calls = []\ndef names(x):\n    calls.append(x)\n    return x")
        code = "a = names(1)\nb = 2\nlen(calls)"
        streamed = scope.eager()
        for end in range(len(code) + 1):
            streamed.update(code[:end])
            await anyio.lowlevel.checkpoint()
        output = await streamed.finish({"code": code})
        assert streamed.ran == [], "feeding early stops at the call of the REPL's own function"
        assert output.content == "1"
        # The helper itself still runs early (nothing shadows it in a fresh REPL).
        other = code_mode.new_scope()
        try:
            streamed = other.eager()
            code = "a = names({'items': []})\nb = 2\na"
            for end in range(len(code) + 1):
                streamed.update(code[:end])
                await anyio.lowlevel.checkpoint()
            assert (await streamed.finish({"code": code})).content == "[]"
            assert streamed.ran[:1] == ["a = names({'items': []})"]
            # Binding a helper's name runs early too; the snippet's later call of it would not.
            streamed = other.eager()
            code = "items = (await pods())['items']\nn = len(items)\nitems(n)"
            for end in range(len(code) + 1):
                streamed.update(code[:end])
                await anyio.lowlevel.checkpoint()
            late = await streamed.finish({"code": code})
            assert streamed.ran[:1] == ["items = (await pods())['items']"]
            assert "TypeError" in late.content and "not callable" in late.content
        finally:
            await other.aclose()
    finally:
        await scope.aclose()
    assert [span.tool for span in fake.spans] == ["pods"]
