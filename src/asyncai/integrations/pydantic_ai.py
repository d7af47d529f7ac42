"""asyncai's ``run_code`` as a Pydantic AI toolset, with one REPL per conversation.

    from pydantic_ai import Agent
    from asyncai.integrations.pydantic_ai import CodeModeToolset

    async with asyncai.CodeMode([mcp, functions]) as code_mode:
        agent = Agent(model, toolsets=[CodeModeToolset(code_mode)])
        first = await agent.run("Load the pods into a variable")
        second = await agent.run("How many are pending?", message_history=first.all_messages())

The conversation is Pydantic AI's own ``RunContext.conversation_id`` (from ``Agent.run``'s
``conversation_id``, else the newest message of ``message_history``, else a new one), so a run
that continues a history continues its REPL. ``conversation_key=`` keys REPLs some other way (a
session id in ``deps``). With a ``state_store`` on the code mode, a conversation's REPL is saved
after each run and taken up again in another process.

A snippet that fails reaches the model as a failed tool result (``ToolFailed``): it is the REPL's
answer for the model to read and fix, not a malformed call, so it spends no retry budget. Needs
the ``pydantic-ai`` extra (``pip install 'asyncai[pydantic-ai]'``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from typing import Any, Literal, Self

from pydantic_ai import RunContext, ToolReturn
from pydantic_ai.exceptions import ToolFailed, UserError
from pydantic_ai.messages import InstructionPart
from pydantic_ai.tools import AgentDepsT, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
from pydantic_core import SchemaValidator, core_schema

from asyncai.code_mode.engine.scope import ReplScope
from asyncai.code_mode.executor import CodeMode
from asyncai.code_mode.scopes import ScopeUse

ConversationKey = Callable[[RunContext[AgentDepsT]], str]
"""Which conversation (so which REPL) a run belongs to."""

# Any JSON object, as Pydantic AI's MCPToolset validates: asyncai checks run_code's arguments.
_ANY_OBJECT = SchemaValidator(core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema()))


def conversation_id(ctx: RunContext[Any]) -> str:
    """The default key: the run's ``conversation_id``, which every ``Agent`` run sets."""
    if ctx.conversation_id is None:
        raise UserError("CodeModeToolset needs the run's conversation_id; pass conversation_key=")
    return ctx.conversation_id


class CodeModeToolset(AbstractToolset[AgentDepsT]):
    """``run_code`` over ``code_mode``; each run holds its conversation's REPL from start to end.

    The code mode belongs to the caller (REPLs outlive agent runs); ``release(key)`` drops one
    conversation's REPL earlier. At the start of a run the model is told, as an instruction, which
    variables the REPL holds (``variables_note=False`` leaves that out)."""

    def __init__(
        self,
        code_mode: CodeMode,
        *,
        conversation_key: ConversationKey[AgentDepsT] = conversation_id,
        variables_note: bool = True,
        id: str | None = "asyncai",
    ) -> None:
        self.code_mode = code_mode
        self.conversation_key = conversation_key
        self.variables_note = variables_note
        self._id = id
        self._key: str | None = None
        self._use: ScopeUse | None = None
        self._depth = 0
        self._stack = AsyncExitStack()

    @property
    def id(self) -> str | None:
        return self._id

    async def release(self, key: str) -> None:
        """Close conversation ``key``'s REPL now; its next run starts with an empty one."""
        await self.code_mode.scopes.release(key)

    async def for_run(self, ctx: RunContext[AgentDepsT]) -> AbstractToolset[AgentDepsT]:
        """A copy bound to this run's conversation; entering it holds the REPL for the run."""
        bound = copy.copy(self)
        bound._key, bound._use, bound._depth, bound._stack = (
            self.conversation_key(ctx),
            None,
            0,
            AsyncExitStack(),
        )
        return bound

    async def __aenter__(self) -> Self:
        if self._key is not None:
            if self._depth == 0:  # held for the whole run, not only while a snippet runs
                use = self.code_mode.scopes.use(self._key, saved_as=self._key)
                self._use = await self._stack.enter_async_context(use)
            self._depth += 1
        return self

    async def __aexit__(self, *args: Any) -> bool | None:
        if self._key is not None and self._depth > 0:
            self._depth -= 1
            if self._depth == 0:
                self._use = None
                await self._stack.aclose()
        return None

    def _scope(self, ctx: RunContext[AgentDepsT]) -> ReplScope:
        if self._use is not None:
            return self._use.scope
        # Called outside an agent run (the toolset used directly): the key's REPL, not held.
        return self.code_mode.scopes.get(self._key or self.conversation_key(ctx))

    async def get_instructions(
        self, ctx: RunContext[AgentDepsT]
    ) -> str | InstructionPart | Sequence[str | InstructionPart] | None:
        note = self._use.note if self._use is not None else None
        if not self.variables_note or note is None:
            return None
        # Taken as the run starts, so the prompt does not change after every snippet.
        on_change: Literal["append", "rewrite"] = "append" if self.id is not None else "rewrite"
        return InstructionPart(content=note, dynamic=True, name="variables", on_change=on_change)

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        [run_code] = self._scope(ctx).tools()
        definition = ToolDefinition(
            name=run_code.name,
            description=run_code.description,
            parameters_json_schema=run_code.input_schema,
            sequential=True,  # snippets of one REPL run in the order the model wrote them
            metadata={
                "annotations": {"readOnlyHint": run_code.read_only, "destructiveHint": run_code.destructive}
            },
        )
        return {
            run_code.name: ToolsetTool[AgentDepsT](
                toolset=self, tool_def=definition, max_retries=ctx.max_retries, args_validator=_ANY_OBJECT
            )
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> ToolReturn[str]:
        scope = self._scope(ctx)
        [run_code] = scope.tools()  # asyncai's own name: a renaming toolset may show it as another
        output = await scope.call_tool(run_code.name, tool_args)
        if output.is_error:
            raise ToolFailed(output.content)
        # The nested calls go on the metadata: kept in the history, never sent to the model.
        return ToolReturn(return_value=output.content, metadata=output.audit)
