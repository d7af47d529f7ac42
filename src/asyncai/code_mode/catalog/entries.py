"""The catalog's entries: each function a snippet can call, with the tool behind it."""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

from asyncai.code_mode.catalog.host_functions import HOST_FUNCTIONS
from asyncai.code_mode.catalog.stubs import inline_local_refs, parameter_names, sanitize_names
from asyncai.tools.types import ToolDefinition

if TYPE_CHECKING:
    from asyncai.code_mode.engine.crossing import Payload


@dataclass(frozen=True)
class CatalogEntry:
    """A catalog function: its tool and the Python-name -> schema-name map of its parameters."""

    tool: ToolDefinition
    parameters: Mapping[str, str]
    required: frozenset[str]
    host_function: bool = False
    """Answered by asyncai (resources, ``search_tools``, ``describe_tool``), not a nested tool call."""
    nested: Mapping[str, Any] = field(default_factory=dict)
    """Python parameter name -> its schema, for the parameters holding objects with required keys
    (``missing_key`` checks a value built in a variable, which the type check cannot see)."""


class Finder(Protocol):
    def answer(self, definition: ToolDefinition, arguments: Mapping[str, Any]) -> Payload: ...


def callable_tools(tools: list[ToolDefinition]) -> list[ToolDefinition]:
    """The tools a snippet can call: not those that only run as MCP tasks."""
    return [tool for tool in tools if not tool.task_required]


def _entry(tool: ToolDefinition, *, host_function: bool = False) -> CatalogEntry:
    required = {str(name) for name in tool.input_schema.get("required", [])}
    parameters = parameter_names(tool)
    properties = inline_local_refs(tool.input_schema).get("properties")
    nested = {
        py: properties[schema_name]
        for py, schema_name in parameters.items()
        if isinstance(properties, dict) and _holds_required(properties.get(schema_name), 0)
    }
    return CatalogEntry(
        tool=tool,
        parameters=parameters,
        required=frozenset(py for py, schema_name in parameters.items() if schema_name in required),
        host_function=host_function,
        nested=nested,
    )


MISSING_KEY_DEPTH: Final = 8
"""How deep ``missing_key`` looks into a value; deeper, a server's own check answers."""


def _holds_required(schema: Any, depth: int) -> bool:
    """Whether ``schema`` (a parameter's) has an object with required keys, in an array or object."""
    if not isinstance(schema, dict) or depth > MISSING_KEY_DEPTH:
        return False
    if isinstance(schema.get("required"), list) and schema["required"]:
        return True
    children = [schema.get("items"), *(_properties_of(schema).values())]
    return any(_holds_required(child, depth + 1) for child in children)


