"""What a small model on a real server sends, through the whole loop: the scripted model answers
as llama-server did for Qwen2.5-Coder-1.5B (calls in the text, stubs called as tools, empty replies,
a hundred calls in one reply), streamed and not; the snippets run in real workers over in-memory
function tools."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest

from asyncai.backend import (
    BackendConfig,
    Message,
    ModelServerError,
    ModelTurn,
    OpenAiCompatibleBackend,
    RunResult,
)
from asyncai.backend.programs import drop_missing_imports, drop_pasted_stubs
from asyncai.code_mode import CodeMode
from asyncai.code_mode.engine.contract import IMPORTABLE_MODULES
from asyncai.code_mode.engine.scope import ReplScope
from asyncai.tools.functions import FunctionTools, tool
from asyncai.tools.types import ToolCallOutput, ToolSource
from tests.code_mode.conftest import TEST_LIMITS
from tests.fakes.executors import ECHO, FakeToolSource
from tests.fakes.logs import events
from tests.fakes.openai_server import ScriptedOpenAI, call, text_reply, tool_reply

pytestmark = pytest.mark.anyio

STREAMED = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
SEARCH = "await search_files(path='/data', pattern='*.txt')"
FOUND = '["/data/a.txt","/data/b.txt"]'
searched: list[tuple[str, str]] = []


@tool(read_only=True)
def search_files(path: str, pattern: str) -> list[str]:
    """Files under path whose names match pattern."""
    searched.append((path, pattern))
    return [f"{path}/a.txt", f"{path}/b.txt"]


@tool(destructive=True)
def delete_entities(entity_names: list[str]) -> str:
    """Delete entities from the graph."""
    return f"deleted {len(entity_names)}"


@pytest.fixture
async def scope() -> AsyncIterator[ReplScope]:
    searched.clear()
    functions = FunctionTools([search_files, delete_entities])
    async with CodeMode(functions, TEST_LIMITS, mutations="deny") as code_mode:
        scope = code_mode.new_scope()
        try:
            yield scope
        finally:
            await scope.aclose()


class Recorder:
    """A session harness keeping what it is told."""

    def __init__(self) -> None:
        self.users: list[Message] = []
        self.outputs: list[ToolCallOutput] = []

    def user_turn(self, message: Message) -> None:
        self.users.append(message)

    def assistant_turn(self, message: Message, turn: ModelTurn) -> None:
        pass

    def tool_result(self, message: Message, output: ToolCallOutput) -> None:
        self.outputs.append(output)

    def final_reply(self, message: Message, turn: ModelTurn) -> None:
        pass


async def run(
    server: ScriptedOpenAI, executor: ToolSource, *, session: Recorder | None = None, **overrides: Any
) -> RunResult:
    values: dict[str, Any] = {"system_prompt": "SYSTEM", "request_timeout": 30.0, **overrides}
    config = BackendConfig(base_url=server.base_url, model="m", **values)
    async with OpenAiCompatibleBackend(config) as backend:
        return await backend.run(history=[], user_text="question", executor=executor, session=session)


def tool_results(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def calls_sent_back(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (c["function"]["name"], json.loads(c["function"]["arguments"]))
        for m in body["messages"]
        if m["role"] == "assistant"
        for c in m.get("tool_calls", [])
    ]


@STREAMED
async def test_a_catalog_function_called_as_a_tool_runs_as_a_snippet(
    scope: ReplScope, stream: bool, log_stream: io.StringIO
) -> None:
    script = [
        tool_reply(call("search_files", {"path": "/data", "pattern": "*.txt"})),
        text_reply("Two files."),
    ]
    with ScriptedOpenAI(script) as server:
        result = await run(server, scope, stream=stream)
    assert result.reply == "Two files." and searched == [("/data", "*.txt")]
    # The model reads what was run for it, and its history shows the call as the run_code it became.
    assert tool_results(server.requests[1]) == [f"(ran as run_code: {SEARCH})\n{FOUND}"]
    assert calls_sent_back(server.requests[1]) == [("run_code", {"code": SEARCH})]
    [repaired] = events(log_stream, "backend.call_repaired")
    assert (repaired["kind"], repaired["ran_as"]) == ("catalog_name", SEARCH)
    [summary] = events(log_stream, "model.turn_summary")
    assert (summary["repaired"], summary["repairs"], summary["nested_calls"]) == (1, {"catalog_name": 1}, 1)


async def test_a_catalog_call_meets_the_mutation_gate_and_is_audited(scope: ReplScope) -> None:
    script = [tool_reply(call("delete_entities", {"entity_names": ["A", "B"]})), text_reply("Refused.")]
    recorder = Recorder()
    with ScriptedOpenAI(script) as server:
        await run(server, scope, session=recorder)
    [result] = tool_results(server.requests[1])
    assert result.startswith("(ran as run_code: await delete_entities(entity_names=['A', 'B']))\n")
    assert "PermissionError: delete_entities() was not run" in result
    [output] = recorder.outputs
    assert output.is_error and output.audit is not None
    [nested] = output.audit["nested_calls"]
    assert (nested["tool"], nested["refused"], nested["mutating"]) == ("delete_entities", True, True)


TEXT_CALLS = {
    "fenced_json": (
        '```json\n{"name": "run_code", "arguments": {"code": "6 * 7"}}\n```',
        None,
        "6 * 7",
        "42",
    ),
    "tool_call_tags": (
        '<tool_call>\n{"name": "search_files", "arguments": {"path": "/data", "pattern": "*.txt"}}\n</tool_call>',
        None,
        SEARCH,
        f"(ran as run_code: {SEARCH})\n{FOUND}",
    ),
    "bare_json": ('{"function": "run_code", "parameters": "{\\"code\\": \\"6 * 7\\"}"}', None, "6 * 7", "42"),
    "code_quoted": (
        'Let me compute it.\n```json\n{"name": "run_code", "arguments": {"code": """\nx = 6\nx * 7\n"""}}\n```',
        "Let me compute it.",
        "x = 6\nx * 7",
        "42",
    ),
}
KINDS = {
    "fenced_json": {"fenced_json": 1},
    "tool_call_tags": {"tool_call_tags": 1, "catalog_name": 1},
    "bare_json": {"bare_json": 1},
    "code_quoted": {"fenced_json": 1, "code_quoted": 1},
}


@STREAMED
@pytest.mark.parametrize("shape", list(TEXT_CALLS))
async def test_a_call_written_in_the_reply_text_runs_as_the_call(
    scope: ReplScope, shape: str, stream: bool, log_stream: io.StringIO
) -> None:
    text, prose, code, result = TEXT_CALLS[shape]
    # Streamed, the text arrives in small content deltas, as llama-server sends it.
    script = [text_reply(text, content_chunk=5), text_reply("It is done.")]
    with ScriptedOpenAI(script) as server:
        reply = await run(server, scope, stream=stream)
    assert reply.reply == "It is done." and len(server.requests) == 2
    assert tool_results(server.requests[1]) == [result]
    [assistant] = [m for m in server.requests[1]["messages"] if m["role"] == "assistant"]
    assert calls_sent_back(server.requests[1]) == [("run_code", {"code": code})]
    assert assistant.get("content") == prose  # the JSON is a call now, not the model's words
    [summary] = events(log_stream, "model.turn_summary")
    assert (summary["repaired"], summary["repairs"]) == (1, KINDS[shape])
    assert sorted(e["kind"] for e in events(log_stream, "backend.call_repaired")) == sorted(KINDS[shape])


@STREAMED
async def test_a_fenced_call_with_words_after_it_runs(scope: ReplScope, stream: bool) -> None:
    """Small models announce the call, write it, then say what it will return: it is a call."""
    text = (
        "Let's execute this plan:\n"
        '```json\n{"name": "run_code", "arguments": {"code": "6 * 7"}}\n```\n'
        "This will return the product."
    )
    with ScriptedOpenAI([text_reply(text, content_chunk=5), text_reply("It is 42.")]) as server:
        result = await run(server, scope, stream=stream)
    assert result.reply == "It is 42." and tool_results(server.requests[1]) == ["42"]
    assert result.summary.repairs == {"fenced_json": 1}


@STREAMED
async def test_bare_json_with_words_after_it_stays_the_answer(scope: ReplScope, stream: bool) -> None:
    text = '{"name": "run_code", "arguments": {"code": "6 * 7"}} is how you would call it.'
    with ScriptedOpenAI([text_reply(text, content_chunk=5)]) as server:
        result = await run(server, scope, stream=stream)
    assert result.reply == text and len(server.requests) == 1


@STREAMED
async def test_a_python_block_that_calls_the_catalog_runs_as_run_code(scope: ReplScope, stream: bool) -> None:
    """The model wrote the snippet in its reply instead of calling run_code with it."""
    text = f"I will search the files:\n```python\nfiles = {SEARCH}\nlen(files)\n```\nThis counts them."
    script = [text_reply(text, content_chunk=7), text_reply("Two files.")]
    with ScriptedOpenAI(script) as server:
        result = await run(server, scope, stream=stream)
    assert result.reply == "Two files." and searched == [("/data", "*.txt")]
    assert tool_results(server.requests[1]) == ["2"]
    assert calls_sent_back(server.requests[1]) == [("run_code", {"code": f"files = {SEARCH}\nlen(files)"})]
    assistant = next(m for m in server.requests[1]["messages"] if m["role"] == "assistant")
    assert assistant["content"] == "I will search the files:"
    assert result.summary.repairs == {"python_block": 1}


@STREAMED
async def test_a_python_block_that_calls_nothing_of_the_catalog_is_the_answer(
    scope: ReplScope, stream: bool
) -> None:
    text = "In Python you would write:\n```python\nprint(sorted([3, 1, 2]))\n```"
    with ScriptedOpenAI([text_reply(text)]) as server:
        result = await run(server, scope, stream=stream)
    assert result.reply == text and len(server.requests) == 1 and searched == []


@STREAMED
async def test_stubs_pasted_into_a_snippet_are_dropped(scope: ReplScope, stream: bool) -> None:
    code = (
        "async def search_files(*, path: str, pattern: str) -> list[str]:\n"
        '    """Files under path whose names match pattern."""\n    return []\n\n'
        f"{SEARCH}"
    )
    script = [tool_reply(call("run_code", {"code": code})), text_reply("Two files.")]
    with ScriptedOpenAI(script) as server:
        result = await run(server, scope, stream=stream)
    assert searched == [("/data", "*.txt")], "the real tool ran, not the pasted body"
    assert tool_results(server.requests[1]) == [
        "(your definitions of search_files were dropped: the tool functions exist already; just call them)\n"
        + FOUND
    ]
    assert calls_sent_back(server.requests[1]) == [("run_code", {"code": SEARCH})]
    assert result.summary.repairs == {"stub_pasted": 1}


@STREAMED
async def test_a_pasted_stub_with_a_comment_for_its_body_is_dropped_too(
    scope: ReplScope, stream: bool
) -> None:
    """A small model's stub with no body does not parse; the rest of its program still runs."""
    code = (
        "import json\n\nasync def search_files(*, path: str, pattern: str) -> list[str]:\n"
        "    # Implementation of search_files function\n\n"
        "async def txt_files(path):\n    return await search_files(path=path, pattern='*.txt')\n\n"
        "await txt_files('/data')"
    )
    script = [tool_reply(call("run_code", {"code": code})), text_reply("Two files.")]
    with ScriptedOpenAI(script) as server:
        result = await run(server, scope, stream=stream)
    assert searched == [("/data", "*.txt")]
    assert tool_results(server.requests[1]) == [
        "(your definitions of search_files were dropped: the tool functions exist already; just call them)\n"
        + FOUND
    ]
    assert result.summary.repairs == {"stub_pasted": 1}


