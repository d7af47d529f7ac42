"""Code mode over a fake in-memory executor: the engine's behaviour snippet by snippet."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from asyncai.code_mode import CodeMode, SandboxConfig
from asyncai.tools import McpServers, stdio_spec
from tests.code_mode.conftest import TEST_LIMITS, FakeExecutor, run, worker_pid
from tests.fakes.logs import captured_log

pytestmark = pytest.mark.anyio


async def test_tools_is_exactly_run_code(code_mode: CodeMode) -> None:
    tools = code_mode.tools()
    assert [t.name for t in tools] == ["run_code"]
    assert "async def wait(*, seconds: float" in tools[0].description
    assert "async def delete_item(*, name: str)" in tools[0].description


async def test_gather_runs_two_tools_concurrently_and_returns_one_small_value(
    code_mode: CodeMode, fake: FakeExecutor
) -> None:
    code = (  # not literal arguments: the gather itself, not speculation, starts both calls
        's = 0.5\na, b = await asyncio.gather(wait(seconds=s, tag="a"), wait(seconds=s, tag="b"))\n'
        'a["waited"] + b["waited"]'
    )
    output = await run(code_mode, code)
    assert (output.content, output.is_error) == ("1.0", False)
    assert [s.arguments["tag"] for s in fake.spans] == ["a", "b"]
    first, second = fake.spans
    assert second.started < first.ended and first.started < second.ended, "calls did not overlap"
    assert output.audit == {
        "nested_calls": [
            {
                "tool": "wait",
                "arguments": {"seconds": 0.5, "tag": tag},
                "is_error": False,
                "bytes": len(json.dumps({"waited": 0.5, "tag": tag}, separators=(",", ":"))),
                "mutating": False,
            }
            for tag in ("a", "b")
        ]
    }


@pytest.mark.parametrize("size", [1_000_000, 10_000_000])
async def test_large_results_are_filtered_inside_the_sandbox(fake: FakeExecutor, size: int) -> None:
    code = 'data = await blob(size=SIZE)\n[n for n in names(data) if n.endswith("77777")]'.replace(
        "SIZE", str(size)
    )
    # Making and parsing 10 MB is CPU time, in the tool and in the sandbox: a loaded machine needs more.
    limits = dataclasses.replace(TEST_LIMITS, code_timeout=30.0, tool_timeout=30.0)
    async with CodeMode(fake, limits) as executor:
        output = await run(executor, code)
    assert not output.is_error, output.content
    expected = [f"cm-{i}" for i in range(size // 100) if str(i).endswith("77777")]
    assert json.loads(output.content) == expected
    assert output.audit is not None and output.audit["nested_calls"][0]["bytes"] > size


async def test_tool_error_raises_a_catchable_runtime_error(code_mode: CodeMode) -> None:
    code = (
        'try:\n    await fail(message="disk on fire")\nexcept RuntimeError as e:\n    caught = str(e)\ncaught'
    )
    output = await run(code_mode, code)
    assert (output.content, output.is_error) == ("Error executing tool fail: disk on fire", False)
    uncaught = await run(code_mode, 'await fail(message="boom")')
    assert uncaught.is_error and uncaught.content.rstrip().endswith(
        "RuntimeError: Error executing tool fail: boom"
    )


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("nope()", "NameError: name 'nope' is not defined"),
        ("open('/etc/passwd')", "PermissionError: os access disabled in asyncai code mode"),
        ("import os\nos.getenv('HOME')", "PermissionError: os access disabled in asyncai code mode"),
        (
            "from pathlib import Path\nPath('/etc').exists()",
            "PermissionError: os access disabled in asyncai code mode",
        ),
        ("import subprocess", "ModuleNotFoundError: No module named 'subprocess'"),
        ("await wait(1)", "TypeError: wait() takes keyword arguments only"),
        (
            "await wait(seconds=0, bogus=1)",
            "TypeError: wait() got an unexpected keyword argument 'bogus'; accepted: seconds, tag",
        ),
        ("await wait(tag='x')", "TypeError: wait() missing required keyword argument 'seconds'"),
    ],
)
async def test_refusals_are_python_errors(fake: FakeExecutor, code: str, error: str) -> None:
    # The host's own checks, as they stand without the type check that would stop the bad calls first.
    async with CodeMode(fake, TEST_LIMITS, sandbox=SandboxConfig(type_check=False)) as code_mode:
        output = await run(code_mode, code)
    assert output.is_error
    assert error in output.content
    assert "_asyncai" not in output.content, "tracebacks must not show the tool wrappers"
    assert fake.spans == [], "a refused call must not reach the executor"


async def test_optional_none_keywords_are_dropped(code_mode: CodeMode, fake: FakeExecutor) -> None:
    output = await run(code_mode, "await wait(seconds=0, tag=None)")
    assert not output.is_error
    assert fake.spans[0].arguments == {"seconds": 0}


async def test_nested_call_budget_is_enforced_at_the_call_site(code_mode: CodeMode) -> None:
    code = (
        "done = 0\nfor i in range(10):\n    try:\n        await wait(seconds=0)\n        done += 1\n"
        "    except RuntimeError as e:\n        err = str(e)\n        break\n[done, err]"
    )
    output = await run(code_mode, code)
    done, message = json.loads(output.content)
    assert done == TEST_LIMITS.max_calls
    assert "nested tool call budget exceeded" in message


async def test_busy_loop_hits_the_time_limit_and_the_scope_keeps_working(
    code_mode: CodeMode,
) -> None:
    await run(code_mode, "kept = 41")
    output = await run(code_mode, "while True:\n    pass")
    assert output.is_error and "TimeoutError" in output.content and "time limit" in output.content
    after = await run(code_mode, "kept + 1")
    assert (after.content, after.is_error) == ("42", False)


async def test_uninterruptible_operation_is_killed_by_the_hard_limit(code_mode: CodeMode) -> None:
    await run(code_mode, "kept = 1")
    output = await run(code_mode, "x = 7 ** (10 ** 8)")  # one native bigint operation: never polled
    assert output.is_error
    assert "was killed" in output.content and "REPL state was reset" in output.content
    assert (await run(code_mode, "2 + 2")).content == "4"


async def test_heap_overrun_is_a_memory_error_and_resets_the_repl(code_mode: CodeMode) -> None:
    await run(code_mode, "kept = 1")
    output = await run(code_mode, "big = 'a' * (6 * 1024 ** 3)")
    assert output.is_error
    assert "MemoryError" in output.content and "reset" in output.content
    after = await run(code_mode, "1 + 1")
    assert after.content == "2"


async def test_killed_worker_gives_an_error_that_says_state_was_reset(
    code_mode: CodeMode, fake: FakeExecutor
) -> None:
    scope = code_mode.scopes.get("t")
    await run(scope, "x = 1")
    pid = await worker_pid(scope)
    fake.on_call = lambda: os.kill(pid, signal.SIGKILL)  # the worker dies while the snippet awaits a tool
    output = await run(scope, "await wait(seconds=0.1)\nx")
    assert output.is_error
    assert "REPL state was reset" in output.content
    assert "NameError" in (await run(scope, "x")).content
    assert (await run(scope, "2 + 2")).content == "4"


def _pidfd_of(descriptor: int) -> int | None:
    """The pid a descriptor of this process is a pidfd of, if it is one."""
    try:
        if os.readlink(f"/proc/self/fd/{descriptor}") != "anon_inode:[pidfd]":
            return None
        with open(f"/proc/self/fdinfo/{descriptor}") as info:
            return next(int(line.split()[1]) for line in info if line.startswith("Pid:"))
    except FileNotFoundError:
        return None


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="the worker watch needs pidfds (Linux)")
async def test_the_worker_watch_holds_one_pidfd_per_worker_from_checkout_to_release(
    code_mode: CodeMode,
) -> None:
    scope = code_mode.new_scope()
    assert scope is not None
    pid = await worker_pid(scope)
    assert scope.worker is not None
    descriptor = scope.setup.sandbox.exit_watch(scope.worker)
    assert descriptor is not None and _pidfd_of(descriptor) == pid
    for _ in range(3):  # snippets reuse the worker's descriptor: none is opened per snippet
        assert (await run(scope, "1 + 1")).content == "2"
        assert scope.setup.sandbox.exit_watch(scope.worker) == descriptor
    await scope.aclose()
    assert _pidfd_of(descriptor) != pid  # closed at release


async def test_hung_tool_hits_the_per_call_timeout(code_mode: CodeMode) -> None:
    output = await run(code_mode, "try:\n    await hang()\nexcept RuntimeError as e:\n    r = str(e)\nr")
    assert (output.content, output.is_error) == ("tool hang timed out after 1.0 s", False)


async def test_state_persists_in_a_scope_restart_clears_it_and_new_scopes_start_empty(
    code_mode: CodeMode,
) -> None:
    scope = code_mode.scopes.get("one")
    await run(scope, "fetched = await pods()")
    assert (await run(scope, "len(items(fetched))")).content == "10"
    assert code_mode.scopes.get("one") is scope
    other = code_mode.scopes.get("two")
    assert "NameError" in (await run(other, "len(fetched['items'])")).content
    restarted = await run(scope, "fetched", restart=True)
    assert restarted.is_error and "NameError" in restarted.content


async def test_run_scopes_are_fresh_and_released(code_mode: CodeMode) -> None:
    first = code_mode.new_scope()
    assert first is not None
    await run(first, "x = 5")
    second = code_mode.new_scope()
    assert second is not None
    assert "NameError" in (await run(second, "x")).content
    await first.aclose()
    await second.aclose()


async def test_a_helper_name_may_be_bound(code_mode: CodeMode, fake: FakeExecutor) -> None:
    output = await run(code_mode, "await wait(seconds=0)\nnames = ['a']\nnames")
    assert (output.content, output.is_error) == ('["a"]', False)
    assert len(fake.spans) == 1


async def test_helpers_and_preimports_are_available(code_mode: CodeMode) -> None:
    code = (
        "p = await pods()\n"
        "[count_by(p, 'status.phase'), dig(p, 'items.0.metadata.name'), dig(p, 'items', 99, 'x', {}),"
        " names(p)[:2], to_json({(1, 2): {3}}), re.sub('o', '0', 'pod'), json.dumps([1])]"
    )
    output = await run(code_mode, code)
    assert json.loads(output.content) == [
        {"Running": 8, "Pending": 1, "Failed": 1},
        "pod-0",
        {},
        ["pod-0", "pod-1"],
        '{"(1, 2)": [3]}',
        "p0d",
        "[1]",
    ]


async def test_variables_note_lists_what_snippets_bound(code_mode: CodeMode) -> None:
    scope = code_mode.scopes.get("note")
    assert scope.context_note() is None
    await run(
        scope,
        "p = await pods()\nbad = [x for x in items(p) if dig(x, 'status.phase') != 'Running']\nn = len(bad)",
    )
    note = scope.context_note()
    assert note == "[run_code variables still in scope: n: int, bad: list[2], p: dict[1]]"


async def test_the_note_after_an_error_names_what_the_snippet_bound_before_it(code_mode: CodeMode) -> None:
    scope = code_mode.scopes.get("error-note")
    output = await run(scope, "big = list(range(10))\nundefined_name\nlater = 1")
    assert output.is_error and "NameError" in output.content
    assert scope.context_note() == "[run_code variables still in scope: big: list[10]]"


async def test_an_embedder_gets_the_snippets_value_as_data_beside_the_text(code_mode: CodeMode) -> None:
    output = await run(code_mode, "p = await pods()\nprint('seen')\n(len(p['items']), {'a': [1, None]}, {3})")
    assert output.content == '{"output":"seen\\n","result":[10,{"a":[1,null]},[3]]}'
    assert output.structured == {"value": [10, {"a": [1, None]}, [3]], "output": "seen\n"}
    assert (await run(code_mode, "x = 1")).structured == {"value": 1}, "a closing assignment's value"
    assert (await run(code_mode, "for i in range(2):\n    x = i")).structured == {"value": None}
    failed = await run(code_mode, "1 / 0")
    assert failed.is_error and failed.structured is None


async def test_a_traceback_quotes_the_last_line_as_written_not_as_rewritten(code_mode: CodeMode) -> None:
    output = await run(code_mode, "xs = [1]\nxs[5]")
    assert output.is_error and "    xs[5]\n    ~~~~~\nIndexError" in output.content
    assert "_ = " not in output.content


async def test_mutating_calls_are_audited_and_logged_at_warn(code_mode: CodeMode) -> None:
    with captured_log() as stream:
        output = await run(code_mode, 'await delete_item(name="x")')
    assert output.content == "deleted x"
    assert output.audit is not None and output.audit["nested_calls"][0]["mutating"] is True
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(line["event"], line["level"], line["mutating"]) for line in lines] == [
        ("mcp.tool_call", "warn", True),
        ("mcp.tool_result", "warn", True),
    ]
    assert lines[0]["tool"] == "delete-item" and lines[0]["via"] == "code_mode"


async def test_unawaited_call_is_an_error_telling_to_await(code_mode: CodeMode) -> None:
    output = await run(code_mode, "wait(seconds=0)")
    assert output.is_error and "await" in output.content


async def test_operator_preamble_runs_in_every_new_scope(fake: FakeExecutor) -> None:
    async with CodeMode(fake, TEST_LIMITS, preamble="KCP = 'dev'\n") as executor:
        assert (await run(executor.scopes.get("a"), "KCP")).content == "dev"
        assert (await run(executor.scopes.get("b"), "KCP", restart=True)).content == "dev"


async def test_more_threads_than_workers_park_and_keep_their_variables(
    code_mode: CodeMode,
) -> None:
    for number in range(10):
        await run(code_mode.scopes.get(f"t{number}"), f"mine = 't{number}'")
    holders = code_mode._setup.room.holders
    assert len(holders) == 8  # the default --code-max-workers
    first = code_mode.scopes.get("t0")
    assert first.parked and first.worker is None and first not in holders
    for number in range(10):  # each one is restored in turn, parking another
        assert (await run(code_mode.scopes.get(f"t{number}"), "mine")).content == f"t{number}"
        assert len(holders) <= 8


SIMPLE_SERVER = str(Path(sys.executable).parent / "asyncai-mcp-simple")


@pytest.fixture(params=[True, False], ids=["type-check", "host-check"])
async def simple(request: pytest.FixtureRequest) -> AsyncIterator[CodeMode]:
    """The bundled http_get server (the issue's own example), checked before running or not."""
    sandbox = SandboxConfig(type_check=request.param)
    async with (
        McpServers([stdio_spec(SIMPLE_SERVER)]) as mcp,
        CodeMode(mcp, TEST_LIMITS, sandbox) as code_mode,
    ):
        yield code_mode


async def test_call_mistakes_are_worded_as_python_words_them_whichever_check_finds_them(
    simple: CodeMode,
) -> None:
    positional = await run(simple, "await http_get('http://x/small.json')")
    assert (
        "TypeError: http_get() takes keyword arguments only; write http_get(url='http://x/small.json')"
        in (positional.content)
    )
    assert "No argument provided" not in positional.content
    misspelt = await run(simple, "await http_get(uri='http://x/small.json')")
    assert (
        "TypeError: http_get() got an unexpected keyword argument 'uri'; accepted: url, headers, timeout "
        "(did you mean url?)" in misspelt.content
    )
    assert positional.audit == misspelt.audit == {"nested_calls": []}


async def test_every_call_mistake_of_a_snippet_is_listed_with_its_line(simple: CodeMode) -> None:
    if not simple.sandbox.config.type_check:
        pytest.skip("the host stops at the first wrong call it runs; listing every one is the type check's")
    code = "a = await http_get(url='http://x/a')\nb = await http_get('http://x/b')\nc = await http_get(uri='x', tmeout=3)"
    output = await run(simple, code)
    assert output.is_error and output.audit == {"nested_calls": []}
    lines = [line for line in output.content.splitlines() if line.startswith("- line")]
    assert lines == [
        "- line 2: TypeError: http_get() takes keyword arguments only; write http_get(url='http://x/b')",
        "- line 3: TypeError: http_get() got an unexpected keyword argument 'uri'; accepted: url, headers, timeout (did you mean url?)",
        "- line 3: TypeError: http_get() got an unexpected keyword argument 'tmeout'; accepted: url, headers, timeout (did you mean timeout?)",
        "- line 3: TypeError: http_get() missing required keyword argument 'url'",
    ]


async def test_each_value_is_kept_in_underscore_so_an_oversized_one_is_filtered_without_a_new_call(
    fake: FakeExecutor,
) -> None:
    limits = dataclasses.replace(TEST_LIMITS, max_result_chars=2_000)
    async with CodeMode(fake, limits) as code_mode:
        big = await run(code_mode, "await blob(size=50_000)")
        assert big.is_error and "The full value is in _; return a filtered subset of it" in big.content
        made = len(fake.spans)
        counted = await run(code_mode, "len(_['items'])")
        assert (counted.content, counted.audit) == ("500", {"nested_calls": []})
        assert len(fake.spans) == made, "filtering _ called the tool again"
        await run(code_mode, "kept = 1")  # a snippet that ends with a statement leaves _ alone
        assert (await run(code_mode, "_")).content == "500"
        assert "_:" not in (code_mode.context_note() or "") and "kept: int" in (
            code_mode.context_note() or ""
        )


async def test_binding_underscore_keeps_the_snippets_line_numbers(code_mode: CodeMode) -> None:
    output = await run(code_mode, "x = 1\nx +\\\n  (1 / 0)")
    assert output.is_error and ", line 3," in output.content and "ZeroDivisionError" in output.content
    assert (await run(code_mode, "x = 2; x * 21")).content == "42"
    assert (await run(code_mode, "_")).content == "42"


async def test_the_variables_note_stays_true_when_only_the_names_a_snippet_touches_are_probed(
    code_mode: CodeMode,
) -> None:
    scope = code_mode.scopes.get("narrow")
    await run(scope, "a = [1, 2]\nb = {'k': 1}\nc = 'text'")
    assert scope.context_note() == "[run_code variables still in scope: c: str[4], b: dict[1], a: list[2]]"
    assert (await run(scope, "len(a) + len(b)")).content == "3"  # reads: the note is unchanged
    assert scope.context_note() == "[run_code variables still in scope: c: str[4], b: dict[1], a: list[2]]"
    await run(scope, "a.append(3)\nb['j'] = 2")  # changed in place: sizes follow
    assert scope.context_note() == "[run_code variables still in scope: c: str[4], b: dict[2], a: list[3]]"
    await run(scope, "c = 5")
    assert scope.context_note() == "[run_code variables still in scope: c: int, b: dict[2], a: list[3]]"
    await run(scope, "x = b.pop('k')")  # a method call: every name is looked at again
    assert (
        scope.context_note() == "[run_code variables still in scope: x: int, c: int, b: dict[1], a: list[3]]"
    )
    await run(scope, "if False:\n    d = 1\nc")  # bound only in a branch not taken: not in scope
    assert (
        scope.context_note() == "[run_code variables still in scope: x: int, c: int, b: dict[1], a: list[3]]"
    )
    await run(scope, "match [1, 2, 3]:\n    case [a, *c]:\n        pass")  # a match binds too
    assert (
        scope.context_note() == "[run_code variables still in scope: c: list[2], a: int, x: int, b: dict[1]]"
    )


async def test_a_whole_snippets_literal_read_only_calls_start_before_the_snippet_reaches_them(
    code_mode: CodeMode, fake: FakeExecutor
) -> None:
    code = (
        "tag = 'a'\nfirst = await wait(seconds=0.05, tag=tag)\nsecond = await pods(namespace='x')\n"
        "[first['tag'], len(second['items'])]"
    )
    out = await run(code_mode, code)
    assert json.loads(out.content) == ["a", 10]
    # pods(namespace='x') is literal: launched once the scan passed, before the worker ran the snippet
    assert [span.tool for span in fake.spans] == ["pods", "wait"]
    assert out.audit is not None
    assert out.audit["speculative_calls"] == {"launched": 1, "claimed": 1, "cancelled": 0}
    assert len(out.audit["nested_calls"]) == 2


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        # a branch not taken: launched, then cancelled as the snippet ends, and not one of its calls
        ("if 1 > 2:\n    await hang()\n1", {"launched": 1, "claimed": 0, "cancelled": 1}),
        ("await delete_item(name='x')\n1", None),  # a tool that may change the world: never early
        ("n = 'x'\np = await pods(namespace=n)\nlen(p['items'])", None),  # not literal: not early
    ],
)
async def test_what_a_whole_snippet_launches_early(
    code_mode: CodeMode, fake: FakeExecutor, code: str, expected: dict[str, int] | None
) -> None:
    out = await run(code_mode, code)
    assert not out.is_error and out.audit is not None
    assert out.audit.get("speculative_calls") == expected
    assert all(span.ended > 0 for span in fake.spans)  # nothing is left running
    if expected is not None:
        assert out.audit["nested_calls"] == []


async def test_a_refused_snippet_launches_nothing(code_mode: CodeMode, fake: FakeExecutor) -> None:
    out = await run(code_mode, "pods(namespace='x')\n1")  # not awaited: refused before it runs
    assert out.is_error and "Nothing was run" in out.content
    assert fake.spans == []


async def test_no_speculate_launches_nothing_early(fake: FakeExecutor) -> None:
    async with CodeMode(fake, TEST_LIMITS, speculate=False) as code_mode:
        out = await run(code_mode, "tag = 'a'\nw = await wait(seconds=0, tag=tag)\nawait pods(namespace='x')")
    assert not out.is_error and out.audit is not None and "speculative_calls" not in out.audit
    assert [span.tool for span in fake.spans] == ["wait", "pods"]
