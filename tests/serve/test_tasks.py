"""The MCP tasks extension (SEP-2663) for ``run_code``, and progress notifications: the registry's
rules and the task runner without processes, then ``asyncai serve-mcp --http`` driven by the SDK's
``mcp.Client`` (2026-07-28), its snippets' nested calls held by a loopback site the test releases
(``tests/fakes/slow_site.py``), so no test sleeps to let something happen."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar, Literal

import anyio
import httpx2
import mcp.types as mt
import pytest
from mcp import Client, MCPError
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp_types import HEADER_MISMATCH, INTERNAL_ERROR, INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY

from asyncai.activity import QUIET, Activity, NestedCall, combined
from asyncai.serve.handles import caller_identity
from asyncai.serve.progress import RunProgress
from asyncai.serve.tasks import (
    TASK_GRACE,
    TASKS_EXTENSION,
    CreateTaskResult,
    DetailedTask,
    TaskRegistry,
    TaskRequestParams,
    TaskRunner,
    UpdateTaskRequestParams,
)
from tests.fakes.slow_site import SlowSite, slow_site

from .helpers import ENV, SIMPLE, TOKEN, HttpServe, ran, serve_http

pytestmark = pytest.mark.anyio
OTHER = "another-callers-token"
DEADLINE = 60.0
"""The most a task may take to reach the state a test waits for (a loaded machine)."""


# -- the rules, without processes ---------------------------------------------------------------


def test_a_task_is_its_owners_and_ends_once() -> None:
    registry = TaskRegistry(ttl=60, clock=lambda: 1000.0)
    mine, theirs = caller_identity("Bearer a"), caller_identity("Bearer b")
    task = registry.create(mine)
    assert task.status == "working" and task.task_id != registry.create(mine).task_id
    assert registry.get(task.task_id, mine) is task
    assert registry.get(task.task_id, theirs) is None  # the same answer as a task never made
    assert registry.get("task-never-made", mine) is None
    registry.note(task.task_id, "1 nested call done")
    assert task.status_message == "1 nested call done"
    assert registry.finish(task.task_id, "cancelled")
    # It stays cancelled though its snippet then ends (the first end wins), and says no more.
    assert not registry.finish(task.task_id, "completed", result={"content": []})
    registry.note(task.task_id, "2 nested calls done")
    assert (task.status, task.result, task.status_message) == ("cancelled", None, "1 nested call done")


def test_a_finished_task_is_forgotten_after_its_ttl_and_a_working_one_is_kept() -> None:
    now = [1000.0]
    registry = TaskRegistry(ttl=60, clock=lambda: now[0])
    owner = caller_identity(None)
    done, working = registry.create(owner), registry.create(owner)
    now[0] += 30
    registry.finish(done.task_id, "completed", result={"content": []})
    now[0] += 59  # 89 s after it was made: the ttl counts from its end
    assert registry.get(done.task_id, owner) is done
    now[0] += 2
    assert registry.get(done.task_id, owner) is None
    assert registry.get(working.task_id, owner) is working  # still running: never expired
    registry.finish(working.task_id, "failed")
    now[0] += 61
    registry.create(owner)  # expired tasks leave memory as new ones come
    assert len(registry) == 1


class Recorder(Activity):
    def __init__(self) -> None:
        self.events: list[str] = []

    def call_started(self, call: NestedCall) -> None:
        self.events.append(f"started {call.tool}")

    def call_finished(self, call: NestedCall, seconds: float) -> None:
        self.events.append(f"finished {call.tool}")


def test_a_runs_progress_hears_its_nested_calls_beside_the_executors_display() -> None:
    display, progress = Recorder(), RunProgress()
    heard: list[tuple[int, str]] = []
    progress.listen(lambda finished, message: heard.append((finished, message)))
    assert combined(display, None, QUIET) is display and combined(None, QUIET) is QUIET
    activity = combined(display, progress)
    for answered in (True, False):
        call = NestedCall("http_get", {}, mutating=False, answered=answered)
        activity.call_started(call)
        activity.call_finished(call, 0.1)
    assert display.events == ["started http_get", "finished http_get"] * 2
    assert heard == [
        (1, "1 nested call done; last: http_get finished"),
        (2, "2 nested calls done; last: http_get cut off"),
    ]


def _result(text: str) -> mt.CallToolResult:
    return mt.CallToolResult(content=[mt.TextContent(type="text", text=text)])


async def test_the_runner_answers_a_fast_call_itself_and_makes_a_slow_one_a_task() -> None:
    runner = TaskRunner(grace=0.05)
    owner = caller_identity(None)
    fast = await runner.start(owner, lambda progress: _answer(_result("now")), "2026-07-28")
    assert isinstance(fast, mt.CallToolResult) and len(runner.registry) == 0
    go = asyncio.Event()

    async def slow(progress: object) -> mt.CallToolResult:
        await go.wait()
        return _result("later")

    created = await runner.start(owner, slow, "2026-07-28")
    assert isinstance(created, CreateTaskResult) and created.status == "working"
    dumped = created.model_dump(by_alias=True, exclude_none=True)
    assert (
        dumped["resultType"] == "task" and "task" not in dumped and {"ttlMs", "pollIntervalMs"} <= set(dumped)
    )
    go.set()
    record = runner.registry.get(created.task_id, owner)
    assert record is not None
    await _ended(runner)
    assert record.status == "completed" and record.result is not None
    assert record.result["content"][0]["text"] == "later" and record.result["isError"] is False


async def test_the_runner_cancels_a_task_and_fails_one_whose_run_broke() -> None:
    runner = TaskRunner(grace=0.01)
    owner = caller_identity(None)
    stopped = asyncio.Event()

    async def endless(progress: object) -> mt.CallToolResult:
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()
        raise AssertionError("not reached")

    breaking = asyncio.Event()

    async def broken(progress: object) -> mt.CallToolResult:
        await breaking.wait()
        raise KeyError("a bug, with detail the client must not see")

    cancelled = await runner.start(owner, endless, "2026-07-28")
    failed = await runner.start(owner, broken, "2026-07-28")
    assert isinstance(cancelled, CreateTaskResult) and isinstance(failed, CreateTaskResult)
    runner.cancel(cancelled.task_id)
    breaking.set()
    await stopped.wait()  # the run itself was cancelled, not only its record
    await _ended(runner)
    assert runner.registry.status(cancelled.task_id) == "cancelled"
    record = runner.registry.get(failed.task_id, owner)
    assert record is not None and record.status == "failed" and record.result is None
    assert (
        record.error is not None
        and record.error.code == INTERNAL_ERROR
        and "detail" not in record.error.message
    )


async def _answer(result: mt.CallToolResult) -> mt.CallToolResult:
    return result


async def _ended(runner: TaskRunner) -> None:
    with anyio.fail_after(DEADLINE):
        await runner.wait()


# -- a client of the extension -------------------------------------------------------------------


class GetTask(mt.Request[TaskRequestParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskRequestParams
    name_param: ClassVar[str | None] = "taskId"  # SEP-2663's Mcp-Name routing header


class CancelTask(mt.Request[TaskRequestParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskRequestParams
    name_param: ClassVar[str | None] = "taskId"


class UpdateTask(mt.Request[UpdateTaskRequestParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateTaskRequestParams
    name_param: ClassVar[str | None] = "taskId"


async def get_task(session: Client, task_id: str) -> DetailedTask:
    return await session.session.send_request(
        GetTask(params=TaskRequestParams(task_id=task_id)), DetailedTask
    )


async def poll(session: Client, task_id: str, statuses: Sequence[str]) -> DetailedTask:
    """``tasks/get`` until the task is in one of ``statuses``, as often as the server suggests."""
    with anyio.fail_after(DEADLINE):
        while True:
            task = await get_task(session, task_id)
            if task.status in statuses:
                return task
            await anyio.sleep((task.poll_interval_ms or 500) / 1000)


class Tasks(ClientExtension):
    """Declares the extension; a task the server makes of a call is polled to its result."""

    identifier = TASKS_EXTENSION

    def __init__(self) -> None:
        self.created: list[str] = []
        self.arrived = anyio.Event()
        """A call became a task."""

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=self.resolve)]

    async def resolve(self, created: CreateTaskResult, ctx: ClaimContext) -> mt.CallToolResult:
        self.created.append(created.task_id)
        self.arrived.set()
        with anyio.fail_after(DEADLINE):
            while True:
                task = await ctx.session.send_request(
                    GetTask(params=TaskRequestParams(task_id=created.task_id)), DetailedTask
                )
                if task.status == "completed" and task.result is not None:
                    return mt.CallToolResult.model_validate(task.result)
                assert task.status == "working", task
                await anyio.sleep((task.poll_interval_ms or 500) / 1000)


@asynccontextmanager
async def modern(
    url: str, token: str = TOKEN, tasks: bool = True, extension: Tasks | None = None
) -> AsyncIterator[Client]:
    """The SDK's default client; with ``tasks`` it declares the extension (``Tasks``)."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=DEADLINE) as http,
        Client(
            streamable_http_client(url, http_client=http, max_sse_event_size=None),
            extensions=[extension or Tasks()] if tasks else None,
        ) as session,
    ):
        assert session.protocol_version == "2026-07-28"
        yield session


