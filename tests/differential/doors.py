"""Every door a snippet can come in by, each giving its answers in one shape.

A door runs the snippets of a program one after another in one REPL of its own and reports, for
each, the text the model (or client) gets and whether it is an error; then the REPL's state (the
state probe's answer) and its variables note. All doors call the same real MCP server
(``corpus_server``) and run real pydantic-monty workers; serve-mcp runs as its own processes.

The rig (``DoorRig``) runs every door on one event loop in a thread of its own, so a synchronous
Hypothesis test can hand it programs one by one while the servers and workers stay up between
examples.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import random
import re
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import Future
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import anyio.lowlevel
import httpx2
from mcp import Client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from asyncai import CodeMode, CodeModeLimits, DirectoryStore, McpServers, stdio_spec
from asyncai.code_mode.engine.scope import ReplScope
from tests.differential.snippets import Program
from tests.serve.helpers import ENV, INITIALIZE, PROTOCOL, RAW_HEADERS, TOKEN, ran, serve_http, stdio_params

T = TypeVar("T")
SERVER = f"corpus={sys.executable} -m tests.differential.corpus_server"
MEMORY = 256 * 2**20
LIMITS = CodeModeLimits(max_memory=MEMORY)
SERVE_ARGS = ("--mcp-stdio", SERVER, "--mutations", "allow", "--code-max-memory", "256MiB")
ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Answer:
    text: str
    is_error: bool | None
    """``None`` where the door does not say (the agent's tool message is text only)."""


@dataclass
class Observation:
    answers: list[Answer] = field(default_factory=list)
    notes: list[str | None] = field(default_factory=list)
    """The variables note after each snippet, and after the state probe."""
    state: Answer | None = None


class Door(Protocol):
    name: str

    async def begin(self) -> None:
        """An empty REPL for the next program."""

    async def run(self, code: str) -> Answer: ...

    def note(self) -> str | None: ...


def normalized(text: str) -> str:
    """What may differ between doors that run the same thing: a traceback's feed number (a
    statement run early is a feed of its own) and an object's address."""
    text = re.sub(r"<python-input-\d+>", "<python-input>", text)
    return re.sub(r"0x[0-9a-f]+", "0x…", text)


def output_answer(content: str, is_error: bool) -> Answer:
    return Answer(content, is_error)


# -- the library: one scope, whole or streamed, parked or saved between snippets -----------------


class ScopeDoor:
    """A ``ReplScope`` of a ``CodeMode``, each snippet whole (``call_tool``) or streamed into
    ``eager()``; after each snippet the REPL may be parked, or saved and taken up by a scope of
    another code mode (other worker processes) from a state store."""

    def __init__(
        self,
        name: str,
        code_mode: CodeMode,
        *,
        stream: str | None = None,
        park: bool = False,
        restore_in: CodeMode | None = None,
    ) -> None:
        self.name = name
        self.code_mode = code_mode
        self.stream = stream
        self.park = park
        self.restore_in = restore_in
        self.scope: ReplScope | None = None
        self.keys = itertools.count()
        self.key = ""

    async def begin(self) -> None:
        if self.scope is not None:
            await self.scope.aclose()
        self.scope = self.code_mode.new_scope()
        self.key = f"scope-{next(self.keys)}"

    async def run(self, code: str) -> Answer:
        assert self.scope is not None
        if self.stream is None:
            output = await self.scope.call_tool("run_code", {"code": code})
        else:
            run = self.scope.eager()
            for end, pauses in splits(code, self.stream):
                run.update(code[:end])
                for _ in range(pauses):  # let it feed what is complete, as a stream would
                    await anyio.lowlevel.checkpoint()
            output = await run.finish({"code": code})
        if self.park:
            await self.scope.park()
        if self.restore_in is not None:
            await self.scope.saved.save(self.key)
            await self.scope.aclose()
            self.scope = self.restore_in.new_scope()
            await self.scope.saved.load(self.key)
        return output_answer(output.content, output.is_error)

    def note(self) -> str | None:
        assert self.scope is not None
        return self.scope.context_note()


def splits(code: str, how: str) -> Iterator[tuple[int, int]]:
    """Where a streamed snippet is cut, and how many loop turns pass after each piece: at every
    character for a short snippet (``chars``), else at points drawn from a seed the snippet gives."""
    if how == "chars" and len(code) <= 240:
        for end in range(len(code) + 1):
            yield end, 1
        return
    chooser = random.Random(code)
    end = 0
    while end < len(code):
        end = min(len(code), end + chooser.randint(1, 12))
        yield end, chooser.choice((0, 1, 1, 3))


class CallToolDoor:
    """``CodeMode.call_tool``: the code mode's one shared REPL."""

    name = "library CodeMode.call_tool"

    def __init__(self, code_mode: CodeMode) -> None:
        self.code_mode = code_mode

    async def begin(self) -> None:
        await self.code_mode.call_tool("run_code", {"code": "pass", "restart": True})

    async def run(self, code: str) -> Answer:
        output = await self.code_mode.call_tool("run_code", {"code": code})
        return output_answer(output.content, output.is_error)

    def note(self) -> str | None:
        return self.code_mode.context_note()


class ScopesUseDoor:
    """``CodeMode.scopes.use(key)``: each snippet in a use of its own, as an embedder's runs."""

    name = "library scopes.use"

    def __init__(self, code_mode: CodeMode) -> None:
        self.code_mode = code_mode
        self.keys = itertools.count()
        self.key = ""

    async def begin(self) -> None:
        if self.key:
            await self.code_mode.scopes.release(self.key)
        self.key = f"use-{next(self.keys)}"

    async def run(self, code: str) -> Answer:
        async with self.code_mode.scopes.use(self.key) as use:
            output = await use.scope.call_tool("run_code", {"code": code})
        return output_answer(output.content, output.is_error)

    def note(self) -> str | None:
        return self.code_mode.scopes.get(self.key).context_note()


class PydanticAiDoor:
    """``CodeModeToolset`` in a Pydantic AI agent whose scripted model sends each snippet as
    ``run_code``'s code; the tool result the model then reads is the answer."""

    name = "Pydantic AI CodeModeToolset"

    def __init__(self, code_mode: CodeMode) -> None:
        from pydantic_ai import Agent

        from asyncai.integrations.pydantic_ai import CodeModeToolset

        self.code_mode = code_mode
        self.keys = itertools.count()
        self.key = ""
        self.seen: list[Answer] = []
        toolset = CodeModeToolset(code_mode, conversation_key=lambda ctx: self.key)
        self.agent = Agent(self._model(), toolsets=[toolset])

    def _model(self) -> Any:
        from pydantic_ai.messages import (
            ModelMessage,
            ModelResponse,
            TextPart,
            ToolCallPart,
            ToolReturnPart,
            UserPromptPart,
        )
        from pydantic_ai.models.function import AgentInfo, FunctionModel

        def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            last = messages[-1]
            returns = [part for part in last.parts if isinstance(part, ToolReturnPart)]
            if returns:
                part = returns[-1]
                self.seen.append(
                    Answer(part.model_response_str(wrap_if_error=False), part.outcome == "failed")
                )
                return ModelResponse(parts=[TextPart("done")])
            prompt = next(part.content for part in last.parts if isinstance(part, UserPromptPart))
            return ModelResponse(parts=[ToolCallPart("run_code", {"code": prompt})])

        return FunctionModel(respond)

    async def begin(self) -> None:
        if self.key:
            await self.code_mode.scopes.release(self.key)
        self.key = f"pydantic-{next(self.keys)}"

    async def run(self, code: str) -> Answer:
        self.seen.clear()
        await self.agent.run(code)
        [answer] = self.seen
        return answer

    def note(self) -> str | None:
        return self.code_mode.scopes.get(self.key).context_note()


class AgentDoor:
    """The agent as the chat runs it: the reply streamed from a scripted OpenAI-compatible server
    a few characters at a time, eager execution on; the tool message the model gets back is the
    answer (text only)."""

    name = "agent, streamed (eager)"

    def __init__(self, code_mode: CodeMode, model_url: str, add: Callable[..., None]) -> None:
        from asyncai.backend.config import BackendConfig
        from asyncai.backend.openai import OpenAiCompatibleBackend

        self.code_mode = code_mode
        self.add = add
        self.backend = OpenAiCompatibleBackend(
            BackendConfig(base_url=model_url, model="m", stream=True, eager=True)
        )
        self.scope: ReplScope | None = None

    async def begin(self) -> None:
        if self.scope is not None:
            await self.scope.aclose()
        self.scope = self.code_mode.new_scope()

    async def run(self, code: str) -> Answer:
        from tests.fakes.openai_server import call, text_reply, tool_reply

        assert self.scope is not None
        self.add(tool_reply(call("run_code", {"code": code}), arg_chunk=3), text_reply("done"))
        result = await self.backend.run(history=[], user_text="go", executor=self.scope)
        [message] = [m for m in result.messages if m.role == "tool"]
        return Answer(message.content or "", None)

    def note(self) -> str | None:
        assert self.scope is not None
        return self.scope.context_note()

    def sent(self, code: str) -> str:
        """``code`` as the backend hands it to the engine: pasted catalog stubs and unused imports
        of missing modules dropped (model-output repairs, the backend's alone)."""
        from asyncai.backend import calls, programs

        functions = calls.code_functions({tool.name: tool for tool in self.code_mode.tools()})
        return programs.repaired_snippet(code, functions)[0]


# -- serve-mcp ------------------------------------------------------------------------------------


def mcp_answer(result: Any) -> tuple[Answer, dict[str, Any]]:
    """A result's answer and structured content, once the two are shown to agree (``serve.helpers.ran``)."""
    answer = ran(result)
    return Answer(answer.text, answer.is_error), answer.content


class SdkServeDoor:
    """serve-mcp through the SDK's client: one session (stdio, or HTTP in the 2025 era), the REPL
    restarted for each program; or the stateless 2026 era, its REPL named by a handle."""

    def __init__(self, name: str, session: Client, *, handles: bool = False) -> None:
        self.name = name
        self.session = session
        self.handles = handles
        self.handle: str | None = None
        self._note: str | None = None

    async def begin(self) -> None:
        self._note = None
        self.handle = None
        if not self.handles:
            await self.session.call_tool("run_code", {"code": "pass", "restart": True})

    async def run(self, code: str) -> Answer:
        arguments: dict[str, Any] = {"code": code}
        if self.handle is not None:
            arguments["repl"] = self.handle
        answer, structured = mcp_answer(await self.session.call_tool("run_code", arguments))
        self.handle = structured.get("repl", self.handle)
        if "variables" in structured:
            self._note = structured["variables"]
        return answer

    def note(self) -> str | None:
        return self._note


class SharedServeDoor:
    """Two serve-mcp instances sharing a Redis store: one 2025-era session (raw JSON-RPC, so the
    same ``Mcp-Session-Id`` can be sent to either), its snippets sent to the instances in turn."""

    name = "serve-mcp, two instances over Redis"

    def __init__(self, http: httpx2.AsyncClient, urls: tuple[str, str]) -> None:
        self.http = http
        self.urls = urls
        self.session_id = ""
        self.turn = 0
        self.ids = itertools.count(2)
        self._note: str | None = None

    async def begin(self) -> None:
        self._note = None
        self.turn = 0
        opened = await self.http.post(self.urls[0], json=INITIALIZE, headers=RAW_HEADERS)
        opened.raise_for_status()
        self.session_id = opened.headers["mcp-session-id"]
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await self.http.post(self.urls[0], json=initialized, headers=self.headers())

    def headers(self) -> dict[str, str]:
        return {**RAW_HEADERS, "Mcp-Session-Id": self.session_id, "MCP-Protocol-Version": PROTOCOL}

    async def run(self, code: str) -> Answer:
        url = self.urls[self.turn % 2]
        self.turn += 1
        request_id = next(self.ids)
        request = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                   "params": {"name": "run_code", "arguments": {"code": code}}}  # fmt: skip
        response = await self.http.post(url, json=request, headers=self.headers())
        response.raise_for_status()
        for line in response.text.splitlines():
            message = json.loads(line.removeprefix("data: ")) if line.startswith("data: {") else {}
            if message.get("id") == request_id:
                answer, structured = mcp_answer(message["result"])
                if "variables" in structured:
                    self._note = structured["variables"]
                return answer
        raise AssertionError(f"no answer to request {request_id}: {response.text[:300]}")

    def note(self) -> str | None:
        return self._note


