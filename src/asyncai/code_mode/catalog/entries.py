"""The catalog's entries: each function a snippet can call, with the tool behind it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from asyncai.code_mode.catalog.host_functions import HOST_FUNCTIONS
from asyncai.code_mode.catalog.stubs import parameter_names, sanitize_names
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


class Finder(Protocol):
    def answer(self, definition: ToolDefinition, arguments: Mapping[str, Any]) -> Payload: ...


def callable_tools(tools: list[ToolDefinition]) -> list[ToolDefinition]:
    """The tools a snippet can call: not those that only run as MCP tasks."""
    return [tool for tool in tools if not tool.task_required]


def _entry(tool: ToolDefinition, *, host_function: bool = False) -> CatalogEntry:
    required = {str(name) for name in tool.input_schema.get("required", [])}
    parameters = parameter_names(tool)
    return CatalogEntry(
        tool=tool,
        parameters=parameters,
        required=frozenset(py for py, schema_name in parameters.items() if schema_name in required),
        host_function=host_function,
    )


def build_catalog(tools: list[ToolDefinition]) -> dict[str, CatalogEntry]:
    """Python name -> entry for every callable tool and asyncai's own functions (resources, search)."""
    catalog = {py_name: _entry(tool) for py_name, tool in sanitize_names(callable_tools(tools)).items()}
    for name, tool in HOST_FUNCTIONS.items():
        catalog[name] = _entry(tool, host_function=True)
    return catalog