async def start(session: Client, code: str, repl: str | None = None) -> CreateTaskResult | mt.CallToolResult:
    """A ``run_code`` as the wire answers it: a task, or the result itself."""
    arguments = {"code": code} | ({"repl": repl} if repl else {})
    with anyio.fail_after(DEADLINE):  # a server without tasks answers once the held call ends
        result = await session.session.call_tool("run_code", arguments, allow_claimed=True)
    assert isinstance(result, CreateTaskResult | mt.CallToolResult), result
    return result


def held(site: SlowSite, name: str) -> str:
    """A snippet whose one nested call waits until the test releases ``name``."""
    return f'r = await http_get(url="{site.url}/slow/{name}")\n"got " + r["body"]'


async def entered(site: SlowSite, name: str) -> None:
    """Until the snippet's call to ``/slow/NAME`` is in flight."""
    event: threading.Event = site.entered[name]
    assert await anyio.to_thread.run_sync(event.wait, DEADLINE)


# -- serve-mcp over HTTP -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site() -> Any:
    with slow_site() as fixture:
        yield fixture


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tokens: Path = tmp_path_factory.mktemp("tokens") / "tokens"
    tokens.write_text(f"{TOKEN}\n{OTHER}\n")  # two callers
    env = {key: value for key, value in ENV.items() if key != "ASYNCAI_MCP_TOKEN"}
    with serve_http("--token-file", str(tokens), "--mcp-stdio", SIMPLE, env=env) as serve:
        yield serve


