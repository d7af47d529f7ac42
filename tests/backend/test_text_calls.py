"""What real servers and small models send instead of proper tool calls, as pure wire functions:
calls written in the reply text (fenced JSON, ``<tool_call>`` tags, bare JSON, in every key
spelling), code in backticks or triple quotes, a catalog function called by its own name, the cap
on calls per reply; and prose that must stay prose. Hypothesis draws the shapes."""

from __future__ import annotations

import ast
import json
import string
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from asyncai.backend import NO_ANSWER_TEXT
from asyncai.backend.calls import call_snippet, prepare_calls, ran_as_note
from asyncai.backend.decoding import parse_arguments
from asyncai.backend.overflow import context_overflow
from asyncai.backend.text_calls import calls_in_text
from asyncai.backend.unfinished import no_answer_text
from asyncai.backend.wire import RawToolCall
from asyncai.tools.types import ToolDefinition

CATALOG = ("search_files", "create_entities", "list_directory")
RUN_CODE = ToolDefinition(
    name="run_code",
    description="Run Python.",
    input_schema={"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]},
    callables=CATALOG,
)
TOOLS = {RUN_CODE.name: RUN_CODE}
NAMES = frozenset({"run_code", *CATALOG})

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
arguments = st.dictionaries(
    st.sampled_from(["path", "pattern", "code", "limit", "query"]), json_values, max_size=4
)
calls = st.lists(st.tuples(st.sampled_from(sorted(NAMES)), arguments), min_size=1, max_size=3)
# Text before the calls: no line of it may start a call (no braces, brackets, backticks or tags).
lead_ins = st.text(alphabet=string.ascii_letters + string.digits + " .,:;!?'-\n", max_size=60)
explanations = st.text(alphabet=string.ascii_letters + " .,!?", min_size=1, max_size=40).filter(
    lambda text: any(c.isalpha() for c in text)
)


@st.composite
def call_object(draw: st.DrawFn, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """One call as some model or server writes it."""
    name_key = draw(st.sampled_from(["name", "function", "tool"]))
    style = draw(st.sampled_from(["arguments", "parameters", "string", "openai", "beside"]))
    if style == "openai":
        return {"type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
    if style == "beside":
        return {name_key: name, **args}
    if style == "string":
        return {name_key: name, "arguments": json.dumps(args)}
    return {name_key: name, style: args}


def dump(draw: st.DrawFn, value: Any) -> str:
    return json.dumps(value, indent=draw(st.sampled_from([None, 2])), ensure_ascii=draw(st.booleans()))


@st.composite
def written_calls(draw: st.DrawFn) -> tuple[str, list[tuple[str, dict[str, Any]]], str, str | None]:
    """``(reply text, the calls, the kind, the prose before them)``."""
    wanted = draw(calls)
    objects = [draw(call_object(name, args)) for name, args in wanted]
    wrapping = draw(st.sampled_from(["fenced", "tags", "tags_unclosed", "bare", "bare_list"]))
    if wrapping == "fenced":
        lang = draw(st.sampled_from(["json", "", "JSON", "tool_call"]))
        body = "\n\n".join(f"```{lang}\n{dump(draw, obj)}\n```" for obj in objects)
        kind = "fenced_json"
    elif wrapping.startswith("tags"):
        blocks = [f"<tool_call>\n{dump(draw, obj)}\n</tool_call>" for obj in objects]
        if wrapping == "tags_unclosed":  # the model stopped before closing the last tag
            blocks[-1] = blocks[-1].removesuffix("</tool_call>")
        body = "\n".join(blocks)
        kind = "tool_call_tags"
    elif wrapping == "bare_list":
        body, kind = dump(draw, objects), "bare_json"
    else:
        body, kind = "\n".join(dump(draw, obj) for obj in objects), "bare_json"
    lead = draw(lead_ins)
    text = f"{lead}\n{body}" if lead else body
    return text, wanted, kind, lead.strip() or None


@given(written_calls())
def test_calls_written_as_text_are_recognised(case: tuple[str, list[Any], str, str | None]) -> None:
    text, wanted, kind, prose = case
    found = calls_in_text(text, NAMES)
    assert found is not None, text
    assert (found.kind, found.prose) == (kind, prose)
    assert [(c.name, parse_arguments(c.arguments)) for c in found.calls] == wanted
    assert all(repairs == (kind,) for repairs in found.repairs)


@given(written_calls(), explanations)
def test_fenced_or_tagged_calls_may_be_followed_by_words(
    case: tuple[str, list[Any], str, str | None], more: str
) -> None:
    """Fenced and closed-tag calls are calls with an explanation after them; bare JSON (and an
    unclosed tag, which runs to the end) followed by words is prose."""
    text, wanted, kind, prose = case
    found = calls_in_text(f"{text}\n{more}", NAMES)
    if kind == "tool_call_tags" and not text.rstrip().endswith(">"):
        wanted = wanted[:-1]  # the unclosed last tag takes the words in: only the closed ones are calls
    if kind == "bare_json" or not wanted:
        assert found is None, text
        return
    assert found is not None, text
    assert (found.kind, found.prose) == (kind, prose)
    assert [(c.name, parse_arguments(c.arguments)) for c in found.calls] == wanted


@given(written_calls())
def test_json_naming_no_offered_tool_is_prose(case: tuple[str, list[Any], str, str | None]) -> None:
    text = case[0]
    for name in sorted(NAMES, key=len, reverse=True):
        text = text.replace(f'"{name}"', '"kubectl"')
    assert calls_in_text(text, NAMES) is None, text
    assert calls_in_text(case[0], {"run_code"} - {n for n, _ in case[1]}) is None


@given(st.text())
def test_any_text_without_a_call_is_prose(text: str) -> None:
    assert calls_in_text(text, NAMES) is None


@given(st.dictionaries(st.sampled_from(["answer", "count", "files", "total"]), json_values, min_size=1))
def test_json_that_is_not_a_call_is_prose(value: dict[str, Any]) -> None:
    assert calls_in_text(json.dumps(value), NAMES) is None
    assert calls_in_text(f"```json\n{json.dumps(value, indent=2)}\n```", NAMES) is None


def test_prose_around_a_fenced_call_is_kept_before_it() -> None:
    text = (
        "Here's the plan:\n1. list the files\n"
        '```json\n{"name": "list_directory", "arguments": {"path": "/d"}}\n```\n'
        "This returns the names.\n```python\nprint('an example, not a call')\n```"
    )
    found = calls_in_text(text, NAMES)
    assert found is not None and found.prose == "Here's the plan:\n1. list the files"
    assert [(c.name, c.arguments) for c in found.calls] == [("list_directory", {"path": "/d"})]


@pytest.mark.parametrize(
    "text",
    [
        '<tools>\n{"name": "list_directory", "arguments": {"path": "/d"}}\n</tools>',
        '<function_call>{"name": "list_directory", "arguments": {"path": "/d"}}</function_call>',
        '{{"name": "list_directory", "arguments": {"path": "/d"}}}',
        '{{"name": "list_directory", "arguments": {"path": "/d"}}}}',
        '<tool_call>\n{{"name": "list_directory", "arguments": {"path": "/d"}}}\n</tool_call>',
    ],
    ids=[
        "tools-tags",
        "function-call-tags",
        "doubled-braces",
        "doubled-opening-only-closed-twice",
        "tags-doubled",
    ],
)
def test_other_tags_and_doubled_braces_are_calls(text: str) -> None:
    found = calls_in_text(text, NAMES)
    assert found is not None, text
    assert [(c.name, c.arguments) for c in found.calls] == [("list_directory", {"path": "/d"})]


# Code without backticks, not ending in a quote, not indented as a whole, no trailing blanks: the
# shape ``_code_text`` leaves as it is.
code_line = st.text(alphabet=string.ascii_letters + string.digits + " ()=+-*/.,:'\"\\[]{}#_", max_size=30)
codes = (
    st.lists(code_line.map(str.rstrip), min_size=1, max_size=5)
    .map("\n".join)
    .filter(
        lambda code: (
            code.strip() and not code[0].isspace() and code[-1] not in "'\"" and code == code.strip("\n")
        )
    )
)


def quoted(style: str, code: str) -> str:
    if style == "fence":
        return f"```python\n{code}\n```"
    if style == "triple_double":
        return f'"""\n{code}\n"""'
    if style == "triple_single":
        return f"'''\n{code}\n'''"
    return f"`{code}`"


def _quotable(style: str, code: str) -> bool:
    if style == "triple_double":
        return '"""' not in code
    if style == "triple_single":
        return "'''" not in code
    if style == "tick":
        return "\n" not in code
    return True


@given(
    codes,
    st.sampled_from(["fence", "triple_double", "triple_single", "tick"]),
    st.sampled_from(["fenced", "tags", "bare"]),
)
def test_code_in_backticks_or_triple_quotes(code: str, style: str, wrapping: str) -> None:
    if not _quotable(style, code):
        return
    call = '{"name": "run_code", "arguments": {"code": ' + quoted(style, code) + "}}"
    text = {"fenced": f"```json\n{call}\n```", "tags": f"<tool_call>\n{call}\n</tool_call>", "bare": call}[
        wrapping
    ]
    found = calls_in_text(text, NAMES)
    assert found is not None, text
    assert [c.arguments for c in found.calls] == [{"code": code}]
    assert found.repairs == ((found.kind, "code_quoted"),)
    # In a proper tool call the arguments string may hold the same.
    [prepared] = prepare_calls([RawToolCall("c", "run_code", '{"code": ' + quoted(style, code) + "}")], TOOLS)
    assert (prepared.arguments, prepared.repairs) == ({"code": code}, ("code_quoted",))


@given(codes)
def test_code_fenced_inside_a_json_string_is_unfenced(code: str) -> None:
    raw = json.dumps({"code": f"```python\n{code}\n```"})
    [prepared] = prepare_calls([RawToolCall("c", "run_code", raw)], TOOLS)
    assert (prepared.arguments, prepared.repairs) == ({"code": code}, ("code_quoted",))


def test_indented_triple_quoted_code_is_dedented_and_keeps_its_escapes() -> None:
    text = '```json\n{"name": "run_code", "arguments": {"code": """\n    x = "a\\nb"\n    x\n"""}}\n```'
    found = calls_in_text(text, NAMES)
    assert found is not None and found.calls[0].arguments == {"code": 'x = "a\\nb"\nx'}


@given(st.dictionaries(st.text(max_size=8), json_values, max_size=5))
def test_call_snippet_passes_exactly_the_arguments(args: dict[str, Any]) -> None:
    snippet = call_snippet("search_files", args)
    tree = ast.parse(snippet, mode="eval").body
    assert isinstance(tree, ast.Await) and isinstance(tree.value, ast.Call)
    assert isinstance(tree.value.func, ast.Name) and tree.value.func.id == "search_files"
    passed: dict[str, Any] = {}
    for item in tree.value.keywords:
        value = ast.literal_eval(item.value)
        if item.arg is None:
            passed.update(value)
        else:
            passed[item.arg] = value
    assert passed == args
    assert json.dumps(passed, sort_keys=True) == json.dumps(args, sort_keys=True)


def test_call_snippet_is_written_as_keyword_arguments() -> None:
    snippet = call_snippet("search_files", {"path": "/data", "pattern": "*.txt"})
    assert snippet == "await search_files(path='/data', pattern='*.txt')"
    assert (
        call_snippet("f", {"from": 1, "a-b": None, "ok": True})
        == "await f(ok=True, **{'from': 1, 'a-b': None})"
    )


def test_a_catalog_function_called_by_its_own_name_becomes_a_snippet() -> None:
    calls = [
        RawToolCall("a", "search_files", '{"path": "/data", "pattern": "*.txt"}'),
        RawToolCall("b", "list_directory", ""),
        RawToolCall("c", "search_files", "path=/data"),
        RawToolCall("d", "kubectl", "{}"),
    ]
    found, empty, bad, unknown = prepare_calls(calls, TOOLS)
    snippet = "await search_files(path='/data', pattern='*.txt')"
    assert (found.name, found.arguments, found.ran_as, found.repairs) == (
        "run_code",
        {"code": snippet},
        snippet,
        ("catalog_name",),
    )
    assert found.arguments_json == json.dumps({"code": snippet}, separators=(",", ":"))
    assert ran_as_note(snippet) == f"(ran as run_code: {snippet})"
    assert (empty.name, empty.arguments) == ("run_code", {"code": "await list_directory()"})
    assert (bad.name, bad.arguments_json) == ("search_files", "{}")  # kept as the model wrote it
    assert bad.error == (
        "error: the arguments for search_files were not a JSON object: path=/data. "
        'Call run_code with Python code instead: {"code": "await search_files(...)"}.'
    )
    assert unknown.error == (
        "error: unknown tool 'kubectl'. Available tools: run_code. "
        'Call run_code with Python code: {"code": "..."}.'
    )


def test_an_offered_tool_keeps_its_name_over_a_catalog_function() -> None:
    echo = ToolDefinition("search_files", "", {"type": "object"})
    [call] = prepare_calls([RawToolCall("a", "search_files", "{}")], {**TOOLS, "search_files": echo})
    assert (call.name, call.ran_as) == ("search_files", None)


def test_calls_past_the_cap_are_not_run() -> None:
    calls = [RawToolCall(None, "run_code", '{"code": "1"}') for _ in range(20)]
    prepared = prepare_calls(calls, TOOLS, max_calls=16)
    assert [p.ok for p in prepared] == [True] * 16 + [False] * 4
    assert prepared[16].error == (
        "error: not run: a reply may make at most 16 tool calls, and this was call 17 of 20. "
        "Do repeated work in one run_code snippet, with a loop."
    )
    assert len({p.id for p in prepared}) == 20  # each still gets its own id and result


@pytest.mark.parametrize(
    ("status", "body", "sizes"),
    [
        (
            400,
            '{"error":{"code":400,"message":"request (13392 tokens) exceeds the available context size '
            '(8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":13392,'
            '"n_ctx":8192}}',
            (13392, 8192),
        ),
        (
            400,
            '{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it",'
            '"type":"exceed_context_size_error"}}',
            (None, None),
        ),
        (
            400,
            '{"error":{"message":"This model\'s maximum context length is 8192 tokens. However, your messages '
            'resulted in 9000 tokens. Please reduce the length of the messages.","type":"invalid_request_error",'
            '"param":"messages","code":"context_length_exceeded"}}',
            (9000, 8192),
        ),
        (
            400,
            '{"object":"error","message":"This model\'s maximum context length is 4096 tokens. However, you '
            'requested 4500 tokens (4000 in the messages, 500 in the completion).","type":"BadRequestError"}',
            (4500, 4096),
        ),
    ],
)
def test_context_overflow_is_recognised_with_its_sizes(
    status: int, body: str, sizes: tuple[Any, Any]
) -> None:
    overflow = context_overflow(status, body.encode())
    assert overflow is not None
    assert (overflow.prompt_tokens, overflow.context_tokens) == sizes


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (400, '{"error": {"message": "tools are not supported by this model"}}'),
        (500, "context window exceeded"),
    ],
)
def test_other_errors_are_no_context_overflow(status: int, body: str) -> None:
    assert context_overflow(status, body) is None


def test_no_answer_text_is_never_empty_and_shows_the_last_result() -> None:
    assert no_answer_text(None) == NO_ANSWER_TEXT
    assert no_answer_text("  ") == NO_ANSWER_TEXT
    text = no_answer_text("line one\nline two " + "x" * 1000)
    assert text.startswith("(no answer was produced: the model returned no text; the last tool result was: ")
    assert "line one line two" in text and "\n" not in text and len(text) < 700
