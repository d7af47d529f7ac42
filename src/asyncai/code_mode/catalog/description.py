"""The ``run_code`` description: sandbox rules, the return contract and the catalog, within a budget
of characters that counts every part of it.

While the rules and every stub fit the budget, the description is all of them (exactly what it was
before budgets existed); over it, a compact index replaces the stubs and says how to search and
describe the rest from a snippet. A budget so small that the rules would take half of it (a client
that cuts descriptions: Claude Code shows 2,048 characters) gets the short form: the catalog first,
as full as fits (stubs, one line a function, or an index led by ``search_tools``), then the few
rules that matter. Pure and byte-stable for a tool set.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from asyncai.code_mode.catalog.entries import callable_tools
from asyncai.code_mode.catalog.index import how_to_find, index_line, render_index
from asyncai.code_mode.catalog.resources import RESOURCE_FUNCTIONS
from asyncai.code_mode.catalog.search import summary
from asyncai.code_mode.catalog.stubs import (
    RUN_CODE,
    RUN_CODE_INPUT_SCHEMA,
    render_catalog,
    render_stub,
    sanitize_names,
    signature_line,
)
from asyncai.code_mode.engine.contract import MAX_RESULT_CHARS, NO_OUTPUT_TEXT
from asyncai.humanize import count
from asyncai.tools.types import ToolDefinition

DEFAULT_CATALOG_BUDGET: Final = 16_000
CLIENT_CATALOG_BUDGET: Final = 2_048
"""What Claude Code shows of an MCP tool's description (and of a server's instructions): the rest is
cut. ``serve-mcp``'s budget."""
SKILLS_LISTED_CHARS: Final = 2_000
"""How much of the full description the list of skills may take; ``skills()`` finds the rest."""

_RULES: Final = """\
Run Python in a sandbox (Monty, a subset of Python 3) that calls the async functions listed below; \
each one runs a tool.

How to work:
- Plan first, then write ONE complete program that fetches, filters and returns the answer. \
Inspect data shapes only after a failure.
- Call functions with keyword arguments only, and always await them: x = await f(a=1).
- Parallel calls: a, b = await asyncio.gather(f(a=1), g(b=2)). gather takes no keyword arguments \
(no return_exceptions).
- A failing call raises RuntimeError; catch it with try/except to carry on.
- asyncio, json and re are already imported.
- The functions below are already defined: call them, never define them or assign to their names.
- Helpers (a variable of the same name hides one): items(x) is the list in a result (x itself, \
x["items"], or a dict's only list); names(x) is the metadata.name (else name, else id) of each element; \
dig(obj, *path, default=None) reads a nested value, path segments dotted or split: \
dig(pod, "status.phase"), dig(i, "spec", "name"); count_by(xs, *path) is {{value: count}} of the value \
at path; to_json(x, indent=None) is json.dumps with str() for unknown types.
- A function's value is its tool's structured result when it has one (the shape in Returns:), \
else its text parsed as JSON when it parses, else the text as a str. Images, audio and embedded \
resources are dicts: {{"type": "image", "mime_type": ..., "data": "<base64>"}}; a result of several \
parts is a list. A function marked -> Any has no output schema: inspect a small sample before \
relying on its shape.
- Variables persist across run_code calls in this conversation; restart: true clears them. Only \
what run_code returned stays in the chat history: keep large data in variables and reuse it instead \
of fetching again.
- No filesystem, environment, network or subprocess access: the functions below are the only way out.
- Not supported: class inheritance (so no custom exception classes), method decorators such as \
@property, generators/yield, del, globals(); modules such as operator, io, textwrap and statistics \
are missing. Use dicts or dataclasses, plain functions, built-in exceptions, and lambdas for key=.

Result:
- The last expression is the result: a str is returned as-is, anything else as compact JSON. \
A snippet that ends with an assignment (x = ...) returns the value assigned. If the result is None \
you get "{no_output}".
- print() output is returned too: {{"output": "<printed>", "result": <last expression>}}.
- Results over {max_result} characters are rejected: filter, count or select fields in Python \
and return only what answers the question.

Functions:
"""


_SHORT_INTRO: Final = """\
Run a Python program (Monty, a subset of Python) in a sandbox whose only way out is these async \
functions, each a tool. Fetch, filter and return only what the answer needs."""

_SHORT_RULES: Final = """\
Call functions with keyword arguments and await them: x = await f(a=1); at once: a, b = await \
asyncio.gather(f(a=1), g(b=2)). A failed call raises RuntimeError. The last expression is the \
result (a str as it is, else JSON; over {max_result} characters is refused: filter, count or pick \
fields first); print() output comes back too. Variables persist across run_code calls (restart: \
true clears them). asyncio, json and re are imported; no class inheritance, generators, del or I/O. \
describe_tool(name=...) gives a function's full documentation."""