def test_code_that_does_not_parse_loses_only_pasted_definitions() -> None:
    functions = {"search_files": "run_code", "read_text_file": "run_code"}
    bodyless = "async def read_text_file(*, path: str,\n    head: int | None = None) -> dict:\n    # TODO\n"
    assert drop_pasted_stubs(f"{bodyless}x = 1\nx", functions) == ("x = 1\nx", ("read_text_file",))
    assert drop_pasted_stubs(f"{bodyless}x = (", functions) == (f"{bodyless}x = (", ()), "still broken"
    assert drop_pasted_stubs(f"import json\n{bodyless}", functions) == (f"import json\n{bodyless}", ()), (
        "nothing but imports would be left: the engine's refusal says what to write"
    )
    assert drop_pasted_stubs("def helper(:\n    pass\nx", functions) == ("def helper(:\n    pass\nx", ())


@STREAMED
async def test_an_unused_import_of_a_missing_module_is_dropped(scope: ReplScope, stream: bool) -> None:
    code = f"import requests\nimport json\n\nfound = {SEARCH}\njson.dumps(found)"
    script = [tool_reply(call("run_code", {"code": code})), text_reply("Two files.")]
    with ScriptedOpenAI(script) as server:
        result = await run(server, scope, stream=stream)
    assert tool_results(server.requests[1]) == [
        "(import requests was dropped: the sandbox has no such module, and nothing used it)\n"
        + json.dumps(json.loads(FOUND))
    ]
    assert calls_sent_back(server.requests[1]) == [
        ("run_code", {"code": f"import json\n\nfound = {SEARCH}\njson.dumps(found)"})
    ]
    assert result.summary.repairs == {"import_dropped": 1}


