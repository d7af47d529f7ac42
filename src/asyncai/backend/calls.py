"""A model's tool calls made ready to run: unique ids, decoded arguments, a catalog function called
by its own name run as a snippet, pasted stubs and missing imports dropped from a snippet, a
program the turn already ran answered from its earlier result. Pure functions."""

from __future__ import annotations

import keyword
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from asyncai.backend.config import Message, ToolCall
from asyncai.backend.decoding import WHOLE_FENCE, ArgumentsError, code_text, decode_arguments, schema_example
from asyncai.backend.programs import program_key, repaired_snippet
from asyncai.backend.wire import RawToolCall
from asyncai.log import dumps_compact, preview
from asyncai.tools.types import ToolDefinition

RAN_AS_PREVIEW_CHARS = 400


@dataclass(frozen=True)
class PreparedCall:
    """A tool call after repair: a unique id, and either arguments to run or an error for the model.

    ``arguments_json`` is what goes into the assistant message (compact JSON of the repaired
    arguments, ``{}`` for unusable ones) so a corrupt string is never replayed. ``ran_as`` is the
    snippet a call to a catalog function by its own name became (the result says it was run so);
    ``repairs`` names each repair it needed (see :data:`REPAIR_KINDS`).
    """

    id: str
    name: str
    arguments: dict[str, Any] | None
    error: str | None
    arguments_json: str
    ran_as: str | None = None
    repairs: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    """Catalog functions whose pasted definitions were dropped from the snippet."""
    dropped_imports: tuple[str, ...] = ()
    """Modules the sandbox lacks whose unused imports were dropped from the snippet."""
    earlier_result: str | None = None
    """The result of the same program earlier in this turn: not run again, this goes back instead."""

    @property
    def ok(self) -> bool:
        """Whether the call runs: no error, and not a repeat answered from its earlier result."""
        return self.error is None and self.earlier_result is None


REPAIR_KINDS = (
    "fenced_json",
    "tool_call_tags",
    "bare_json",
    "python_block",
    "catalog_name",
    "code_quoted",
    "stub_pasted",
    "import_dropped",
)
"""A call written in the reply text (three ways), a program in a ```python block of the reply that
calls catalog functions, a catalog function called by its own name, ``run_code``'s code given in
backticks or triple quotes, catalog stubs pasted into a snippet (their definitions dropped), and an
unused import of a module the sandbox lacks (dropped)."""


def repair_ids(ids: Sequence[str | None], used: Iterable[str] = ()) -> list[str]:
    """Unique ids for one message's calls: missing or already used ids become ``call_<n>``."""
    taken = set(used)
    result: list[str] = []
    counter = 0
    for call_id in ids:
        if call_id is None or call_id in taken:
            counter += 1
            while f"call_{counter}" in taken or f"call_{counter}" in ids:
                counter += 1
            call_id = f"call_{counter}"
        taken.add(call_id)
        result.append(call_id)
    return result


def code_functions(tools: Mapping[str, ToolDefinition]) -> dict[str, str]:
    """Each function a code tool's snippets can call (``ToolDefinition.callables``) -> that tool;
    an offered tool of the same name keeps its name."""
    return {
        function: tool.name for tool in tools.values() for function in tool.callables if function not in tools
    }


def code_tool_name(tools: Mapping[str, ToolDefinition]) -> str | None:
    """The offered tool that runs code, if any: one with callables, else one named ``run_code``."""
    with_callables = [tool.name for tool in tools.values() if tool.callables]
    if with_callables:
        return with_callables[0]
    return "run_code" if "run_code" in tools else None


def _is_keyword_name(name: str) -> bool:
    """Whether ``name=`` passes ``name`` itself (Python NFKC-normalises identifiers: ``ª`` is ``a``)."""
    return name.isidentifier() and not keyword.iskeyword(name) and unicodedata.normalize("NFKC", name) == name


def call_snippet(function: str, arguments: Mapping[str, Any]) -> str:
    """The call as Python: ``await search_files(path='/data', pattern='*.txt')``. Arguments whose
    names are no Python identifiers go in as ``**{...}``."""
    parts = [f"{name}={value!r}" for name, value in arguments.items() if _is_keyword_name(name)]
    others = {name: value for name, value in arguments.items() if not _is_keyword_name(name)}
    if others:
        parts.append(f"**{others!r}")
    return f"await {function}({', '.join(parts)})"


def ran_as_note(snippet: str, tool: str = "run_code") -> str:
    """The line before a repaired call's result: what was run, so the model learns the form."""
    return f"(ran as {tool}: {preview(snippet, RAN_AS_PREVIEW_CHARS)})"


def _unfenced_code(arguments: dict[str, Any]) -> dict[str, Any] | None:
    """``arguments`` with a ``code`` value that is one markdown code block unfenced, or ``None``."""
    code = arguments.get("code")
    match = WHOLE_FENCE.match(code) if isinstance(code, str) else None
    if match is None:
        return None
    return {**arguments, "code": code_text(match.group(1))}


def already_ran_text(earlier_result: str) -> str:
    """What a program the turn already ran gets back: its result again, and the next step."""
    return (
        f"(not run again: this turn already ran this same program; its result was:)\n{earlier_result}\n"
        "(If it answers the user's question, answer in plain words; if part of the answer is "
        "missing, run a program that fetches that part.)"
    )


def dropped_note(names: Sequence[str]) -> str:
    """The line before the result of a snippet whose pasted stubs were dropped."""
    listed = ", ".join(names)
    return f"(your definitions of {listed} were dropped: the tool functions exist already; just call them)"


