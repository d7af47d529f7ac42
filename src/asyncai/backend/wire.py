"""The OpenAI chat-completions wire format as pure functions: no I/O, no clocks, no logging.

Everything here is written against what real local servers send, not only against the spec
(see the wire guide, section 3.2): parallel calls all at ``index`` 0, missing, ``null``, integer or
duplicate ids, function names resent on every chunk, arguments that are empty, already an object,
fenced in markdown, followed by prose or not JSON at all, ``finish_reason`` that disagrees with the
calls, and ``content: null`` next to tool calls.
"""

from __future__ import annotations

import ast
import json
import keyword
import re
import textwrap
import unicodedata
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from asyncai.backend.config import NO_ANSWER_TEXT, BackendConfig, Message, ToolCall
from asyncai.code_mode.engine.contract import IMPORTABLE_MODULES
from asyncai.code_mode.engine.read import SNIPPET_FILE
from asyncai.humanize import count, one_line
from asyncai.log import dumps_compact, preview
from asyncai.tools.types import ToolDefinition

ARGUMENT_PREVIEW_CHARS = 200
RAN_AS_PREVIEW_CHARS = 400
LAST_RESULT_PREVIEW_CHARS = 500
_FENCE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\n?(.*?)\n?[ \t]*```", re.DOTALL)
_WHOLE_FENCE = re.compile(r"^\s*```[A-Za-z0-9_+-]*[ \t]*\n(.*?)\n[ \t]*```\s*$", re.DOTALL)
_CODE_LITERAL = re.compile(
    r"(?P<key>[\"']code[\"']\s*:\s*)"
    r"(?:```[A-Za-z0-9_+-]*[ \t]*\n?(?P<fenced>.*?)```"
    r"|\"\"\"(?P<double>.*?)\"\"\""
    r"|'''(?P<single>.*?)'''"
    r"|`(?P<tick>[^`]*)`)",
    re.DOTALL,
)
"""A ``code`` value in backticks or triple quotes, for which JSON has no syntax."""


# --------------------------------------------------------------------------------------------------
# Requests


def tool_specs(tools: Iterable[ToolDefinition]) -> list[dict[str, Any]]:
    """OpenAI function tools for ``tools``, sorted by name so the request prefix is byte-stable."""
    return [
        {
            "type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": tool.input_schema},
        }
        for tool in sorted(tools, key=lambda t: t.name)
    ]


def user_message_text(user_text: str, note: str | None) -> str:
    """The newest user message: the user's text, then the per-run note as its own paragraph
    (at the end, so the cached prefix stays the same)."""
    if note and note.strip():
        return f"{user_text}\n\n{note.strip()}"
    return user_text


def build_request_body(
    config: BackendConfig,
    *,
    history: Sequence[Message],
    run_messages: Sequence[Message],
    tools: Sequence[Mapping[str, Any]] | None,
    final_instruction: str | None = None,
) -> dict[str, Any]:
    """One chat-completions request body.

    The system prompt comes first, then the thread's earlier messages, then this run's messages.
    ``tools=None`` (or empty) leaves the ``tools`` key out entirely; ``final_instruction`` is appended
    as a user message (the tool-free final round).
    """
    messages: list[dict[str, Any]] = [{"role": "system", "content": config.system_prompt}]
    messages.extend(m.to_wire() for m in history)
    messages.extend(m.to_wire() for m in run_messages)
    if final_instruction is not None:
        messages.append({"role": "user", "content": final_instruction})
    body: dict[str, Any] = {"model": config.model, "messages": messages}
    if tools:
        body["tools"] = [dict(t) for t in tools]
    if config.temperature is not None:
        body["temperature"] = config.temperature
    if config.max_tokens is not None:
        body["max_tokens"] = config.max_tokens
    body["stream"] = config.stream
    if config.stream:
        body["stream_options"] = {"include_usage": True}
    for key, value in config.extra_body.items():
        body.setdefault(key, value)
    return body


# --------------------------------------------------------------------------------------------------
# Responses


@dataclass(frozen=True)
class RawToolCall:
    """A tool call as the server sent it, before any repair."""

    id: str | None
    name: str | None
    arguments: Any


@dataclass(frozen=True)
class AssistantTurn:
    """One parsed assistant answer (streamed or not)."""

    content: str | None
    tool_calls: tuple[RawToolCall, ...] = ()
    finish_reason: str | None = None
    reasoning_content: str | None = None
    usage: dict[str, Any] | None = None


class ResponseFormatError(ValueError):
    """The server's answer is not a chat completion; the message says what was wrong."""