@pytest.mark.parametrize(
    ("code", "kept", "dropped"),
    [
        ("import requests, numpy as np\nfrom bs4 import BeautifulSoup\nx = 1", "x = 1",
         ("requests", "numpy", "bs4")),
        ("import requests\nr = requests.get('u')", "import requests\nr = requests.get('u')", ()),  # used
        ("import os, json\nx = 1", "import os, json\nx = 1", ()),  # the sandbox has both
        ("import typing.re as t\nx = 1", "import typing.re as t\nx = 1", ()),
        ("from . import sibling\nx = 1", "from . import sibling\nx = 1", ()),  # relative: the engine says
        ("import requests", "import requests", ()),  # nothing else: the engine's error says it
        ("import requests\nx = (", "import requests\nx = (", ()),  # does not parse
        ("import pandas as pd\ndef f():\n    return pd\nf()", "import pandas as pd\ndef f():\n    return pd\nf()", ()),
    ],
    ids=["three", "used", "present", "dotted-present", "relative", "only-import", "unparsable", "used-inside"],
)  # fmt: skip
def test_only_unused_imports_of_missing_modules_are_dropped(
    code: str, kept: str, dropped: tuple[str, ...]
) -> None:
    assert drop_missing_imports(code, IMPORTABLE_MODULES) == (kept, dropped)