async def test_a_slow_run_becomes_a_task_whose_result_tasks_get_inlines(
    served: HttpServe, site: SlowSite
) -> None:
    async with modern(served.url) as session:
        assert TASKS_EXTENSION in (session.server_capabilities.extensions or {})
        quick = await start(session, "6 * 7")  # ends within the grace: answered directly
        assert isinstance(quick, mt.CallToolResult) and ran(quick).content["value"] == 42
        created = await start(session, held(site, "inlined"))
        assert isinstance(created, CreateTaskResult) and created.status == "working"
        working = await get_task(session, created.task_id)
        assert (working.task_id, working.status, working.result) == (created.task_id, "working", None)
        site.release["inlined"].set()
        done = await poll(session, created.task_id, ["completed", "failed", "cancelled"])
    assert done.status == "completed" and done.result is not None and done.error is None
    result = ran(done.result)
    content = result.content
    assert not result.is_error and content["value"].startswith("got ") and "/slow/inlined" in content["value"]
    assert content["repl"].startswith("repl-") and result.audit["nested_call_counts"]["total"] == 1
    assert done.status_message == "1 nested call done; last: http_get finished"


async def test_a_client_that_declares_tasks_gets_its_result_through_one(
    served: HttpServe, site: SlowSite
) -> None:
    """``Client.call_tool`` of a client with a claim for tasks: the task is polled to the result."""
    tasks = Tasks()

    async def release_once_a_task() -> None:
        with anyio.fail_after(DEADLINE):
            await tasks.arrived.wait()
        site.release["resolved"].set()

    async with modern(served.url, extension=tasks) as session, anyio.create_task_group() as group:
        group.start_soon(release_once_a_task)
        result = await session.call_tool("run_code", {"code": held(site, "resolved")})
    assert "/slow/resolved" in ran(result).text and len(tasks.created) == 1