def _norm_id(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    text = str(value).strip()
    return text or None


def _norm_name(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    return value.strip() or None


def _text(value: Any) -> str | None:
    """Message content: a string, ``null``, or a list of ``{"type": "text", "text": ...}`` parts."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [p.get("text", "") for p in value if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "".join(parts)
    return str(value)


def _error_message(body: Mapping[str, Any]) -> str | None:
    error = body.get("error")
    if error is None:
        return None
    if isinstance(error, Mapping):
        return str(error.get("message") or dumps_compact(error))
    return str(error)


def parse_completion(body: Any) -> AssistantTurn:
    """Parse a non-streaming chat-completions response body."""
    if not isinstance(body, Mapping):
        raise ResponseFormatError(f"expected a JSON object, got {type(body).__name__}")
    if (error := _error_message(body)) is not None:
        raise ResponseFormatError(f"the server returned an error: {error}")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise ResponseFormatError("the response has no choices")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, Mapping):
        raise ResponseFormatError("the first choice has no message")
    calls: list[RawToolCall] = []
    for raw in message.get("tool_calls") or []:
        if not isinstance(raw, Mapping):
            continue
        function = raw.get("function")
        function = function if isinstance(function, Mapping) else {}
        name = _norm_name(function.get("name"))
        calls.append(RawToolCall(id=_norm_id(raw.get("id")), name=name, arguments=function.get("arguments")))
    legacy = message.get("function_call")
    if not calls and isinstance(legacy, Mapping):
        name = _norm_name(legacy.get("name"))
        calls.append(RawToolCall(id=None, name=name, arguments=legacy.get("arguments")))
    usage = body.get("usage")
    return AssistantTurn(
        content=_text(message.get("content")),
        tool_calls=tuple(calls),
        finish_reason=choice.get("finish_reason") if isinstance(choice.get("finish_reason"), str) else None,
        reasoning_content=_text(message.get("reasoning_content")),
        usage=dict(usage) if isinstance(usage, Mapping) else None,
    )


def sse_data(line: str) -> str | None:
    """The payload of an SSE ``data:`` line, or ``None`` for comments, blank lines and other fields."""
    if not line.startswith("data:"):
        return None
    return line[5:].strip()


@dataclass
class _PartialCall:
    id: str | None = None
    name: str | None = None
    arg_parts: list[str] = field(default_factory=list)
    arg_object: Any = None

    def arguments(self) -> Any:
        if self.arg_object is not None and not "".join(self.arg_parts).strip():
            return self.arg_object
        return "".join(self.arg_parts)

    def complete(self) -> bool:
        """Whether the arguments so far already form one whole JSON value."""
        if self.arg_object is not None:
            return True
        text = "".join(self.arg_parts).strip()
        if not text:
            return False
        try:
            json.loads(text)
        except ValueError:
            return False
        return True


def _starts_new_call(current: _PartialCall, call_id: str | None, name: str | None, no_index: bool) -> bool:
    """Whether a tool-call delta at an occupied slot begins another call (see StreamAccumulator)."""
    if name is None:
        return False
    if call_id is None or current.id is None or call_id == current.id:
        # Without a new id, only a server that sends no index at all can mean a new call.
        return no_index and current.name is not None and current.complete()
    return name != current.name or current.complete()


class StreamAccumulator:
    """Reassembles streamed ``chat.completion.chunk`` objects into one :class:`AssistantTurn`.

    Calls are keyed by ``index``; a chunk at an occupied index starts a new call when it carries a
    new non-empty id together with a function name and the current call is either for another
    tool or already holds complete JSON (servers that send every call at index 0), but not when a
    server merely sends a fresh id or resends the name on every chunk. Names are assigned, never
    appended.
    """

    def __init__(self) -> None:
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[_PartialCall] = []
        self._by_index: dict[int, int] = {}
        self._last: int | None = None
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.saw_content = False
        self.on_arguments: Callable[[int, str | None, str], None] | None = None
        """Told ``(position, name, arguments so far)`` as each call's arguments stream in."""

    def feed(self, chunk: Any) -> str:
        """Take one chunk; the reply text it added (``""`` when none)."""
        added = ""
        if not isinstance(chunk, Mapping):
            raise ResponseFormatError(f"a stream chunk is not a JSON object: {type(chunk).__name__}")
        if (error := _error_message(chunk)) is not None:
            raise ResponseFormatError(f"the server returned an error: {error}")
        usage = chunk.get("usage")
        if isinstance(usage, Mapping):
            self.usage = dict(usage)
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, Mapping) or choice.get("index", 0) not in (0, None):
                continue
            delta = choice.get("delta")
            if not isinstance(delta, Mapping):
                delta = choice.get("message") if isinstance(choice.get("message"), Mapping) else {}
            assert isinstance(delta, Mapping)
            content = _text(delta.get("content"))
            if content is not None:
                self._content.append(content)
                self.saw_content = True
                added += content
            reasoning = _text(delta.get("reasoning_content"))
            if reasoning:
                self._reasoning.append(reasoning)
            for raw in delta.get("tool_calls") or []:
                if isinstance(raw, Mapping):
                    self._feed_call(raw)
            if isinstance(choice.get("finish_reason"), str):
                self.finish_reason = choice["finish_reason"]
        return added

    def _feed_call(self, raw: Mapping[str, Any]) -> None:
        function = raw.get("function")
        function = function if isinstance(function, Mapping) else {}
        call_id = _norm_id(raw.get("id"))
        name = _norm_name(function.get("name"))
        index = raw.get("index")
        position: int | None
        if isinstance(index, int) and not isinstance(index, bool):
            position = self._by_index.get(index)
        else:
            index = None
            position = self._last
        if position is not None and _starts_new_call(self._calls[position], call_id, name, index is None):
            position = None
        if position is None:
            self._calls.append(_PartialCall())
            position = len(self._calls) - 1
            if index is not None:
                self._by_index[index] = position
        self._last = position
        call = self._calls[position]
        if call.id is None and call_id is not None:
            call.id = call_id
        if name is not None:
            call.name = name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call.arg_parts.append(arguments)
            if self.on_arguments is not None and arguments:
                self.on_arguments(position, call.name, "".join(call.arg_parts))
        elif arguments is not None:
            call.arg_object = arguments

    def result(self) -> AssistantTurn:
        calls = tuple(RawToolCall(id=c.id, name=c.name, arguments=c.arguments()) for c in self._calls)
        return AssistantTurn(
            content="".join(self._content) if self.saw_content else None,
            tool_calls=calls,
            finish_reason=self.finish_reason,
            reasoning_content="".join(self._reasoning) or None,
            usage=self.usage,
        )


# --------------------------------------------------------------------------------------------------
# Tool-call repair


@dataclass(frozen=True)
class ArgumentsError:
    """Why tool-call arguments could not be used; ``preview`` is a bounded rendering of them."""

    reason: str
    preview: str


def _preview_raw(raw: Any) -> str:
    text = raw if isinstance(raw, str) else dumps_compact(raw) if _jsonable(raw) else repr(raw)
    return preview(text.replace("\n", "\\n"), ARGUMENT_PREVIEW_CHARS)


def _jsonable(value: Any) -> bool:
    """Whether ``value`` is strict JSON: NaN and infinities are not (a transcript could not keep
    them, and many servers reject them)."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


_NOT_DECODED = object()


_LITERAL_NAMES: dict[str, Any] = {
    "true": True, "false": False, "null": None, "True": True, "False": False, "None": None,
}  # fmt: skip


def _literal(node: ast.expr) -> Any:
    """A JSON value written as a Python literal (JSON's ``true``/``null`` allowed); ``ValueError`` else."""
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, str | int | float)):
        return node.value
    if isinstance(node, ast.Name) and node.id in _LITERAL_NAMES:
        return _LITERAL_NAMES[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _literal(node.operand)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.List | ast.Tuple):
        return [_literal(item) for item in node.elts]
    if isinstance(node, ast.Dict):
        result: dict[str, Any] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            name = _literal(key) if key is not None else None
            if not isinstance(name, str):
                raise ValueError("a key that is not a string")
            result[name] = _literal(value)
        return result
    raise ValueError(f"not a literal: {type(node).__name__}")