# -- the rig --------------------------------------------------------------------------------------


async def observe(door: Door, program: Program, probe: str) -> Observation:
    observation = Observation()
    try:
        await door.begin()
        for code in program.snippets:
            observation.answers.append(await door.run(code))
            observation.notes.append(door.note())
        observation.state = await door.run(probe)
        observation.notes.append(door.note())
    except Exception as exc:  # a door that breaks is a difference too, never the end of the run
        observation.answers.append(Answer(f"the door raised {type(exc).__name__}: {exc}", True))
    return observation


@asynccontextmanager
async def open_doors(work: Path, model_url: str, add_reply: Callable[..., None]) -> AsyncIterator[list[Door]]:
    """Every door, opened; closed on exit. ``work`` is a directory for the state store."""
    from tests.fakes.redis import redis_server

    async with AsyncExitStack() as stack:
        servers = await stack.enter_async_context(McpServers([stdio_spec(SERVER)]))

        async def code_mode(**options: Any) -> CodeMode:
            return await stack.enter_async_context(CodeMode(servers, LIMITS, mutations="allow", **options))

        speculating = await code_mode()
        plain = await code_mode(speculate=False)
        store = DirectoryStore(work / "store")
        saving, restoring = await code_mode(state_store=store), await code_mode(state_store=store)
        shared_mode, use_mode, pydantic_mode, agent_mode = (
            await code_mode(),
            await code_mode(),
            await code_mode(),
            await code_mode(),
        )
        doors: list[Door] = [
            ScopeDoor("library scope, whole", speculating),
            ScopeDoor("library scope, whole, no speculation", plain),
            ScopeDoor("library scope, streamed by the character", speculating, stream="chars"),
            ScopeDoor("library scope, streamed in pieces, no speculation", plain, stream="pieces"),
            ScopeDoor("library scope, parked after each snippet", speculating, park=True),
            ScopeDoor("library scope, saved and taken up by another code mode", saving, restore_in=restoring),
            CallToolDoor(shared_mode),
            ScopesUseDoor(use_mode),
            PydanticAiDoor(pydantic_mode),
            AgentDoor(agent_mode, model_url, add_reply),
        ]
        stdio = await stack.enter_async_context(Client(stdio_client(stdio_params(*SERVE_ARGS, env=ENV))))
        assert stdio.protocol_version == "2026-07-28"
        doors.append(SdkServeDoor("serve-mcp over stdio, 2026 era", stdio))
        stdio_legacy = await stack.enter_async_context(
            Client(stdio_client(stdio_params(*SERVE_ARGS, env=ENV)), mode="legacy")
        )
        doors.append(SdkServeDoor("serve-mcp over stdio, 2025 era", stdio_legacy))
        served = stack.enter_context(serve_http(*SERVE_ARGS, env=ENV))
        http = await stack.enter_async_context(
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
        )
        legacy = await stack.enter_async_context(
            Client(streamable_http_client(served.url, http_client=http), mode="legacy")
        )
        doors.append(SdkServeDoor("serve-mcp over HTTP, 2025 era", legacy))
        modern = await stack.enter_async_context(Client(streamable_http_client(served.url, http_client=http)))
        assert modern.protocol_version == "2026-07-28"
        doors.append(SdkServeDoor("serve-mcp over HTTP, 2026 era (REPL handles)", modern, handles=True))
        redis = stack.enter_context(redis_server(work))
        shared_args = (*SERVE_ARGS, "--state-store", redis.url)
        first = stack.enter_context(serve_http(*shared_args, env=ENV))
        second = stack.enter_context(serve_http(*shared_args, env=ENV))
        doors.append(SharedServeDoor(http, (first.url, second.url)))
        yield doors


