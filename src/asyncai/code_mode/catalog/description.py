"""The ``run_code`` description: sandbox rules, the return contract and the catalog.

While every stub fits ``budget`` characters the catalog is every stub (the description is exactly
what it was before budgets existed); over it, a compact index replaces the stubs and says how to
search and describe the rest from a snippet. Pure and byte-stable for a tool set.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from asyncai.code_mode.catalog.entries import callable_tools
from asyncai.code_mode.catalog.index import render_index
from asyncai.code_mode.catalog.resources import RESOURCE_FUNCTIONS
from asyncai.code_mode.catalog.stubs import (
    RUN_CODE,
    RUN_CODE_INPUT_SCHEMA,
    render_catalog,
    render_stub,
    sanitize_names,
)
from asyncai.code_mode.engine.contract import MAX_RESULT_CHARS, NO_OUTPUT_TEXT
from asyncai.humanize import count
from asyncai.tools.types import ToolDefinition

DEFAULT_CATALOG_BUDGET: Final = 16_000

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


def _resources_section(resource_servers: Sequence[str]) -> str:
    stubs = "\n\n".join(render_stub(name, tool) for name, tool in RESOURCE_FUNCTIONS.items())
    return f"# MCP resources, offered by: {', '.join(resource_servers)}\n\n{stubs}"


def run_code_description(
    tools: Sequence[ToolDefinition],
    *,
    resource_servers: Sequence[str] = (),
    left_out: Sequence[str] = (),
    max_result_chars: int = MAX_RESULT_CHARS,
    budget: int = DEFAULT_CATALOG_BUDGET,
) -> str:
    """The ``run_code`` tool description: sandbox rules, return contract, catalog (byte-stable).

    ``resource_servers`` adds the resource functions; ``left_out`` names tools that exist but
    cannot be called from a snippet (they need MCP task augmentation). Over ``budget`` characters
    the stubs give way to an index (see the module docstring).
    """
    rules = _RULES.format(no_output=NO_OUTPUT_TEXT, max_result=count(max_result_chars)).rstrip("\n")
    full = _with_extras([rules, render_catalog(tools)], resource_servers, left_out)
    if len(full) <= budget:
        return full
    extras = _with_extras([], resource_servers, left_out)
    room = budget - len(rules) - len(extras) - 4
    index = render_index(sanitize_names(tools), max(room, 0), full_size=len(full))
    return _with_extras([rules, index], resource_servers, left_out)


def _with_extras(parts: list[str], resource_servers: Sequence[str], left_out: Sequence[str]) -> str:
    parts = list(parts)
    if resource_servers:
        parts.append(_resources_section(resource_servers))
    if left_out:
        parts.append(
            "# Not callable here (these tools need MCP task augmentation, which asyncai does not "
            f"support): {', '.join(left_out)}"
        )
    return "\n\n".join(part for part in parts if part)


def run_code_definition(
    tools: list[ToolDefinition],
    resource_servers: list[str] | None = None,
    max_result_chars: int = MAX_RESULT_CHARS,
    budget: int = DEFAULT_CATALOG_BUDGET,
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
        ),
        input_schema=RUN_CODE_INPUT_SCHEMA,
        read_only=all(tool.read_only for tool in usable),
        destructive=any(tool.destructive for tool in usable),
    )
