"""The type check before a snippet runs, on the real kcp catalog: a wrong call is stopped before
any tool runs (the recording kubectl shim sees nothing), and valid code is never stopped."""

from __future__ import annotations

import dataclasses

import pytest

from asyncai.code_mode import CodeMode, SandboxConfig
from asyncai.code_mode.engine.type_check import rejection
from asyncai.tools import McpServers

from .conftest import KcpEnv
from .demo import QUESTIONS

pytestmark = pytest.mark.anyio

REJECTED = "error: the type check found mistakes before anything ran"

# Snippets a model writes that must all pass the check (the ADR's examples, the demo's, the
# helpers in use, `-> Any` results indexed freely); each runs in one REPL, in order.
VALID = [
    *(question.program for question in QUESTIONS),
    # The ADR's examples (it names the kcp server explicitly).
    "KCP = None",
    'resources = await get_api_resources(kcp=KCP, workspace="root:app")\n'
    'sorted({r["kind"] for r in resources["resources"] if r["api_version"].startswith("socialweb.computer/")})',
    "import asyncio\n"
    "pods, events = await asyncio.gather(\n"
    '    list_objects(kcp=KCP, workspace="root:app", resource="pods"),\n'
    '    get_events(kcp=KCP, workspace="root:app"),\n'
    ")\n"
    'bad = [p["metadata"]["name"] for p in pods["items"]\n'
    '       if p["status"].get("phase") != "Running"]\n'
    '{"not_running": bad, "warnings": sum(1 for e in events["items"] if e["type"] == "Warning")}',
    # The helpers.
    "names(pods)[:3]",
    'count_by(pods, "status.phase")',
    'dig(pods, "items", 0, "metadata", "name")',
    'dig(pods, "items.0.metadata.name", default="?")',
    "len(items(pods))",
    "shape(pods)",
    'to_json({"n": len(pods["items"])}, indent=2)',
    # Results are Any: indexed, called, compared freely.
    'pods["items"][0]["metadata"]["name"].upper()',
    'pods.get("missing", {}).get("deeper")',
    'total = sum(len(p["spec"]["containers"]) for p in pods["items"])\nf"{total} containers"',
    # Variables, optional and computed arguments, gathers of comprehensions, local async functions.
    'ws = "root:app"\nawait list_objects(workspace=ws, resource="configmaps", namespace=None)',
    'kinds = ["pods", "configmaps"]\n'
    "lists = await asyncio.gather(*[list_objects(workspace=ws, resource=k) for k in kinds])\n"
    '[len(x["items"]) for x in lists]',
    "async def count(resource):\n"
    '    return len((await list_objects(workspace=ws, resource=resource))["items"])\n'
    'await count("pods")',
    'await get_object(workspace=ws, resource="configmaps", name=names(lists[1])[0], namespace="web")',
    'found = await search_tools(query="events", limit=3)\n[f["name"] for f in found]',
    'await describe_tool(name="list_objects")',
    'try:\n    await get_logs(workspace=ws, pod="nope")\nexcept RuntimeError as e:\n    str(e)[:20]',
    'print(len(pods["items"]))',
    # A variable rebound by a snippet that then failed: the checker may think it still an int.
    "x = 1",
    'x = "root:app"\n1 / 0',
    'await get_events(workspace=x, namespace="web")',
    # A name that held a coroutine, rebound by a snippet the checker did not see (it names no tool).
    't = list_objects(workspace=ws, resource="pods")',
    "t = 5",
    'z = t + 1\nawait get_events(workspace=ws, namespace="web")\nz',
]


async def test_valid_snippets_all_pass_the_check(ro: McpServers) -> None:
    async with CodeMode(ro) as code_mode:
        assert code_mode.sandbox.config.type_check
        scope = code_mode.scopes.get("corpus")
        for code in VALID:
            output = await scope.call_tool("run_code", {"code": code})
            assert REJECTED not in output.content, f"{code}\n--> {output.content}"
        # The check was on all along: a wrong call in the same REPL is stopped.
        wrong = await scope.call_tool(
            "run_code", {"code": 'await list_objects(workspace=1, resource="pods")'}
        )
        assert wrong.is_error and REJECTED in wrong.content


@pytest.mark.parametrize(
    ("code", "says"),
    [
        (
            'await list_objects(workspace=1, resource="pods")',
            "list_objects(): `workspace` must be str, not 1",
        ),
        (
            'await list_objects(workspace="root:app", kind="pods")',
            "TypeError: list_objects() got an unexpected keyword argument 'kind'; accepted: ",
        ),
        ('await get_events(workspace="root:app", namespace=["web"])', None),  # a list: not certain, it runs
        ('r = list_objects(workspace="root:app", resource="pods")\nr["items"]', "needs `await`"),
    ],
)
async def test_a_wrong_call_is_stopped_before_any_tool_runs(
    kcp_env: KcpEnv, code: str, says: str | None
) -> None:
    before = len(kcp_env.argv_lines())
    async with McpServers([kcp_env.spec(False)]) as mcp, CodeMode(mcp) as code_mode:
        output = await code_mode.call_tool(
            "run_code", {"code": 'await get_api_resources(workspace="root:app")\n' + code}
        )
    if says is None:
        assert REJECTED not in output.content
        return
    assert output.is_error and REJECTED in output.content and says in output.content, output.content
    assert output.audit == {"nested_calls": []}
    assert len(kcp_env.argv_lines()) == before, "a tool ran although the check stopped the snippet"


async def test_no_type_check_runs_the_wrong_call(kcp_env: KcpEnv) -> None:
    before = len(kcp_env.argv_lines())
    sandbox = dataclasses.replace(SandboxConfig(), type_check=False)
    async with (
        McpServers([kcp_env.spec(False)]) as mcp,
        CodeMode(mcp, sandbox=sandbox) as code_mode,
    ):
        output = await code_mode.call_tool(
            "run_code",
            {
                "code": 'await get_api_resources(workspace="root:app")\nawait list_objects(workspace=1, resource="pods")'
            },
        )
    assert REJECTED not in output.content
    assert len(kcp_env.argv_lines()) > before


def test_only_certain_diagnostics_stop_a_snippet() -> None:
    text = (
        "run_code.py:1:1: error[unresolved-reference] Name `x` used when not defined\n"
        "run_code.py:2:5: error[unresolved-attribute] Object of type `int` has no attribute `foo`\n"
        "repl_type_stubs.pyi:3:1: error[invalid-syntax] something in the stubs\n"
    )
    assert rejection(text, "x\n1 .foo", {}) is None