_SHORT_INDEX: Final = """\
{total} functions, {listed}: find the others with await search_tools(query="what it does") (a list \
of {{"name", "summary", "signature"}}, best first), then call them by name."""
_SHORT_INDEX_ALL: Final = "{total} functions (describe_tool gives their types):"
_OWN_FUNCTIONS: Final = "asyncai's own functions (keyword arguments, awaited):"

_CLIENT_INSTRUCTIONS: Final = """\
run_code runs a Python program in a sandbox (Monty, a subset of Python 3) whose only way out is \
the async functions its description lists, one per tool of the MCP servers asyncai wraps. Write \
one program that fetches, filters and returns only what the answer needs: large results stay in \
the sandbox, and only the program's value comes back.
- Call functions with keyword arguments and await them: x = await f(a=1). Run independent calls \
at once: a, b = await asyncio.gather(f(a=1), g(b=2)) (gather takes no keyword arguments).
- A function's value is its tool's structured result when it has one, else its text parsed as \
JSON when it parses, else the text. A failed call raises RuntimeError: catch it to carry on.
- Helpers: items(x) is the list in a result; names(x) the names of its elements; \
dig(obj, "a.b", default=None) reads a nested value; count_by(xs, "a.b") counts values; \
to_json(x); shape(x) sketches a value's structure.
- The last expression is the result (a str as it is, anything else as JSON); a snippet ending in \
an assignment returns the value assigned; print() output comes back too. Results over \
{max_result} characters are refused: return a count, a few fields or a sample.
- Variables persist across run_code calls; restart: true clears them. Keep large data in \
variables rather than fetching it again.
- asyncio, json and re are imported. Not supported: class inheritance, method decorators, \
generators, del, globals(), and modules such as operator, io and statistics.
- search_tools(query=...) finds functions by what they do; describe_tool(name=...) gives one's \
full documentation; skills() lists skills, when there are any."""


def _rules(max_result_chars: int) -> str:
    return _RULES.format(no_output=NO_OUTPUT_TEXT, max_result=count(max_result_chars)).rstrip("\n")


def is_short(budget: int, max_result_chars: int = MAX_RESULT_CHARS) -> bool:
    """Whether a description of ``budget`` characters is the short form: the rules would take more
    than half of it."""
    return 2 * len(_rules(max_result_chars)) > budget


def client_instructions(max_result_chars: int = MAX_RESULT_CHARS) -> str:
    """The rules ``serve-mcp`` gives as its server instructions (a client puts them in its model's
    system prompt), within what Claude Code shows of them."""
    return _CLIENT_INSTRUCTIONS.format(max_result=count(max_result_chars))


@dataclass(frozen=True)
class Skills:
    """What the description says of skills: the skill functions offered and the skills listed."""

    functions: Mapping[str, ToolDefinition]
    listed: Sequence[tuple[str, str]] = ()
    """``(name, description)`` of each skill there is."""


def _skills_listing(listed: Sequence[tuple[str, str]], budget: int) -> str:
    """Each skill (``- name: description``) within ``budget`` characters, then how many are left
    out and how to find them (that line alone when none fits)."""

    def more(left: int) -> str:
        return f"- ... and {count(left)} more: await skills(query=...) finds them"

    lines: list[str] = []
    used = 0
    for number, (name, description) in enumerate(listed, 1):
        line = f"- {name}: {' '.join(description.split())}"
        reserve = len(more(len(listed) - number)) + 1 if number < len(listed) else 0
        if used + len(line) + 1 + reserve > budget:
            lines.append(more(len(listed) - len(lines)))
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines)


def _skills_section(skills: Skills, listing_budget: int) -> str:
    """The full description's part on skills: the functions' stubs, then each skill."""
    stubs = "\n\n".join(render_stub(name, tool) for name, tool in skills.functions.items())
    head = "# Skills: instructions and code for tasks; read a skill's instructions before you use it"
    listing = _skills_listing(skills.listed, listing_budget)
    return "\n\n".join(part for part in (head, stubs, listing) if part)


def _resources_section(resource_servers: Sequence[str]) -> str:
    stubs = "\n\n".join(render_stub(name, tool) for name, tool in RESOURCE_FUNCTIONS.items())
    return f"# MCP resources, offered by: {', '.join(resource_servers)}\n\n{stubs}"


def _left_out_line(left_out: Sequence[str]) -> str:
    return (
        "# Not callable here (these tools need MCP task augmentation, which asyncai does not "
        f"support): {', '.join(left_out)}"
    )