async def test_only_pasted_stubs_are_refused_with_the_call_to_write(scope: ReplScope) -> None:
    code = 'import asyncio\nasync def search_files(*, path: str, pattern: str) -> list[str]:\n    """Doc."""'
    script = [tool_reply(call("run_code", {"code": code})), text_reply("ok")]
    with ScriptedOpenAI(script) as server:
        await run(server, scope)
    [result] = tool_results(server.requests[1])
    assert "already defined in the sandbox and ready to call" in result and "Nothing was run" in result


@STREAMED
async def test_the_same_program_twice_in_a_turn_runs_once_and_gets_its_result_again(
    scope: ReplScope, stream: bool
) -> None:
    script = [
        text_reply(
            '```json\n{"name": "search_files", "arguments": {"path": "/data", "pattern": "*.txt"}}\n```'
        ),
        tool_reply(call("run_code", {"code": 'await search_files(path="/data", pattern="*.txt")'})),
        tool_reply(call("run_code", {"code": "1 / 0"})),
        tool_reply(call("run_code", {"code": "1 / 0"})),
        text_reply("Two files."),
    ]
    with ScriptedOpenAI(script) as server:
        result = await run(server, scope, stream=stream)
    assert result.reply == "Two files." and searched == [("/data", "*.txt")]
    assert tool_results(server.requests[2])[-1] == (
        "(not run again: this turn already ran this same program; its result was:)\n"
        f"{FOUND}\n(If it answers the user's question, answer in plain words; if part of the "
        "answer is missing, run a program that fetches that part.)"
    )
    assert result.summary.nested_calls == 1, "the repeat was not counted as a run"
    # A program that failed may be tried again: the failure may have been passing.
    assert all(r.startswith("Traceback") for r in tool_results(server.requests[4])[-2:])


async def test_a_call_to_an_unknown_tool_is_told_to_call_run_code(scope: ReplScope) -> None:
    script = [tool_reply(call("kubectl", {"args": "get pods"})), text_reply("ok")]
    with ScriptedOpenAI(script) as server:
        await run(server, scope)
    assert tool_results(server.requests[1]) == [
        "error: unknown tool 'kubectl'. Available tools: run_code. "
        'Call run_code with Python code: {"code": "..."}.'
    ]


