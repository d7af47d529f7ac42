"""Python functions as tools: any sync or async callable, with schemas from its signature.

The ``mcp`` SDK's own ``Tool.from_function`` reads the signature (pydantic models of the arguments
and of the return value, wrapped as ``{"result": ...}`` when it is not an object), validates the
arguments, runs a sync function on a worker thread and converts what it returns into an MCP result.
So a function's result reaches a snippet through exactly the conversion an MCP server's does.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, overload

from asyncai.log import log_event
from asyncai.tools.types import ToolCallOutput, ToolDefinition, ToolSource

if TYPE_CHECKING:
    from mcp.server.mcpserver.tools.base import Tool

F = TypeVar("F", bound=Callable[..., Any])
FUNCTIONS_SERVER = "functions"
_MARK = "__asyncai_tool__"
_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Params)\s*:\s*$")
_SECTION_END = re.compile(r"^\s*(Returns|Return|Raises|Yields|Examples?|Notes?)\s*:\s*$")
_ARGUMENT = re.compile(r"^\s+(\*{0,2}\w+)(?:\s*\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_ARGUMENT = re.compile(r"^\s*:param\s+(?:\S+\s+)?(\w+)\s*:\s*(.*)$")


@dataclass(frozen=True)
class ToolOptions:
    """How a function is offered: the name and description the model sees, and what it may change.

    A function is *read-only* when it changes nothing (``read_only=True``); otherwise it is
    *mutating*, and ``destructive`` says whether it may destroy (by default it may, as the MCP
    spec assumes of a tool that says nothing). Mutating calls go through the mutation policy."""

    name: str | None = None
    description: str | None = None
    read_only: bool = False
    destructive: bool | None = None


@overload
def tool(function: F, /) -> F: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    destructive: bool | None = None,
) -> Callable[[F], F]: ...


def tool(
    function: F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    destructive: bool | None = None,
) -> F | Callable[[F], F]:
    """Say how a function is offered as a tool; the function itself is returned unchanged.

    ``@tool(read_only=True)`` on a function that only reads; ``@tool(destructive=False)`` on one
    that adds but never deletes. A function without ``@tool`` is offered by its own name and
    docstring and counts as mutating and destructive."""
    options = ToolOptions(name, description, read_only, destructive)

    def mark(target: F) -> F:
        setattr(target, _MARK, options)
        return target

    return mark(function) if function is not None else mark


def docstring_parts(doc: str) -> tuple[str, dict[str, str]]:
    """A docstring's description (without its argument section) and each argument's text, from a
    Google-style ``Args:`` section or Sphinx-style ``:param name:`` lines."""
    lines = inspect.cleandoc(doc).splitlines()
    described: list[str] = []
    arguments: dict[str, str] = {}
    current: str | None = None
    in_section = False
    for line in lines:
        sphinx = _SPHINX_ARGUMENT.match(line)
        if sphinx:
            current, in_section = sphinx.group(1), False
            arguments[current] = sphinx.group(2).strip()
            continue
        if _SECTION.match(line):
            in_section, current = True, None
            continue
        if _SECTION_END.match(line) or (line.strip().startswith(":") and current is not None):
            in_section, current = False, None
            described.append(line)
            continue
        argument = _ARGUMENT.match(line) if in_section else None
        if argument:
            current = argument.group(1).lstrip("*")
            arguments[current] = argument.group(2).strip()
        elif current is not None and line.strip() and (in_section or line.startswith((" ", "\t"))):
            arguments[current] = f"{arguments[current]} {line.strip()}".strip()
        elif in_section and not line.strip():
            continue
        else:
            in_section, current = False, None
            described.append(line)
    return "\n".join(described).strip(), arguments


def _with_argument_descriptions(schema: dict[str, Any], descriptions: dict[str, str]) -> dict[str, Any]:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return schema
    for name, text in descriptions.items():
        field = properties.get(name)
        if isinstance(field, dict) and text and "description" not in field:
            field["description"] = text
    return schema


@dataclass(frozen=True)
class _FunctionTool:
    definition: ToolDefinition
    sdk_tool: Tool


def function_tool(function: Callable[..., Any], server: str = FUNCTIONS_SERVER) -> _FunctionTool:
    """The tool a function becomes (``ValueError`` when its signature cannot be a tool's)."""
    from mcp.server.mcpserver.tools.base import Tool  # the SDK's server half: only when used

    options: ToolOptions = getattr(function, _MARK, None) or ToolOptions()
    description, arguments = docstring_parts(options.description or inspect.getdoc(function) or "")
    try:
        sdk_tool = Tool.from_function(function, name=options.name, description=description)
    except Exception as exc:
        name = options.name or getattr(function, "__name__", repr(function))
        raise ValueError(f"function {name!r} cannot be a tool: {exc}") from None
    if sdk_tool.context_kwarg is not None or sdk_tool.resolved_params:
        raise ValueError(f"function {sdk_tool.name!r} cannot be a tool: it takes an MCP server context")
    read_only = options.read_only
    destructive = not read_only if options.destructive is None else options.destructive and not read_only
    definition = ToolDefinition(
        name=sdk_tool.name,
        description=sdk_tool.description,
        input_schema=_with_argument_descriptions(dict(sdk_tool.parameters), arguments),
        output_schema=sdk_tool.output_schema,
        read_only=read_only,
        destructive=destructive,
        server=server,
    )
    return _FunctionTool(definition, sdk_tool)


class FunctionTools(ToolSource):
    """Python functions as a tool source, next to MCP servers in one ``CodeMode``.

    ``FunctionTools([search, create_ticket])``, or ``functions.add(f, read_only=True)`` one at a
    time; ``server`` is the name the tools are listed under (as an MCP server's name is).
    A function that raises gives an error result with the exception's type and message."""

    def __init__(
        self, functions: Iterable[Callable[..., Any]] = (), *, server: str = FUNCTIONS_SERVER
    ) -> None:
        self.server = server
        self._tools: dict[str, _FunctionTool] = {}
        for function in functions:
            self.add(function)

    def add(self, function: Callable[..., Any], **options: Any) -> None:
        """Offer ``function``; ``options`` are ``tool()``'s and override its ``@tool`` marks."""
        if options:
            marked: ToolOptions = getattr(function, _MARK, None) or ToolOptions()
            merged = {**marked.__dict__, **options}
            function = _marked_copy(function, ToolOptions(**merged))
        made = function_tool(function, self.server)
        if made.definition.name in self._tools:
            raise ValueError(
                f"two functions are named {made.definition.name!r}: name one with tool(name=...)"
            )
        self._tools[made.definition.name] = made

    def tools(self) -> list[ToolDefinition]:
        return [made.definition for made in self._tools.values()]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolCallOutput:
        from mcp.server.mcpserver.exceptions import ToolError
        from mcp.types import CallToolResult

        from asyncai.tools.mcp.results import call_output

        made = self._tools.get(name)
        if made is None:
            return ToolCallOutput.error(f"unknown tool {name!r}")
        metadata = made.sdk_tool.fn_metadata
        try:
            validated = metadata.validate_arguments(arguments)
            value = await metadata.call_fn(made.sdk_tool.fn, made.sdk_tool.is_async, validated)
            result = metadata.convert_result(value)
        except (ToolError, ValueError) as exc:  # a pydantic ValidationError is a ValueError
            return ToolCallOutput.error(f"Error executing tool {name}: {exc}")
        except Exception as exc:
            log_event("functions.tool_failed", logging.INFO, tool=name, error_type=type(exc).__name__)
            return ToolCallOutput.error(f"Error executing tool {name}: {type(exc).__name__}: {exc}")
        if not isinstance(result, CallToolResult):  # input_required: a function cannot ask
            return ToolCallOutput.error(
                f"Error executing tool {name}: it asked for input, which asyncai cannot give"
            )
        return call_output(result)


def _marked_copy(function: Callable[..., Any], options: ToolOptions) -> Callable[..., Any]:
    """``function`` with other options, leaving the original's marks alone."""
    import functools

    if inspect.iscoroutinefunction(function):

        @functools.wraps(function)
        async def copy_async(*args: Any, **kwargs: Any) -> Any:
            return await function(*args, **kwargs)

        setattr(copy_async, _MARK, options)
        return copy_async

    @functools.wraps(function)
    def copy(*args: Any, **kwargs: Any) -> Any:
        return function(*args, **kwargs)

    setattr(copy, _MARK, options)
    return copy
