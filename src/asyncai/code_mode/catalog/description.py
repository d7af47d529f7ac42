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
Run Python (Monty, a subset of Python 3) that calls the async functions below; each runs a tool.

How to work:
- Write ONE complete program that fetches, filters and returns the answer; inspect data shapes \
only after a failure.
- Call with keyword arguments only, and await: x = await f(a=1). In parallel: \
a, b = await asyncio.gather(f(a=1), g(b=2)) (no return_exceptions). A failing call raises \
RuntimeError.
- asyncio, json and re are imported. The functions below are defined: never define them or assign \
to their names.
- Helpers (a variable of the same name hides one): items(x) the list in a result; names(x) each \
element's name; dig(obj, "a.b", default=None); count_by(xs, *path) {{value: count}}; to_json(x).
- A function returns its structured result (see Returns:), else its text parsed as JSON, else the \
text; other parts are dicts like {{"type": "image", "mime_type": ..., "data": ...}}.{no_schema}
- Variables persist across run_code calls (restart: true clears them). Only what run_code returned \
stays in the chat history.
- No filesystem, environment, network or subprocess access. No class inheritance, @property, \
yield, del, globals(), or the operator, io, textwrap and statistics modules.

Result:
- The last expression: a str is returned as-is, else compact JSON. A snippet that ends with an \
assignment (x = ...) returns the value assigned; None gives "{no_output}". print() output comes \
too: {{"output": ..., "result": ...}}.
- Over {max_result} characters is rejected: return only what answers the question.

Functions:
"""
# Said only where it applies: when a stub is marked -> Any, or the catalog is an index.
_NO_SCHEMA_RULE: Final = (
    " A function marked -> Any has no output schema: inspect a small sample before relying on its shape."
)


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
    catalog = render_catalog(tools)
    rules = _rules(max_result_chars, any_untyped="-> Any:" in catalog)
    full = _with_extras([rules, catalog], resource_servers, left_out)
    if len(full) <= budget:
        return full
    rules = _rules(max_result_chars, any_untyped=True)
    extras = _with_extras([], resource_servers, left_out)
    room = budget - len(rules) - len(extras) - 4
    index = render_index(sanitize_names(tools), max(room, 0), full_size=len(full))
    return _with_extras([rules, index], resource_servers, left_out)


def _rules(max_result_chars: int, *, any_untyped: bool) -> str:
    return _RULES.format(
        no_output=NO_OUTPUT_TEXT,
        max_result=count(max_result_chars),
        no_schema=_NO_SCHEMA_RULE if any_untyped else "",
    ).rstrip("\n")


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