def _python_literal(text: str) -> Any:
    """Python literals from small models: single quotes, True/None, trailing commas, triple quotes."""
    try:
        value = _literal(ast.parse(text.strip(), SNIPPET_FILE, mode="eval").body)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _NOT_DECODED
    return value if _jsonable(value) else _NOT_DECODED


def _json_or_embedded(text: str) -> Any:
    """``text`` as JSON, or the first JSON object in it (JSON with prose around it)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    start = text.find("{")
    if start >= 0:
        try:
            value, _ = json.JSONDecoder().raw_decode(text, start)
            return value
        except (ValueError, RecursionError):
            pass
    return _NOT_DECODED


def _code_text(code: str) -> str:
    """Code as a model wrote it between quotes: indented with the JSON around it, blank-line padded."""
    return textwrap.dedent(code).strip("\n").rstrip()


def repair_code_literals(text: str) -> str:
    """``text`` with each ``"code"`` value written in backticks or triple quotes turned into a JSON
    string, its contents taken verbatim (no escapes: it is source code)."""

    def replace(match: re.Match[str]) -> str:
        groups = ("fenced", "double", "single", "tick")
        code = next(match.group(name) for name in groups if match.group(name) is not None)
        return match.group("key") + json.dumps(_code_text(code), ensure_ascii=False)

    return _CODE_LITERAL.sub(replace, text)


def _decode_text(text: str) -> tuple[Any, bool]:
    """Best-effort decoding of argument text: the value (``_NOT_DECODED`` when nothing worked), and
    whether code in backticks or triple quotes had to be rewritten for it."""
    candidates = [text]
    fence = _FENCE.match(text)
    if fence:
        candidates.insert(0, fence.group(1).strip())
    for candidate in candidates:
        value = _json_or_embedded(candidate)
        if value is not _NOT_DECODED:
            return value, False
    for candidate in candidates:
        # Before Python literals: a triple-quoted string there would turn the code's escapes into characters.
        repaired = repair_code_literals(candidate)
        if repaired == candidate:
            continue
        for value in (_json_or_embedded(repaired), _python_literal(repaired)):
            if isinstance(value, dict):
                return value, True
    for candidate in candidates:
        value = _python_literal(candidate)
        if isinstance(value, dict):
            return value, False
    return _NOT_DECODED, False


def parse_arguments(raw: Any) -> dict[str, Any] | ArgumentsError:
    """Tool-call arguments as a dict, or why not.

    Accepts a JSON string, an object already decoded by the server, JSON fenced in markdown, JSON
    followed (or preceded) by prose, a JSON string that itself encodes an object, Python dict
    literals, and a ``code`` value in backticks or triple quotes. Empty arguments are an
    :class:`ArgumentsError` with reason ``"empty"``.
    """
    return _parse_arguments(raw)[0]


def _parse_arguments(raw: Any) -> tuple[dict[str, Any] | ArgumentsError, bool]:
    """``parse_arguments``, and whether quoted code had to be rewritten (``repair_code_literals``)."""
    if isinstance(raw, Mapping):
        if all(isinstance(k, str) for k in raw) and _jsonable(dict(raw)):
            return dict(raw), False
        return ArgumentsError("not a JSON object", _preview_raw(raw)), False
    if raw is None:
        return ArgumentsError("empty", ""), False
    if not isinstance(raw, str):
        return ArgumentsError(f"a JSON {type(raw).__name__}, not an object", _preview_raw(raw)), False
    text = raw.strip()
    if not text:
        return ArgumentsError("empty", ""), False
    value, repaired = _decode_text(text)
    if isinstance(value, str) and value.strip():
        inner, inner_repaired = _decode_text(value.strip())
        if isinstance(inner, dict):
            value, repaired = inner, inner_repaired
    if isinstance(value, dict):
        if _jsonable(value):
            return value, repaired
        return ArgumentsError("not strict JSON (NaN or Infinity)", _preview_raw(raw)), False
    if value is _NOT_DECODED:
        return ArgumentsError("not a JSON object", _preview_raw(raw)), False
    kinds = {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    kind = kinds.get(type(value), "null")
    return ArgumentsError(f"a JSON {kind}, not an object", _preview_raw(raw)), False


def schema_example(schema: Mapping[str, Any]) -> str:
    """A one-line JSON example of the required arguments of a tool (``{"code": "..."}``)."""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = schema.get("required")
    names = [n for n in required if isinstance(n, str)] if isinstance(required, list) else []
    placeholders = {"string": "...", "integer": 0, "number": 0, "boolean": True, "array": [], "object": {}}
    example: dict[str, Any] = {}
    for name in names:
        prop = properties.get(name)
        kind = prop.get("type") if isinstance(prop, Mapping) else None
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), None)
        example[name] = placeholders.get(kind, "...") if isinstance(kind, str) else "..."
    return json.dumps(example, ensure_ascii=False)


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
    match = _WHOLE_FENCE.match(code) if isinstance(code, str) else None
    if match is None:
        return None
    return {**arguments, "code": _code_text(match.group(1))}


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
        parsed, quoted = _parse_arguments(call.arguments)
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
                code, dropped, dropped_imports = repaired_snippet(code, functions)
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


def tool_message(call_id: str, content: str) -> Message:
    return Message(role="tool", content=content, tool_call_id=call_id)


# --------------------------------------------------------------------------------------------------
# Calls written as text


@dataclass(frozen=True)
class TextCalls:
    """Tool calls a model wrote in its reply text instead of ``tool_calls`` (see :func:`calls_in_text`)."""

    calls: tuple[RawToolCall, ...]
    prose: str | None
    """The text before the calls, kept as the reply's content (``None`` when there is none)."""
    kind: str
    """How they were written: ``fenced_json``, ``tool_call_tags`` or ``bare_json``."""
    repairs: tuple[tuple[str, ...], ...] = ()
    """Each call's repairs: how it was written, and ``code_quoted`` when its code was in backticks
    or triple quotes."""