@STREAMED
async def test_calls_past_the_cap_of_one_reply_are_not_run(
    scope: ReplScope, stream: bool, log_stream: io.StringIO
) -> None:
    many = tool_reply(*[call("search_files", {"path": "/data", "pattern": "*.txt"}) for _ in range(40)])
    with ScriptedOpenAI([many, text_reply("done")]) as server:
        await run(server, scope, stream=stream)
    assert len(searched) == 16
    results = tool_results(server.requests[1])
    assert len(results) == 40 and results[:16] == [f"(ran as run_code: {SEARCH})\n{FOUND}"] * 16
    assert results[16] == (
        "error: not run: a reply may make at most 16 tool calls, and this was call 17 of 40. "
        "Do repeated work in one run_code snippet, with a loop."
    )
    [capped] = events(log_stream, "model.tool_calls_capped")
    assert (capped["calls"], capped["cap"], capped["level"]) == (40, 16, "warn")
    [summary] = events(log_stream, "model.turn_summary")
    assert (summary["run_code_calls"], summary["tool_errors"], summary["nested_calls"]) == (16, 24, 16)


@STREAMED
async def test_an_empty_reply_with_rounds_left_gets_one_nudge(
    scope: ReplScope, stream: bool, log_stream: io.StringIO
) -> None:
    script = [tool_reply(call("run_code", {"code": "6 * 7"})), text_reply(""), text_reply("It is 42.")]
    recorder = Recorder()
    with ScriptedOpenAI(script) as server:
        result = await run(server, scope, stream=stream, session=recorder)
    assert result.reply == "It is 42." and len(server.requests) == 3
    nudge = {
        "role": "user",
        "content": "Your reply was empty. The question was: question\n"
        "Answer it from the results above, in plain words, or call run_code if you need more.",
    }
    assert server.requests[2]["messages"][-1] == nudge
    assert [m.content for m in recorder.users] == ["question", nudge["content"]]
    assert Message("user", nudge["content"]) in result.messages
    [summary] = events(log_stream, "model.turn_summary")
    assert summary["nudged"] is True


@STREAMED
async def test_a_reply_still_empty_after_the_nudge_says_what_happened(scope: ReplScope, stream: bool) -> None:
    script = [tool_reply(call("run_code", {"code": "6 * 7"})), text_reply(""), {"content": None}]
    with ScriptedOpenAI(script) as server:
        result = await run(server, scope, stream=stream)
    assert len(server.requests) == 3  # one nudge, not more
    assert (
        result.reply == "(no answer was produced: the model returned no text; the last tool result was: 42)"
    )
    assert result.messages[-1] == Message("assistant", result.reply)


async def test_an_empty_first_reply_is_nudged_too() -> None:
    with ScriptedOpenAI([text_reply("   "), text_reply("hello")]) as server:
        result = await run(server, FakeToolSource())
    assert result.reply == "hello"
    assert [m["content"] for m in server.requests[1]["messages"] if m["role"] == "user"] == [
        "question",
        "Your reply was empty. The question was: question\n"
        "Answer it from the results above, in plain words, or call run_code if you need more.",
    ]


EXAMPLE_CODE = (
    "To find it, you can use the following code:\n```python\nimport requests\nr = requests.get(url)\n"
    "print(r.json()['title'])\n```\nThis prints the title."
)


@STREAMED
@pytest.mark.parametrize(
    ("reply", "opening"),
    [
        (
            EXAMPLE_CODE,
            "Your reply shows a program instead of an answer, and a program in a reply is not run.",
        ),
        (
            "```\nresult = await search_files(path='/data', pattern='*.txt')\n```",
            "Your reply shows a program",
        ),
        ("Here's how you can do it:", "Your reply stopped at a colon, before what it announced."),
    ],
    ids=["example-code", "bare-fence", "colon"],
)
async def test_a_reply_that_is_no_answer_after_a_tool_ran_gets_one_nudge(
    scope: ReplScope, stream: bool, reply: str, opening: str, log_stream: io.StringIO
) -> None:
    # As Qwen2.5-Coder-1.5B did: the program's output held the answer, and it replied with code.
    script = [tool_reply(call("run_code", {"code": "6 * 7"})), text_reply(reply), text_reply("It is 42.")]
    with ScriptedOpenAI(script) as server:
        result = await run(server, scope, stream=stream)
    assert result.reply == "It is 42." and len(server.requests) == 3
    nudge = server.requests[2]["messages"][-1]
    assert nudge["role"] == "user" and nudge["content"].startswith(opening)
    assert nudge["content"].endswith(
        "The question was: question\n"
        "Answer it from the results above, in plain words, or call run_code if you need more."
    )
    assert server.requests[2]["messages"][-2] == {"role": "assistant", "content": reply}
    [unfinished] = events(log_stream, "model.unfinished_reply")
    assert unfinished["kind"] == ("cut_short" if reply.endswith(":") else "code") and unfinished["nudged"]
    assert result.summary.nudged


