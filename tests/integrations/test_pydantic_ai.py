"""``CodeModeToolset`` with Pydantic AI's own scripted model (``FunctionModel``) over a real code
mode (real pydantic-monty workers). The scripted model sends each user prompt as run_code's
``code`` and answers with the tool result's text, so a run's output is what the REPL returned."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from asyncai import CodeMode, CodeModeLimits, DirectoryStore, FunctionTools, tool
from asyncai.integrations.pydantic_ai import CodeModeToolset

pytestmark = pytest.mark.anyio


@tool(read_only=True)
def capital(country: str) -> str:
    """The capital city of a country."""
    return {"France": "Paris", "Japan": "Tokyo"}[country]


LIMITS = CodeModeLimits(max_memory=256 * 2**20)


@pytest.fixture
async def code_mode() -> AsyncIterator[CodeMode]:
    async with CodeMode(FunctionTools([capital]), LIMITS) as made:
        yield made


@dataclass
class ScriptedModel:
    """Each user prompt goes out as run_code's code; then the tool result's text is the reply.
    Records the instructions of every request."""

    instructions: list[str | None] = field(default_factory=list)
    on_request: Callable[[], None] | None = None

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.instructions.append(info.instructions)
        if self.on_request is not None:
            self.on_request()
        last = messages[-1]
        returns = [part for part in last.parts if isinstance(part, ToolReturnPart)]
        if returns:
            return ModelResponse(parts=[TextPart(returns[-1].model_response_str(wrap_if_error=False))])
        prompt = next(part.content for part in last.parts if isinstance(part, UserPromptPart))
        assert isinstance(prompt, str)
        return ModelResponse(parts=[ToolCallPart("run_code", {"code": prompt})])

    def model(self) -> FunctionModel:
        return FunctionModel(self)


def run_code_returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [
        part
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_name == "run_code"
    ]


async def test_a_variable_is_kept_across_two_runs_of_one_conversation(code_mode: CodeMode) -> None:
    script = ScriptedModel()
    agent = Agent(script.model(), toolsets=[CodeModeToolset(code_mode)])

    first = await agent.run("x = 41")
    second = await agent.run("x + 1", message_history=first.all_messages())

    assert second.conversation_id == first.conversation_id
    assert second.output == "42"
    assert "x: int" in (script.instructions[-1] or "")  # run 2 was told what the REPL holds

    other = await agent.run("x + 1")  # no history: another conversation, another REPL
    assert other.conversation_id != first.conversation_id
    [failed] = run_code_returns(other.new_messages())
    assert failed.outcome == "failed"
    assert "NameError: name 'x' is not defined" in failed.model_response_str(wrap_if_error=False)


async def test_snippets_call_python_functions_and_the_audit_stays_off_the_prompt(code_mode: CodeMode) -> None:
    agent = Agent(ScriptedModel().model(), toolsets=[CodeModeToolset(code_mode)])
    result = await agent.run("c = await capital(country='France')\nc.upper()")
    assert result.output == "PARIS"
    [returned] = run_code_returns(result.new_messages())
    assert returned.model_response_str() == "PARIS"
    assert returned.metadata is not None
    [nested] = returned.metadata["nested_calls"]
    assert (nested["tool"], nested["arguments"], nested["mutating"]) == (
        "capital",
        {"country": "France"},
        False,
    )


async def test_a_key_from_deps_and_release(code_mode: CodeMode) -> None:
    @dataclass
    class Session:
        user: str

    toolset = CodeModeToolset[Session](code_mode, conversation_key=lambda ctx: f"user-{ctx.deps.user}")
    agent = Agent(ScriptedModel().model(), deps_type=Session, toolsets=[toolset])
    await agent.run("z = 7", deps=Session("ada"))
    assert (await agent.run("z * 6", deps=Session("ada"))).output == "42"
    assert "NameError" in (await agent.run("z", deps=Session("bob"))).output
    await toolset.release("user-ada")
    assert "NameError" in (await agent.run("z", deps=Session("ada"))).output


async def test_the_repl_is_held_for_the_whole_run(code_mode: CodeMode) -> None:
    """Between two requests of a run the REPL is in use (not parked or released as idle)."""
    idle_during_run: list[list[str]] = []
    script = ScriptedModel(on_request=lambda: idle_during_run.append(code_mode.scopes.idle()))
    result = await Agent(script.model(), toolsets=[CodeModeToolset(code_mode)]).run("v = 1")
    assert idle_during_run == [[], []]
    assert code_mode.scopes.idle() == [result.conversation_id]


async def test_with_a_state_store_a_conversation_outlives_its_code_mode(tmp_path) -> None:
    store = DirectoryStore(tmp_path)
    async with CodeMode(FunctionTools([capital]), LIMITS, state_store=store) as first_process:
        agent = Agent(ScriptedModel().model(), toolsets=[CodeModeToolset(first_process)])
        first = await agent.run("kept = 'from before'")
    async with CodeMode(FunctionTools([capital]), LIMITS, state_store=store) as second_process:
        agent = Agent(ScriptedModel().model(), toolsets=[CodeModeToolset(second_process)])
        again = await agent.run("kept", message_history=first.all_messages())
    assert again.output == "from before"