_NAME_KEYS = ("name", "function", "tool", "tool_name")
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")
_NOT_ARGUMENTS = frozenset({*_NAME_KEYS, "type", "id"})
_TAG_OPEN = re.compile(r"<(tool_call|tool_calls|tools|function_call)>")
"""Qwen's ``<tool_call>`` and the tags other templates use (``<tools>``, ``<function_call>``)."""
_FENCE_OPEN = re.compile(r"[ \t]*```[ \t]*[A-Za-z0-9_+-]*[ \t]*(?:\n|\Z)")
_CALL_START = re.compile(r"^[ \t]*(?:[{\[]|```)|<(?:tool_call|tool_calls|tools|function_call)>", re.MULTILINE)
_MAX_STARTS = 200
"""Where the calls may begin, tried from the first: a reply with more such lines is prose."""


def _call_of(value: Any, names: Collection[str]) -> RawToolCall | None:
    """One call object: ``{"name", "arguments"}``, ``function`` or ``tool`` for ``name``,
    ``parameters`` for ``arguments``, OpenAI's ``{"function": {...}}``, or the arguments beside the
    name; ``None`` when it names no tool in ``names``."""
    if not isinstance(value, Mapping):
        return None
    nested = value.get("function")
    if isinstance(nested, Mapping):
        return _call_of(nested, names)
    name = next((value[key] for key in _NAME_KEYS if isinstance(value.get(key), str)), None)
    if name is None or name.strip() not in names:
        return None
    key = next((key for key in _ARGUMENT_KEYS if key in value), None)
    arguments = value[key] if key is not None else {k: v for k, v in value.items() if k not in _NOT_ARGUMENTS}
    return RawToolCall(id=None, name=name.strip(), arguments=arguments)