def run_code_description(
    tools: Sequence[ToolDefinition],
    *,
    resource_servers: Sequence[str] = (),
    left_out: Sequence[str] = (),
    max_result_chars: int = MAX_RESULT_CHARS,
    budget: int = DEFAULT_CATALOG_BUDGET,
    skills: Skills | None = None,
) -> str:
    """The ``run_code`` tool description: sandbox rules, return contract, catalog (byte-stable).

    ``resource_servers`` adds the resource functions; ``left_out`` names tools that exist but
    cannot be called from a snippet (they need MCP task augmentation); ``skills`` adds the skill
    functions and the skills. Every part counts against ``budget`` (see the module docstring).
    """
    if is_short(budget, max_result_chars):
        return _short_description(tools, resource_servers, left_out, max_result_chars, budget, skills)
    rules = _rules(max_result_chars)

    def extras(listing_budget: int) -> list[str]:
        parts = [_resources_section(resource_servers)] if resource_servers else []
        parts += [_left_out_line(left_out)] if left_out else []
        parts += [_skills_section(skills, listing_budget)] if skills is not None and skills.functions else []
        return parts

    full = "\n\n".join([rules, render_catalog(tools), *extras(SKILLS_LISTED_CHARS)])
    if len(full) <= budget:
        return full
    # Over the budget the stubs give way to an index in the room the rest leaves, the skills
    # listing taking at most an eighth of it.
    rest = extras(min(SKILLS_LISTED_CHARS, budget // 8))
    room = budget - len(rules) - len("\n\n".join(rest)) - 4
    functions = sanitize_names(tools)
    index = render_index(functions, max(room, 0), how_to_find(len(functions), len(full)))
    return "\n\n".join([rules, index, *rest])


def _short_description(
    tools: Sequence[ToolDefinition],
    resource_servers: Sequence[str],
    left_out: Sequence[str],
    max_result_chars: int,
    budget: int,
    skills: Skills | None,
) -> str:
    """The catalog first, as full as fits, then the short rules (see the module docstring)."""
    functions = sanitize_names(tools)
    own = dict(RESOURCE_FUNCTIONS) if resource_servers else {}
    for name, tool in (skills.functions if skills is not None else {}).items():
        if name not in functions:  # a tool keeps its name, as in the catalog
            own[name] = tool
    own_lines = [index_line(name, tool, with_summary=False) for name, tool in own.items()]
    own_part = "\n".join([_OWN_FUNCTIONS, *own_lines]) if own else ""
    tail = [_left_out_line(left_out)] if left_out else []
    tail.append(_SHORT_RULES.format(max_result=count(max_result_chars)))
    listed = skills.listed if skills is not None else ()

    def assemble(catalog: str, listing: str) -> str:
        skills_part = f"{_SKILLS_HEAD}\n{listing}" if listing else ""
        return "\n\n".join(part for part in (_SHORT_INTRO, catalog, own_part, skills_part, *tail) if part)

    # The catalog's room: everything else in, the skills listing at its least (a line saying how
    # to find them); the listing then takes what the catalog left.
    room = budget - len(assemble("", _skills_listing(listed, 0) if listed else "")) - 2
    for render in (_stubs, _one_line_each(with_summary=True), _one_line_each(with_summary=False)):
        catalog = render(functions)
        if len(catalog) <= room:
            break
    else:

        def intro(shown: int) -> str:
            if shown == len(functions):
                return _SHORT_INDEX_ALL.format(total=count(len(functions)))
            return _SHORT_INDEX.format(total=count(len(functions)), listed=f"{count(shown)} listed")

        catalog = render_index(functions, room, intro, with_summary=False)
    if not listed:
        return assemble(catalog, "")
    left = budget - len(assemble(catalog, "")) - 3 - len(_SKILLS_HEAD)
    return assemble(catalog, _skills_listing(listed, left))


_SKILLS_HEAD: Final = "Skills (await skill(name=...) reads one's instructions):"


def _stubs(functions: Mapping[str, ToolDefinition]) -> str:
    return "\n\n".join(render_stub(name, tool) for name, tool in functions.items())


def _one_line_each(with_summary: bool) -> Callable[[Mapping[str, ToolDefinition]], str]:
    def render(functions: Mapping[str, ToolDefinition]) -> str:
        lines = []
        for name, tool in functions.items():
            line = signature_line(name, tool)
            about = summary(tool.description) if with_summary else ""
            lines.append(f"{line}  # {about}" if about else line)
        return "\n".join(lines)

    return render


def run_code_definition(
    tools: list[ToolDefinition],
    resource_servers: list[str] | None = None,
    max_result_chars: int = MAX_RESULT_CHARS,
    budget: int = DEFAULT_CATALOG_BUDGET,
    skills: Skills | None = None,
) -> ToolDefinition:
    usable = callable_tools(tools)
    return ToolDefinition(
        name=RUN_CODE,
        description=run_code_description(
            usable,
            resource_servers=resource_servers or [],
            left_out=[tool.name for tool in tools if tool.task_required],
            max_result_chars=max_result_chars,
            budget=budget,
            skills=skills,
        ),
        input_schema=RUN_CODE_INPUT_SCHEMA,
        read_only=all(tool.read_only for tool in usable),
        destructive=any(tool.destructive for tool in usable),
    )
