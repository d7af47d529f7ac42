"""Python functions as tools: any sync or async callable, with schemas from its signature.

The ``mcp`` SDK's own ``Tool.from_function`` reads the signature (pydantic models of the arguments
and of the return value, wrapped as ``{"result": ...}`` when it is not an object), validates the
arguments, runs a sync function on a worker thread and converts what it returns into an MCP result.

What a function returns always reaches a snippet as structured content, so the value arrives
unchanged. The SDK gives structured content only for return annotations it can model; for the
others (none, ``Any``, a bare ``list`` or ``dict``) it falls back to one text block per list item,
which turns ``[[1, 2], 2]`` into ``[1, 2, 2]`` and ``["only"]`` into ``"only"``. Those functions
are wrapped here as ``{"result": ...}`` the way the SDK wraps a ``list[int]``. Only content blocks
(``TextContent``, ``Image``, a ``CallToolResult``, ...) stay blocks: they are what a tool says to
the model. A function must take named arguments: ``*args``, ``**kwargs`` and positional-only
parameters are refused when it is added, and an unannotated parameter is ``Any``.
"""

from __future__ import annotations

import functools
import inspect
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, get_args, overload

from asyncai.arguments import check_instance, refusal
from asyncai.log import log_event
from asyncai.tools.types import ToolCallOutput, ToolDefinition, ToolSource

if TYPE_CHECKING:
    from mcp.server.mcpserver.tools.base import Tool
    from mcp.types import CallToolResult, InputRequiredResult