def _json_values(text: str) -> list[Any] | None:
    """Every JSON value in ``text``, one after another (separated by whitespace or commas)."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    position = 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if values and position < len(text) and text[position] in ",;":
            position += 1  # between two values only
            while position < len(text) and text[position].isspace():
                position += 1
            if position == len(text):
                return None
        if position == len(text):
            return values or None
        try:
            value, position = decoder.raw_decode(text, position)
        except (ValueError, RecursionError):
            return None
        values.append(value)


def _decoded_values(text: str) -> tuple[list[Any], bool] | None:
    """The values written in a call's text: JSON (one or several), after quoted code is repaired,
    or a Python literal; and whether quoted code had to be repaired."""
    values = _json_values(text)
    if values is not None:
        return values, False
    repaired = repair_code_literals(text)
    if repaired != text and (values := _json_values(repaired)) is not None:
        return values, True
    value = _python_literal(repaired)
    return None if value is _NOT_DECODED else ([value], repaired != text)


def _calls_in_values(values: list[Any], names: Collection[str]) -> list[RawToolCall] | None:
    """The calls the values hold (objects, lists of them, ``{"tool_calls": [...]}``), or ``None``
    when any of them is not a call to a tool in ``names``."""
    items: list[Any] = []
    for value in values:
        if isinstance(value, Mapping) and isinstance(value.get("tool_calls"), list):
            items.extend(value["tool_calls"])
        elif isinstance(value, list):
            items.extend(value)
        else:
            items.append(value)
    calls = [_call_of(item, names) for item in items]
    if not calls or any(call is None for call in calls):
        return None
    return [call for call in calls if call is not None]


_Unit = tuple[list[RawToolCall], bool, int]
"""The calls of one block, whether its quoted code was repaired, and where the block ends."""


def _doubled_braces(text: str) -> tuple[list[Any], bool] | None:
    """The value of ``{{...}}``: a call object written with its braces doubled, as in a template."""
    if not text.startswith("{{"):
        return None
    try:
        value, end = json.JSONDecoder().raw_decode(text, 1)
    except (ValueError, RecursionError):
        return None
    return ([value], False) if set(text[end:].strip()) <= {"}"} else None


def _body_calls(body: str, names: Collection[str], end: int) -> _Unit | None:
    text = body.strip()
    fence = _WHOLE_FENCE.match(text)
    if fence:  # ```json inside <tool_call> tags
        text = fence.group(1)
    decoded = (_decoded_values(text) or _doubled_braces(text)) if text else None
    if decoded is None:
        return None
    calls = _calls_in_values(decoded[0], names)
    return None if calls is None else (calls, decoded[1], end)


def _fenced_unit(text: str, start: int, names: Collection[str]) -> _Unit | None:
    """The calls of the fenced block at ``start``. The block may close at any later line that is
    only a fence: code inside it can hold fences of its own."""
    opening = _FENCE_OPEN.match(text, start)
    if opening is None:
        return None
    body_start = opening.end()
    closings = re.finditer(r"^[ \t]*```[ \t]*$", text[body_start:], re.MULTILINE)
    ends = [(body_start + m.start(), body_start + m.end()) for m in closings]
    ends.append((len(text), len(text)))  # unclosed: the model stopped before the fence
    for body_end, end in ends:
        unit = _body_calls(text[body_start:body_end], names, end)
        if unit is not None:
            return unit
    return None


def _tag_unit(text: str, start: int, names: Collection[str]) -> _Unit | None:
    """The calls of the ``<tool_call>`` block at ``start`` (its closing tag may be missing at the end)."""
    opening = _TAG_OPEN.match(text, start)
    if opening is None:
        return None
    body_start, closing = opening.end(), f"</{opening.group(1)}>"
    closings = [m.start() for m in re.finditer(re.escape(closing), text[body_start:])]
    ends = [(body_start + at, body_start + at + len(closing)) for at in closings]
    ends.append((len(text), len(text)))  # the closing tag may be missing at the end
    for body_end, end in ends:  # a string inside the call may hold the closing tag
        unit = _body_calls(text[body_start:body_end], names, end)
        if unit is not None:
            return unit
    return None


def _calls_to_end(
    text: str, start: int, names: Collection[str]
) -> list[tuple[RawToolCall, tuple[str, ...]]] | None:
    """The calls from ``start`` to the end of ``text``, each with the repairs it needed, when
    nothing but calls and whitespace follows ``start``."""
    found: list[tuple[RawToolCall, tuple[str, ...]]] = []
    position = start
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position == len(text):
            return found or None
        if _TAG_OPEN.match(text, position):
            unit, kind = _tag_unit(text, position, names), "tool_call_tags"
        elif text.startswith("```", position):
            unit, kind = _fenced_unit(text, position, names), "fenced_json"
        else:  # bare JSON runs to the end of the reply
            unit, kind = _body_calls(text[position:], names, len(text)), "bare_json"
        if unit is None:
            return None
        calls, quoted, position = unit
        repairs = (kind, "code_quoted") if quoted else (kind,)
        found.extend((call, repairs) for call in calls)


def _blocks_anywhere(
    text: str, starts: Sequence[int], names: Collection[str]
) -> tuple[int, list[tuple[RawToolCall, tuple[str, ...]]]] | None:
    """The calls of every fenced or tagged call block in ``text``, wherever it stands, and where
    the first begins: small models announce a call, write it, then say what it will return."""
    found: list[tuple[RawToolCall, tuple[str, ...]]] = []
    first, position = -1, 0
    for start in starts:
        if start < position:
            continue  # inside a block already read
        at = start + len(text[start:]) - len(text[start:].lstrip(" \t"))
        if _TAG_OPEN.match(text, at):
            unit, kind = _tag_unit(text, at, names), "tool_call_tags"
        elif text.startswith("```", at):
            unit, kind = _fenced_unit(text, at, names), "fenced_json"
        else:
            continue
        if unit is None:
            continue
        calls, quoted, position = unit
        first = start if first < 0 else first
        found.extend((call, (kind, "code_quoted") if quoted else (kind,)) for call in calls)
    return (first, found) if found else None


def calls_in_text(content: str | None, names: Collection[str]) -> TextCalls | None:
    """The tool calls a reply without ``tool_calls`` wrote as text, or ``None`` when it is prose.

    Recognised: a fenced JSON block, ``<tool_call>...</tool_call>`` tags (or ``<tools>``,
    ``<function_call>``; the closing tag may be missing at the end) and a bare JSON object, one
    call or several; each call ``{"name", "arguments"}``, with ``function`` or ``tool`` for
    ``name``, ``parameters`` for ``arguments``, arguments as an object or a JSON string, or beside
    the name, braces doubled or not; ``code`` may be in backticks or triple quotes. Every call
    must name a tool in ``names``. Text may come before the calls (it stays the reply's content);
    fenced and tagged calls may also have text after them (small models say what the call will
    do), while bare JSON followed by more text is prose.
    """
    if not content or not names:
        return None
    starts = [match.start() for match in _CALL_START.finditer(content)][:_MAX_STARTS]
    found: list[tuple[RawToolCall, tuple[str, ...]]] | None = None
    for start in starts:
        found = _calls_to_end(content, start, names)
        if found is not None:
            break
    else:
        anywhere = _blocks_anywhere(content, starts, names)
        if anywhere is None:
            return None
        start, found = anywhere
    prose = content[:start].strip()
    return TextCalls(
        calls=tuple(call for call, _ in found),
        prose=prose or None,
        kind=found[0][1][0],
        repairs=tuple(repairs for _, repairs in found),
    )


def _calls_a_function(code: str, functions: Collection[str]) -> bool:
    """Whether ``code`` calls one of ``functions`` (a definition of one is not a call)."""
    try:
        tree = ast.parse(code, SNIPPET_FILE)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        pattern = rf"(?<!def )\b(?:{'|'.join(map(re.escape, functions))})\s*\("
        return bool(functions) and re.search(pattern, code) is not None
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions
        for node in ast.walk(tree)
    )


def program_in_text(content: str | None, functions: Collection[str], code_tool: str) -> TextCalls | None:
    """A reply's ```python program as a call of ``code_tool``, when the program calls one of the
    catalog's ``functions`` (a model that wrote the snippet instead of calling the tool with it);
    ``None`` when it has no such program (example code stays prose)."""
    code = python_code(content)
    if code is None or not _calls_a_function(code, functions):
        return None
    first = _PYTHON_BLOCK.search(content or "")
    prose = (content or "")[: first.start() if first else 0].strip()
    return TextCalls(
        calls=(RawToolCall(id=None, name=code_tool, arguments={"code": code}),),
        prose=prose or None,
        kind="python_block",
        repairs=(("python_block",),),
    )


def drop_pasted_stubs(code: str, functions: Collection[str]) -> tuple[str, tuple[str, ...]]:
    """``code`` without the top-level definitions of catalog ``functions`` that a model pasted from
    the stubs (they are defined already), and the names dropped. Unchanged when nothing else but
    imports would be left: the engine's refusal then says to call them."""
    try:
        tree = ast.parse(code, SNIPPET_FILE)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return _drop_unparsable_stubs(code, functions)
    pasted = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in functions
    ]
    imports = ast.Import | ast.ImportFrom
    rest = [node for node in tree.body if node not in pasted and not isinstance(node, imports)]
    if not pasted or not rest:
        return code, ()
    lines = code.splitlines(keepends=True)
    dropped_lines: set[int] = set()
    for node in pasted:
        first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
        dropped_lines.update(range(first - 1, node.end_lineno or node.lineno))
    kept = "".join(line for number, line in enumerate(lines) if number not in dropped_lines)
    return kept.strip("\n"), tuple(dict.fromkeys(node.name for node in pasted))