class DoorRig:
    """The doors on an event loop of their own (a thread), for synchronous callers."""

    def __init__(self, work: Path) -> None:
        from tests.fakes.openai_server import ScriptedOpenAI

        self.work = work
        self.model = ScriptedOpenAI().start()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="door-rig", daemon=True)
        self.thread.start()
        self.doors: list[Door] = []
        self._requests: asyncio.Queue[tuple[Callable[[], Awaitable[Any]], Future[Any]]] | None = None
        self._ready: Future[None] = Future()
        self._main = asyncio.run_coroutine_threadsafe(self._serve(), self.loop)

    async def _serve(self) -> None:
        """Opens and closes the doors in one task (their cancel scopes need it) and runs what is asked."""
        self._requests = asyncio.Queue()
        ready: Future[None] = self._ready
        try:
            async with open_doors(self.work, self.model.base_url, self.model.add) as doors:
                self.doors = doors
                ready.set_result(None)
                while True:
                    job, answer = await self._requests.get()
                    if job is None:
                        break
                    try:
                        answer.set_result(await job())
                    except BaseException as exc:
                        answer.set_exception(exc)
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise
        finally:
            await asyncio.sleep(0.05)  # pydantic-monty 1.4: pools closed just before exit can abort it

    @classmethod
    @contextlib.contextmanager
    def running(cls, work: Path) -> Iterator[DoorRig]:
        rig = cls(work)
        try:
            rig._ready.result(timeout=180)
            yield rig
        finally:
            rig.close()

    def call(self, job: Callable[[], Awaitable[T]], timeout: float = 300) -> T:
        answer: Future[T] = Future()
        assert self._requests is not None
        self.loop.call_soon_threadsafe(self._requests.put_nowait, (job, answer))
        return answer.result(timeout)

    def observe(self, program: Program, probe: str) -> dict[str, Observation]:
        """Every door's answers to ``program``, each given its snippets as the agent's backend would
        hand them to the engine, so the backend's repairs make no difference between doors."""
        [agent] = [door for door in self.doors if isinstance(door, AgentDoor)]
        program = Program(tuple(agent.sent(code) for code in program.snippets))

        async def job() -> dict[str, Observation]:
            return {door.name: await observe(door, program, probe) for door in self.doors}

        return self.call(job)

    def close(self) -> None:
        if self._requests is not None:
            self.loop.call_soon_threadsafe(self._requests.put_nowait, (None, None))  # type: ignore[arg-type]
        with contextlib.suppress(Exception):
            self._main.result(timeout=120)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.model.stop()