@pytest.mark.parametrize(
    "reply",
    [
        "Here is a function that adds:\n```python\ndef add(a, b):\n    return a + b\n```",
        "The files are:\n```\na.txt\nb.txt\n```",
        "It returned:\n```python\n{'title': 'Loopback Gazette'}\n```",
    ],
    ids=["asked-for-code", "listing", "value"],
)
async def test_code_is_an_answer_when_no_tool_ran_and_a_fenced_value_always(reply: str) -> None:
    with ScriptedOpenAI([text_reply(reply)]) as server:
        result = await run(server, FakeToolSource())
    assert result.reply == reply and len(server.requests) == 1
    ran = [tool_reply(call("run_code", {"code": "1"})), text_reply(reply), text_reply("again")]
    with ScriptedOpenAI(ran) as server:
        result = await run(server, FakeToolSource())
    assert (result.reply == reply) == (not reply.startswith("Here is a function")), (
        "after a tool ran, only a program is no answer"
    )


@STREAMED
async def test_a_reply_still_code_after_the_nudge_is_the_answer(scope: ReplScope, stream: bool) -> None:
    script = [
        tool_reply(call("run_code", {"code": "6 * 7"})),
        text_reply(EXAMPLE_CODE),
        text_reply(EXAMPLE_CODE),
    ]
    with ScriptedOpenAI(script) as server:
        result = await run(server, scope, stream=stream)
    assert result.reply == EXAMPLE_CODE and len(server.requests) == 3, "one nudge, not more"


async def test_the_nudge_says_how_to_go_on_in_each_mode() -> None:
    script = [tool_reply(call("echo", {"text": "hi"})), text_reply(""), text_reply("hi")]
    with ScriptedOpenAI(script) as server:
        await run(server, FakeToolSource(tools=[ECHO]))
    assert server.requests[2]["messages"][-1]["content"] == (
        "Your reply was empty. The question was: question\n"
        "Answer it from the results above, in plain words, or call a tool if you need more."
    )
    with ScriptedOpenAI([text_reply("```python\n1 + 1\n```"), text_reply(""), text_reply("2")]) as server:
        await run(server, FakeToolSource(), protocol="text")
    assert server.requests[2]["messages"][-1]["content"] == (
        "Your reply was empty. The question was: question\n"
        "Answer it from the results above, in plain words, or reply with a ```python program if you need more."
    )


@STREAMED
@pytest.mark.parametrize(
    "reply", ["", "Here is the corrected code:", EXAMPLE_CODE], ids=["empty", "colon", "code"]
)
async def test_a_nudge_after_a_failed_program_asks_for_the_fix_not_an_answer(
    scope: ReplScope, stream: bool, reply: str
) -> None:
    # As Qwen2.5-Coder-1.5B did: told to answer from the results above when the only result was a
    # traceback, it invented a total.
    script = [
        tool_reply(call("run_code", {"code": "{}['ids']"})),
        text_reply(reply),
        tool_reply(call("run_code", {"code": "6 * 7"})),
        text_reply("It is 42."),
    ]
    with ScriptedOpenAI(script) as server:
        result = await run(server, scope, stream=stream)
    assert result.reply == "It is 42." and len(server.requests) == 4
    [failed] = tool_results(server.requests[1])
    assert "KeyError" in failed
    nudge = server.requests[2]["messages"][-1]
    assert nudge["role"] == "user" and "Your last program failed (the error is above). " in nudge["content"]
    assert nudge["content"].endswith(
        "The question was: question\n"
        "Call run_code with the corrected program, or, if it cannot be fixed, say what went wrong."
    )
    assert "Answer it from the results above" not in nudge["content"]