F = TypeVar("F", bound=Callable[..., Any])
FUNCTIONS_SERVER = "functions"
_MARK = "__asyncai_tool__"
_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Params)\s*:\s*$")
_SECTION_END = re.compile(r"^\s*(Returns|Return|Raises|Yields|Examples?|Notes?)\s*:\s*$")
_ARGUMENT = re.compile(r"^\s+(\*{0,2}\w+)(?:\s*\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_ARGUMENT = re.compile(r"^\s*:param\s+(?:\S+\s+)?(\w+)\s*:\s*(.*)$")
_WRAP_KEY = "result"
# FastMCP's marker; code mode reads an explicit ``False`` as "this object is the value itself".
_WRAP_MARKER = "x-fastmcp-wrap-result"
_NOT_NAMED = {
    inspect.Parameter.VAR_POSITIONAL: "*{}: a tool's arguments are named, so it takes no *args",
    inspect.Parameter.VAR_KEYWORD: "**{}: a tool's schema lists its arguments, so it takes no **kwargs",
    inspect.Parameter.POSITIONAL_ONLY: "{} is positional-only: a tool's arguments are passed by name",
}


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


def _untyped_as_any(schema: dict[str, Any], untyped: Iterable[str]) -> dict[str, Any]:
    """The schema with each unannotated parameter as ``Any``: the SDK validates it as ``Any`` but
    shows it as a string."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return schema
    properties = dict(properties)
    for name in untyped:
        field = properties.get(name)
        if isinstance(field, dict):
            properties[name] = {key: value for key, value in field.items() if key != "type"}
    return {**schema, "properties": properties}


def _signature(function: Callable[..., Any], name: str) -> inspect.Signature | None:
    """The signature (annotations evaluated, as the SDK reads them), after refusing parameters a
    tool call cannot fill (``TypeError``); ``None`` when it cannot be read."""
    try:
        signature = inspect.signature(function, eval_str=True)
    except (TypeError, ValueError):
        return None  # not introspectable: the SDK says why it cannot read it
    except Exception:  # an annotation that does not evaluate: the SDK refuses it, saying why
        signature = inspect.signature(function)
    for parameter in signature.parameters.values():
        if parameter.kind in _NOT_NAMED:
            reason = _NOT_NAMED[parameter.kind].format(parameter.name)
            raise TypeError(f"function {name!r} cannot be a tool: its parameter {reason}")
    return signature


@functools.cache
def _content_types() -> tuple[type, ...]:
    """What a function returns to speak to the model in MCP content rather than give a value."""
    import mcp.types as mt
    from mcp.server.mcpserver.utilities.types import Audio, Image

    return (
        mt.TextContent,
        mt.ImageContent,
        mt.AudioContent,
        mt.EmbeddedResource,
        mt.ResourceLink,
        mt.CallToolResult,
        mt.InputRequiredResult,
        Image,
        Audio,
    )


def _names_content(annotation: Any) -> bool:
    """Whether a return annotation names a content type anywhere (``list[Image]``, ``X | None``)."""
    if isinstance(annotation, type) and issubclass(annotation, _content_types()):
        return True
    return any(_names_content(argument) for argument in get_args(annotation))


def _is_content(value: Any) -> bool:
    if isinstance(value, _content_types()):
        return True
    return isinstance(value, list | tuple) and any(_is_content(item) for item in value)


def _value_schema(function: Callable[..., Any]) -> dict[str, Any]:
    """``{"result": Any}`` under the SDK's wrapper title, which code mode unwraps. ``Any`` even for
    a bare ``list``: the SDK never checked such a value against its annotation, and a client that
    checks it against the schema must not refuse what was always sent."""
    return {
        "properties": {_WRAP_KEY: {"title": "Result"}},
        "required": [_WRAP_KEY],
        "title": f"{getattr(function, '__name__', 'function')}Output",
        "type": "object",
    }


@dataclass(frozen=True)
class _FunctionTool:
    definition: ToolDefinition
    sdk_tool: Tool
    wraps: bool = False
    """The SDK would send the value as text blocks, so it is sent as ``{"result": ...}`` too."""

    def convert(self, value: Any) -> CallToolResult | InputRequiredResult:
        """What the function returned as an MCP result, its value kept whole."""
        from mcp.types import CallToolResult
        from pydantic_core import to_jsonable_python

        result = self.sdk_tool.fn_metadata.convert_result(value)  # content blocks for the model
        if not self.wraps or not isinstance(result, CallToolResult) or _is_content(value):
            return result
        structured = {_WRAP_KEY: to_jsonable_python(value, fallback=str)}  # as the SDK's text has it
        return result.model_copy(update={"structured_content": structured})


def function_tool(function: Callable[..., Any], server: str = FUNCTIONS_SERVER) -> _FunctionTool:
    """The tool a function becomes (``ValueError`` when its signature cannot be a tool's,
    ``TypeError`` when it takes ``*args``, ``**kwargs`` or positional-only parameters)."""
    from mcp.server.mcpserver.tools.base import Tool  # the SDK's server half: only when used

    options: ToolOptions = getattr(function, _MARK, None) or ToolOptions()
    name = str(options.name or getattr(function, "__name__", repr(function)))
    signature = _signature(function, name)
    description, arguments = docstring_parts(options.description or inspect.getdoc(function) or "")
    try:
        sdk_tool = Tool.from_function(function, name=options.name, description=description)
    except Exception as exc:
        raise ValueError(f"function {name!r} cannot be a tool: {exc}") from None
    if sdk_tool.context_kwarg is not None or sdk_tool.resolved_params:
        raise ValueError(f"function {sdk_tool.name!r} cannot be a tool: it takes an MCP server context")
    untyped = (
        []
        if signature is None
        else [p.name for p in signature.parameters.values() if p.annotation is inspect.Parameter.empty]
    )
    input_schema = _untyped_as_any(dict(sdk_tool.parameters), untyped)
    metadata = sdk_tool.fn_metadata
    returns = Any if signature is None else signature.return_annotation
    wraps = metadata.output_schema is None and not _names_content(returns)
    output_schema = _value_schema(function) if wraps else sdk_tool.output_schema
    if output_schema is not None and not metadata.wrap_output and not wraps:
        properties = output_schema.get("properties")
        if isinstance(properties, dict) and list(properties) == [_WRAP_KEY]:
            # A TypedDict or model that looks like the wrapper (``{"result": ...}``) is the value.
            output_schema = {**output_schema, _WRAP_MARKER: False}
    read_only = options.read_only
    destructive = not read_only if options.destructive is None else options.destructive and not read_only
    definition = ToolDefinition(
        name=sdk_tool.name,
        description=sdk_tool.description,
        input_schema=_with_argument_descriptions(input_schema, arguments),
        output_schema=output_schema,
        read_only=read_only,
        destructive=destructive,
        server=server,
    )
    return _FunctionTool(definition, sdk_tool, wraps)


class FunctionTools(ToolSource):
    """Python functions as a tool source, next to MCP servers in one ``CodeMode``.

    ``FunctionTools([search, create_ticket])``, or ``functions.add(f, read_only=True)`` one at a
    time; ``server`` is the name the tools are listed under (as an MCP server's name is).
    A function that raises gives an error result with the exception's type and message."""

    def __init__(
        self, functions: Iterable[Callable[..., Any]] = (), *, server: str = FUNCTIONS_SERVER
    ) -> None:
        check_instance(server, str, "FunctionTools", "server", "a name (a str)")
        if callable(functions) or not isinstance(functions, Iterable):
            raise TypeError(refusal("FunctionTools", "functions", "a list of functions", functions))
        self.server = server
        self._tools: dict[str, _FunctionTool] = {}
        for function in functions:
            self.add(function)

    def add(self, function: Callable[..., Any], **options: Any) -> None:
        """Offer ``function``; ``options`` are ``tool()``'s and override its ``@tool`` marks."""
        if not callable(function):
            raise TypeError(refusal("FunctionTools", "each function", "a function", function))
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
            result = made.convert(value)
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