def call_notes(call: PreparedCall) -> list[str]:
    """The lines before a repaired call's result: what was run for it, and what was dropped."""
    notes = [ran_as_note(call.ran_as, call.name)] if call.ran_as is not None else []
    if call.dropped:  # the stubs are not to be pasted
        notes.append(dropped_note(call.dropped))
    if call.dropped_imports:
        listed = ", ".join(call.dropped_imports)
        notes.append(f"(import {listed} was dropped: the sandbox has no such module, and nothing used it)")
    return notes


def _cap_error(position: int, total: int, cap: int, code_tool: str | None) -> str:
    instead = f" Do repeated work in one {code_tool} snippet, with a loop." if code_tool else ""
    return (
        f"error: not run: a reply may make at most {cap} tool calls, and this was call "
        f"{position} of {total}.{instead}"
    )


def prepare_calls(
    calls: Sequence[RawToolCall],
    tools: Mapping[str, ToolDefinition],
    used_ids: Iterable[str] = (),
    *,
    max_calls: int | None = None,
    already_ran: Mapping[str, str] | None = None,
) -> list[PreparedCall]:
    """Repair ids and arguments of one assistant message's calls; bad calls carry an error text.

    A call to a function of a code tool's catalog by its own name (a model that took a stub for a
    tool) becomes that tool's call with the snippet ``await name(**arguments)``; stubs pasted into
    a snippet are dropped from it. Calls after the first ``max_calls`` are not run: each gets an
    error saying the cap; nor is a snippet whose :func:`program_key` is in ``already_ran`` (a small
    model that calls again what it has the result of, instead of answering): it gets that earlier
    result back as ``earlier_result``.
    """
    already_ran = already_ran or {}
    ids = repair_ids([c.id for c in calls], used_ids)
    available = ", ".join(sorted(tools)) or "(none)"
    functions = code_functions(tools)
    code_tool = code_tool_name(tools)
    prepared: list[PreparedCall] = []
    for position, (call, call_id) in enumerate(zip(calls, ids, strict=True), start=1):
        name = call.name or ""
        parsed, quoted = decode_arguments(call.arguments)
        repairs: tuple[str, ...] = ("code_quoted",) if quoted else ()
        empty = isinstance(parsed, ArgumentsError) and parsed.reason == "empty"
        arguments = parsed if isinstance(parsed, dict) else {} if empty else None
        function = name if name in functions else None
        ran_as: str | None = None
        if function is not None:
            name = functions[function]
            if arguments is not None:
                ran_as = call_snippet(function, arguments)
                arguments, repairs = {"code": ran_as}, (*repairs, "catalog_name")
                parsed, empty = arguments, False
        tool = tools.get(name)
        dropped: tuple[str, ...] = ()
        dropped_imports: tuple[str, ...] = ()
        code: str | None = None
        if arguments is not None and tool is not None and _takes_code(tool):
            unfenced = _unfenced_code(arguments)
            if unfenced is not None:
                arguments, repairs = unfenced, (*repairs, "code_quoted")
            code = arguments.get("code") if isinstance(arguments.get("code"), str) else None
            if code is not None:
                code, dropped, dropped_imports = repaired_snippet(code, functions, tool.importable)
                arguments = {**arguments, "code": code}
                repairs = (*repairs, *(["stub_pasted"] if dropped else []))
                repairs = (*repairs, *(["import_dropped"] if dropped_imports else []))
        error: str | None = None
        if not name:
            error = f"error: the tool call had no function name. Available tools: {available}."
        elif tool is None:
            instead = f' Call {code_tool} with Python code: {{"code": "..."}}.' if code_tool else ""
            error = f"error: unknown tool {name!r}. Available tools: {available}.{instead}"
        elif max_calls is not None and position > max_calls:
            error = _cap_error(position, len(calls), max_calls, code_tool)
        elif isinstance(parsed, ArgumentsError) and function is not None:
            error = (
                f"error: the arguments for {function} were {parsed.reason}: {parsed.preview}. "
                f'Call {name} with Python code instead: {{"code": "await {function}(...)"}}.'
            )
        elif isinstance(parsed, ArgumentsError) and not (empty and schema_example(tool.input_schema) == "{}"):
            example = schema_example(tool.input_schema)
            what = "empty" if empty else f"{parsed.reason}: {parsed.preview}"
            error = f"error: the arguments for {name} were {what}. Send {example} as JSON."
        usable = error is None
        earlier = already_ran.get(program_key(code)) if usable and code is not None else None
        prepared.append(
            PreparedCall(
                id=call_id,
                name=function if function is not None and ran_as is None else name,  # as the model wrote it
                arguments=arguments if usable else None,
                error=error,
                arguments_json=dumps_compact(arguments if arguments is not None else {}),
                ran_as=ran_as if usable else None,
                repairs=repairs if usable else (),
                dropped=dropped if usable else (),
                dropped_imports=dropped_imports if usable else (),
                earlier_result=earlier,
            )
        )
    return prepared


def _takes_code(tool: ToolDefinition) -> bool:
    properties = tool.input_schema.get("properties")
    return isinstance(properties, Mapping) and "code" in properties


def assistant_message(
    content: str | None, calls: Sequence[PreparedCall], reasoning_content: str | None = None
) -> Message:
    """The assistant message to keep and send back (repaired calls, never the corrupt originals)."""
    return Message(
        role="assistant",
        content=content,
        tool_calls=tuple(ToolCall(c.id, c.name, c.arguments_json) for c in calls),
        reasoning_content=reasoning_content or None,
    )