async def test_a_nudge_after_a_failure_in_each_mode_and_after_a_success(scope: ReplScope) -> None:
    script = [tool_reply(call("nope", {})), text_reply(""), text_reply("sorry")]
    with ScriptedOpenAI(script) as server:
        await run(server, FakeToolSource(tools=[ECHO]))
    assert server.requests[2]["messages"][-1]["content"] == (
        "Your reply was empty. Your last tool call failed (the error is above). The question was: question\n"
        "Call the tool again with corrected arguments, or, if it cannot be fixed, say what went wrong."
    )
    scope_script = [text_reply("```python\n1 / 0\n```"), text_reply("So:"), text_reply("sorry")]
    with ScriptedOpenAI(scope_script) as server:
        await run(server, scope, protocol="text")
    assert "ZeroDivisionError" in server.requests[1]["messages"][-1]["content"]
    assert server.requests[2]["messages"][-1]["content"] == (
        "Your reply stopped at a colon, before what it announced. Your last program failed (the error is "
        "above). The question was: question\n"
        "Reply with the corrected ```python program, or, if it cannot be fixed, say what went wrong."
    )
    # A failure followed by a success: the nudge is the ordinary one again.
    script = [
        tool_reply(call("nope", {})),
        tool_reply(call("echo", {"text": "hi"})),
        text_reply(""),
        text_reply("hi"),
    ]
    with ScriptedOpenAI(script) as server:
        await run(server, FakeToolSource(tools=[ECHO]))
    assert server.requests[3]["messages"][-1]["content"] == (
        "Your reply was empty. The question was: question\n"
        "Answer it from the results above, in plain words, or call a tool if you need more."
    )


async def test_temperature_and_max_tokens_reach_every_request() -> None:
    script = [
        tool_reply(call("run_code", {"code": "1"})),
        text_reply("ok"),
        text_reply("ok"),
        text_reply("ok"),
    ]
    with ScriptedOpenAI(script) as server:
        await run(server, FakeToolSource(), temperature=0.0, max_tokens=100)
        await run(server, FakeToolSource())
        await run(server, FakeToolSource(), temperature=None, max_tokens=None)
    assert [(b.get("temperature"), b.get("max_tokens")) for b in server.requests] == [
        (0.0, 100),
        (0.0, 100),
        (0.2, 512),  # the defaults: the eval's
        (None, None),  # None: the server's own
    ]


LLAMA_OVERFLOW = {
    "error": {
        "code": 400,
        "message": "request (17012 tokens) exceeds the available context size (16384 tokens), try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 17012,
        "n_ctx": 16384,
    }
}
OPENAI_OVERFLOW = {
    "error": {
        "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in "
        "130500 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}


@pytest.mark.parametrize(
    ("body", "sizes"),
    [
        (LLAMA_OVERFLOW, "17,012 tokens for a context of 16,384"),
        (OPENAI_OVERFLOW, "130,500 tokens for a context of 128,000"),
    ],
    ids=["llama.cpp", "openai"],
)
async def test_a_context_overflow_is_said_as_such(body: dict[str, Any], sizes: str) -> None:
    with ScriptedOpenAI([{"status": 400, "error_body": body}]) as server:
        with pytest.raises(ModelServerError) as caught:
            await run(server, FakeToolSource())
        assert len(server.requests) == 1  # not retried: the same request cannot fit the next time
    message = str(caught.value)
    assert message.startswith(f"the conversation is too long for the model's context ({sizes}): ")
    assert "--jinja" not in message and "tool calling" not in message and "check --model" not in message
    assert "start a new conversation" in message and "\n" not in message
    assert caught.value.status == 400


async def test_a_request_timeout_names_the_setting() -> None:
    held = text_reply("late", hold_at=1, holding=threading.Event(), release=threading.Event())
    try:
        with ScriptedOpenAI([held]) as server:
            with pytest.raises(ModelServerError) as caught:
                await run(server, FakeToolSource(), stream=True, request_timeout=0.5)
            held["release"].set()
    finally:
        held["release"].set()
    assert "did not answer within 0.5 s" in str(caught.value)
    assert "raise request_timeout" in str(caught.value)  # the CLI says --request-timeout