async def test_a_cancelled_task_stops_its_snippet_and_keeps_the_repl(
    served: HttpServe, site: SlowSite
) -> None:
    async with modern(served.url) as session:
        first = await start(session, "x = 41")
        assert isinstance(first, mt.CallToolResult)
        handle = (first.structured_content or {})["repl"]
        created = await start(session, held(site, "cancelled"), repl=handle)
        assert isinstance(created, CreateTaskResult)
        await entered(site, "cancelled")  # the snippet waits on its nested call
        params = TaskRequestParams(task_id=created.task_id)
        ack = await session.session.send_request(CancelTask(params=params), mt.EmptyResult)
        assert ack.result_type == "complete"
        cancelled = await get_task(session, created.task_id)
        assert (cancelled.status, cancelled.result) == ("cancelled", None)
        again = await session.session.send_request(CancelTask(params=params), mt.EmptyResult)  # idempotent
        assert again.result_type == "complete"
        after = await start(session, "x + 1", repl=handle)  # once the interrupted snippet ended
        assert (await get_task(session, created.task_id)).status == "cancelled"  # and stays so
    assert isinstance(after, mt.CallToolResult) and not after.is_error
    content = ran(after).content
    assert (content["value"], content["repl"]) == (42, handle)  # bound before the cancel: kept


async def test_progress_notifications_arrive_while_the_snippet_runs(
    served: HttpServe, site: SlowSite
) -> None:
    code = (
        f'a = await http_get(url="{site.url}/fast/1")\n'
        f'b = await http_get(url="{site.url}/fast/2")\n'
        f'c = await http_get(url="{site.url}/slow/progress")\n'
        "c['status']"
    )
    seen: list[tuple[float, str | None]] = []
    two_done = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))
        if progress >= 2:
            two_done.set()

    result: list[mt.CallToolResult] = []

    async def call(session: Client) -> None:
        result.append(await session.call_tool("run_code", {"code": code}, progress_callback=on_progress))

    async with modern(served.url, tasks=False) as session, anyio.create_task_group() as group:
        group.start_soon(call, session)
        with anyio.fail_after(DEADLINE):
            await two_done.wait()  # two calls done, the third held: the run is still going
        assert not result
        site.release["progress"].set()
    assert ran(result[0]).content["value"] == 200
    progresses = [progress for progress, _ in seen]
    assert progresses == sorted(set(progresses)) and progresses[-1] == 3
    assert seen[-1][1] == "3 nested calls done; last: http_get finished"


async def test_another_callers_task_is_unknown_to_them(served: HttpServe, site: SlowSite) -> None:
    async with modern(served.url) as owner:
        created = await start(owner, held(site, "foreign"))
        assert isinstance(created, CreateTaskResult)
        async with modern(served.url, token=OTHER) as intruder:
            for request in (
                GetTask(params=TaskRequestParams(task_id=created.task_id)),
                CancelTask(params=TaskRequestParams(task_id=created.task_id)),
            ):
                with pytest.raises(MCPError) as refused:
                    await intruder.session.send_request(request, mt.EmptyResult)
                assert refused.value.code == INVALID_PARAMS and "unknown task" in refused.value.message
        assert (
            await get_task(owner, created.task_id)
        ).status == "working"  # the intruder's cancel did nothing
        site.release["foreign"].set()
        assert (await poll(owner, created.task_id, ["completed"])).result is not None