def repaired_snippet(code: str, functions: Collection[str]) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """``code`` as the backend hands it to the engine: without pasted catalog stubs and unused
    imports of missing modules; and the functions and modules dropped."""
    code, dropped = drop_pasted_stubs(code, functions)
    code, dropped_imports = drop_missing_imports(code)
    return code, dropped, dropped_imports


def drop_missing_imports(code: str) -> tuple[str, tuple[str, ...]]:
    """``code`` without its top-level imports of modules the sandbox lacks whose names it never
    uses (a small model's habitual ``import requests`` above a call of the catalog's ``http_get``),
    and those modules. Unchanged when it does not parse or nothing but imports would be left."""
    try:
        tree = ast.parse(code, SNIPPET_FILE)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return code, ()
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    missing: list[ast.Import | ast.ImportFrom] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
            names = [alias.asname or alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
            names = [alias.asname or alias.name for alias in node.names]
        else:
            continue
        lacking = all(module.split(".")[0] not in IMPORTABLE_MODULES for module in modules)
        if lacking and not used.intersection(names):
            missing.append(node)
    if not missing or len(missing) == len(tree.body):
        return code, ()
    lines = code.splitlines(keepends=True)
    gone = {number for node in missing for number in range(node.lineno - 1, node.end_lineno or node.lineno)}
    kept = "".join(line for number, line in enumerate(lines) if number not in gone)
    dropped = [
        alias.name if isinstance(node, ast.Import) else node.module or ""
        for node in missing
        for alias in node.names
    ]
    return kept.strip("\n"), tuple(dict.fromkeys(dropped))


_DEF_LINE = re.compile(r"(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*\(")


def _drop_unparsable_stubs(code: str, functions: Collection[str]) -> tuple[str, tuple[str, ...]]:
    """:func:`drop_pasted_stubs` for code that does not parse, as when a small model pastes a stub's
    ``def`` line with a comment for its body: each top-level ``def`` of a catalog function goes
    with the indented lines after it, and the rest is kept when it then parses."""
    kept: list[str] = []
    dropped: list[str] = []
    inside = False
    for line in code.splitlines(keepends=True):
        match = _DEF_LINE.match(line)
        if match is not None and match.group(1) in functions:
            inside = True
            dropped.append(match.group(1))
        elif inside and (not line.strip() or line[0] in " \t)"):
            continue  # the pasted definition's signature and body
        else:
            inside = False
            kept.append(line)
    rest = "".join(kept).strip("\n")
    if not dropped or not rest.strip():
        return code, ()
    try:
        tree = ast.parse(rest, SNIPPET_FILE)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return code, ()
    if all(isinstance(node, ast.Import | ast.ImportFrom) for node in tree.body):
        return code, ()
    return rest, tuple(dict.fromkeys(dropped))


def program_key(code: str) -> str:
    """What two programs that differ only in layout, quotes, comments or imports have in common."""
    try:
        tree = ast.parse(code, SNIPPET_FILE)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return code.strip()
    tree.body = [node for node in tree.body if not isinstance(node, ast.Import | ast.ImportFrom)]
    return ast.dump(tree)


# --------------------------------------------------------------------------------------------------
# What a run ends with, and what a failed request says


_PYTHON_BLOCK = re.compile(r"```(?:python3?|py)[ \t]*\n(.*?)```", re.S)


def _is_statement(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def python_code(content: str | None) -> str | None:
    """The code of a reply's ```python blocks, in order, joined; ``None`` when it has none with a
    statement in it (a block of comments only, such as a result copied back, is no program)."""
    blocks = [block.strip("\n") for block in _PYTHON_BLOCK.findall(content or "")]
    blocks = [block for block in blocks if any(_is_statement(line) for line in block.splitlines())]
    return "\n".join(blocks) if blocks else None


def text_protocol_prompt(system_prompt: str, code_tool: ToolDefinition) -> str:
    """The system prompt of the text protocol: no tools are offered, so the code tool's own
    description (its rules and functions) says what a program may call."""
    return (
        f"{system_prompt}\n\n"
        "To use the functions below, reply with one Python program in a ```python block and "
        "nothing after it; it runs, and its result comes back to you in the next message. "
        "Call the functions with await and keyword arguments. When you have the answer, reply "
        "in plain text without a code block.\n\n"
        f"{code_tool.description}"
    )


def code_result_text(result: str, is_error: bool) -> str:
    """How a text-protocol program's result comes back to the model (as a user message)."""
    return f"{'Error from' if is_error else 'Result of'} your program:\n{result}"


UnfinishedReply = Literal["empty", "code", "cut_short"]
"""Why a reply is no answer (``unfinished_reply``): it has no text; it shows a program instead of
answering from the turn's tool results; it ends at a colon, before what it announced."""

_FENCED = re.compile(r"```([\w+-]*)[ \t]*\n(.*?)```", re.S)
_PROGRAM_NODES = (ast.Call, ast.Assign, ast.AugAssign, ast.Import, ast.ImportFrom, ast.For,
                  ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.Await)  # fmt: skip


def _is_program(code: str) -> bool:
    """Whether ``code`` is Python that does something (a value shown in a fence, such as a dict or
    a list of file names, is no program)."""
    try:
        tree = ast.parse(code, SNIPPET_FILE)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return any(isinstance(node, _PROGRAM_NODES) for node in ast.walk(tree))


def _shows_program(reply: str) -> bool:
    """Whether ``reply`` has a Python (or untagged) fenced block that is a program."""
    fenced = _FENCED.findall(reply)
    return any(lang in ("", "python", "python3", "py") and _is_program(code) for lang, code in fenced)


def unfinished_reply(reply: str, *, code_is_no_answer: bool) -> UnfinishedReply | None:
    """Why ``reply`` (stripped) is no answer a user can read, or ``None`` when it is one. A program
    in a fenced block counts only with ``code_is_no_answer``: the turn ran a tool, so the answer
    was to come from its results (a user who asked for code gets it), and the reply's code does
    not run (it does in the text protocol)."""
    if not reply:
        return "empty"
    if code_is_no_answer and _shows_program(reply):
        return "code"
    if reply.endswith(":"):
        return "cut_short"
    return None


_UNFINISHED_OPENINGS: dict[UnfinishedReply, str] = {
    "empty": "Your reply was empty.",
    "code": "Your reply shows a program instead of an answer, and a program in a reply is not run.",
    "cut_short": "Your reply stopped at a colon, before what it announced.",
}


def unfinished_reply_nudge(why: UnfinishedReply, code_tool: str | None, question: str, *,
                           text_protocol: bool = False, after_failure: bool = False) -> str:  # fmt: skip
    """The user message after an unfinished reply with rounds left: the question again, since a
    small model that went astray after a tool result has often lost it, and how to go on.
    ``after_failure``: the last call failed, so there is nothing to answer from yet (a model told
    to answer from the results above then invents one)."""
    failed = "tool call" if code_tool is None else "program"
    opening = _UNFINISHED_OPENINGS[why] + (
        f" Your last {failed} failed (the error is above)." if after_failure else ""
    )
    asked = f"{opening} The question was: {one_line(question, LAST_RESULT_PREVIEW_CHARS)}\n"
    if after_failure:
        if code_tool is None:
            retry = "Call the tool again with corrected arguments"
        elif text_protocol:
            retry = "Reply with the corrected ```python program"
        else:
            retry = f"Call {code_tool} with the corrected program"
        return f"{asked}{retry}, or, if it cannot be fixed, say what went wrong."
    if code_tool is None:
        more = "call a tool"
    else:
        more = "reply with a ```python program" if text_protocol else f"call {code_tool}"
    return f"{asked}Answer it from the results above, in plain words, or {more} if you need more."


def no_answer_text(last_result: str | None) -> str:
    """The reply when the model gave none: never empty, and with the last tool result if there was one."""
    if last_result is None or not last_result.strip():
        return NO_ANSWER_TEXT
    shown = one_line(last_result, LAST_RESULT_PREVIEW_CHARS)
    return f"{NO_ANSWER_TEXT[:-1]}; the last tool result was: {shown})"


@dataclass(frozen=True)
class ContextOverflow:
    """A request longer than the model's context, with the sizes when the server said them."""

    prompt_tokens: int | None = None
    context_tokens: int | None = None

    def sizes(self) -> str:
        if self.prompt_tokens is not None and self.context_tokens is not None:
            return f"{count(self.prompt_tokens)} tokens for a context of {count(self.context_tokens)}"
        if self.context_tokens is not None:
            return f"the context holds {count(self.context_tokens)} tokens"
        if self.prompt_tokens is not None:
            return f"{count(self.prompt_tokens)} tokens"
        return ""


_OVERFLOW_MARKERS = (
    "exceed_context_size_error",
    "exceeds the available context size",
    "context_length_exceeded",
    "maximum context length",
    "context window",
    "too many tokens",
)
_PROMPT_SIZES = (
    re.compile(r"request \((\d+) tokens\)"),
    re.compile(r"resulted in (\d+) tokens"),
    re.compile(r"you requested (\d+) tokens"),
    re.compile(r"prompt is too long: (\d+) tokens"),
)
_CONTEXT_SIZES = (
    re.compile(r"context size \((\d+) tokens\)"),
    re.compile(r"maximum context length is (\d+) tokens"),
    re.compile(r"(\d+) tokens? > \d+ maximum"),
)


def _first_number(patterns: Sequence[re.Pattern[str]], text: str) -> int | None:
    for pattern in patterns:
        match = pattern.search(text)
        if match:
            return int(match.group(1))
    return None


def context_overflow(status: int, body: bytes | str) -> ContextOverflow | None:
    """Whether an HTTP error says the request did not fit the model's context: llama.cpp's
    ``exceed_context_size_error`` (with ``n_prompt_tokens`` and ``n_ctx``), OpenAI's
    ``context_length_exceeded``, vLLM's "maximum context length"."""
    if status not in (400, 413, 422):
        return None
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    if not any(marker in text.lower() for marker in _OVERFLOW_MARKERS):
        return None
    prompt = _first_number(_PROMPT_SIZES, text)
    context = _first_number(_CONTEXT_SIZES, text)
    try:
        decoded = json.loads(text)
    except (ValueError, RecursionError):
        decoded = None
    error = decoded.get("error") if isinstance(decoded, dict) else None
    if isinstance(error, dict):
        numbers = {k: v for k, v in error.items() if isinstance(v, int) and not isinstance(v, bool)}
        prompt = numbers.get("n_prompt_tokens", prompt)
        context = numbers.get("n_ctx", context)
    return ContextOverflow(prompt, context)