def _properties_of(schema: dict[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties")
    return properties if isinstance(properties, dict) else {}


def missing_key(value: Any, schema: Any, path: str, depth: int = 0) -> str | None:
    """The first object in ``value`` (an argument, ``path`` its name) that lacks a key its schema
    requires, worded as the type check words it (```entities[0]` is missing required key
    'observations'``). Only a plain object or array schema is followed (a union is the server's to
    judge), so a value the server accepts is never refused."""
    if not isinstance(schema, dict) or depth > MISSING_KEY_DEPTH or _is_union(schema):
        return None
    if isinstance(value, dict) and schema.get("type", "object") == "object":
        required = schema.get("required")
        for key in required if isinstance(required, list) else ():
            if isinstance(key, str) and key not in value:
                return f"`{path}` is missing required key {key!r}"
        for key, sub in _properties_of(schema).items():
            if key in value:
                found = missing_key(value[key], sub, f"{path}[{key!r}]", depth + 1)
                if found is not None:
                    return found
    elif isinstance(value, list | tuple) and schema.get("type", "array") == "array":
        items = schema.get("items")
        if isinstance(items, dict):
            for index, element in enumerate(value):
                found = missing_key(element, items, f"{path}[{index}]", depth + 1)
                if found is not None:
                    return found
    return None


def _is_union(schema: dict[str, Any]) -> bool:
    return any(key in schema for key in ("anyOf", "oneOf", "allOf")) or isinstance(schema.get("type"), list)


def build_catalog(
    tools: list[ToolDefinition], *, skills: Mapping[str, ToolDefinition] | None = None
) -> dict[str, CatalogEntry]:
    """Python name -> entry for every callable tool and asyncai's own functions (resources, search,
    and the ``skills`` functions offered, where no tool took their names)."""
    catalog = {py_name: _entry(tool) for py_name, tool in sanitize_names(callable_tools(tools)).items()}
    for name, tool in HOST_FUNCTIONS.items():
        catalog[name] = _entry(tool, host_function=True)
    for name, tool in (skills or {}).items():
        catalog.setdefault(name, _entry(tool, host_function=True))
    return catalog


def call_mistakes(
    py_name: str, entry: CatalogEntry, positional: Sequence[str], keywords: Collection[str]
) -> list[str]:
    """Every mistake in the shape of a call to ``py_name``, each worded as the ``TypeError`` Python
    would raise (without the ``TypeError: ``). ``positional`` are the positional arguments as
    source text (or ``repr``), ``keywords`` the keyword names. The host's check and the type check
    both say it this way, so the model meets one vocabulary whichever catches the mistake."""
    parameters = list(entry.parameters)
    accepted = ", ".join(parameters) or "(none)"
    mistakes = []
    allowed = entry.tool.positional
    for name in parameters[: min(len(positional), allowed)]:
        if name in keywords:
            mistakes.append(f"{py_name}() got multiple values for argument '{name}'")
    if len(positional) > allowed and allowed:
        taking = f"{allowed} positional argument{'s' if allowed > 1 else ''}"
        mistakes.append(f"{py_name}() takes {taking} but {len(positional)} were given")
    elif positional and not allowed:
        taken = [name for name in parameters if name not in keywords]
        if len(positional) <= len(taken):
            written = ", ".join(f"{name}={text}" for name, text in zip(taken, positional, strict=False))
            mistakes.append(f"{py_name}() takes keyword arguments only; write {py_name}({written})")
        else:
            mistakes.append(f"{py_name}() takes keyword arguments only: {accepted}")
    for name in keywords:
        if name not in entry.parameters:
            close = difflib.get_close_matches(name, parameters, n=1, cutoff=0.5)
            hint = f" (did you mean {close[0]}?)" if close else ""
            mistakes.append(
                f"{py_name}() got an unexpected keyword argument '{name}'; accepted: {accepted}{hint}"
            )
    filled = parameters if allowed else [name for name in parameters if name not in keywords]
    given = {*keywords, *filled[: len(positional)]}
    missing = [name for name in parameters if name in entry.required and name not in given]
    if missing:
        mistakes.append(f"{py_name}() missing required keyword argument '{missing[0]}'")
    return mistakes


OS_DENIED = "os access disabled in asyncai code mode"
_FILE_TOOL = re.compile(r"file|director|folder|(?:^|_)dirs?(?:$|_)", re.IGNORECASE)
FILE_TOOLS_SHOWN = 8


def os_denied_text(catalog: Mapping[str, CatalogEntry]) -> str:
    """What a snippet's refused OS call says: the catalog's file tools when it has any (read-only
    ones first, deprecated ones last, with a call to copy), else that the catalog functions are the
    only way out."""
    found = [
        (entry.tool.mutating, "deprecated" in entry.tool.description.lower(), name)
        for name, entry in catalog.items()
        if not entry.host_function and _FILE_TOOL.search(name)
    ]
    if not found:
        return (
            f"{OS_DENIED}: the sandbox has no file, environment or network access; "
            "the catalog functions are the only way out"
        )
    shown = [name for *_, name in sorted(found, key=lambda row: row[:2])[:FILE_TOOLS_SHOWN]]
    first = catalog[shown[0]]
    argument = next(iter(sorted(first.parameters, key=lambda p: p not in first.required)), None)
    example = f"await {shown[0]}({f'{argument}=...' if argument else ''})"
    more = f" and {len(found) - len(shown)} more" if len(found) > len(shown) else ""
    return (
        f"{OS_DENIED}: the sandbox cannot open files itself; the file tools can: "
        f"{', '.join(shown)}{more} (e.g. `r = {example}`)"
    )