async def test_a_client_without_the_extension_gets_no_task(served: HttpServe, site: SlowSite) -> None:
    answered = anyio.Event()
    result: list[mt.CallToolResult] = []

    async def call(session: Client) -> None:
        result.append(await session.call_tool("run_code", {"code": held(site, "untasked")}))
        answered.set()

    async with modern(served.url, tasks=False) as session:
        update = UpdateTask(params=UpdateTaskRequestParams(task_id="task-any", input_responses={}))
        for request in (GetTask(params=TaskRequestParams(task_id="task-any")), update):
            with pytest.raises(MCPError) as refused:
                await session.session.send_request(request, mt.EmptyResult)
            assert refused.value.code == MISSING_REQUIRED_CLIENT_CAPABILITY
        async with anyio.create_task_group() as group:
            group.start_soon(call, session)
            await entered(site, "untasked")
            # Well past the grace the call is still open: no task was made of it.
            with anyio.move_on_after(4 * TASK_GRACE):
                await answered.wait()
            assert not answered.is_set()
            site.release["untasked"].set()
    assert "/slow/untasked" in ran(result[0]).text


async def test_the_wire_shapes(served: HttpServe, site: SlowSite) -> None:
    """What a client without the SDK sees: a flat task, a legacy ``task`` param ignored, the
    routing header checked, an update acknowledged."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION: {}}},
    }

    async def post(method: str, params: dict[str, Any], name: str | None) -> dict[str, Any]:
        headers = {
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": method,
            "Authorization": f"Bearer {TOKEN}",
        } | ({"Mcp-Name": name} if name else {})
        body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": {**params, "_meta": meta}}
        async with httpx2.AsyncClient(timeout=DEADLINE) as http:
            response = await http.post(served.url, json=body, headers=headers)
        assert response.headers["content-type"].startswith("application/json"), response.text
        answer: dict[str, Any] = response.json()
        return answer

    legacy = await post(
        "tools/call", {"name": "run_code", "arguments": {"code": "1 + 1"}, "task": {"ttl": 60000}}, "run_code"
    )
    assert legacy["result"]["resultType"] == "complete" and "taskId" not in legacy["result"]
    created = (
        await post("tools/call", {"name": "run_code", "arguments": {"code": held(site, "wire")}}, "run_code")
    )["result"]
    assert created["resultType"] == "task" and "task" not in created and "result" not in created
    assert {"taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs"} <= set(created)
    task_id = created["taskId"]
    mismatched = await post("tasks/get", {"taskId": task_id}, "task-another")
    assert mismatched["error"]["code"] == HEADER_MISMATCH
    update = await post("tasks/update", {"taskId": task_id, "inputResponses": {"unknown": {"x": 1}}}, task_id)
    assert update["result"]["resultType"] == "complete" and "taskId" not in update["result"]
    site.release["wire"].set()
    async with modern(served.url) as session:
        await poll(session, task_id, ["completed"])
    done = (await post("tasks/get", {"taskId": task_id}, task_id))["result"]
    assert done["resultType"] == "complete" and done["result"]["content"][0]["type"] == "text"
    cancelled = await post("tasks/cancel", {"taskId": task_id}, task_id)  # ended: the same empty ack
    assert (
        set(cancelled["result"]) == {"resultType", "_meta"}
        and cancelled["result"]["resultType"] == "complete"
    )
    removed = await post("tasks/result", {"taskId": task_id}, task_id)
    assert removed["error"]["code"] == -32601  # SEP-2663 inlines the result in tasks/get instead
