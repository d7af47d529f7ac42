"""The host side of nested tool calls: validation (A3), budgets, timeouts (A4), logging and audit
(A6, A7). One ``SnippetDispatcher`` serves one snippet."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..log import decoded_or_preview, log_event
from ..tools.types import ToolDefinition, ToolExecutor
from .limits import CodeModeLimits

OS_DENIED = "os access disabled in asyncai code mode"


@dataclass(frozen=True)
class CatalogEntry:
    """A catalog function: its tool and the Python-name -> schema-name map of its parameters."""

    tool: ToolDefinition
    parameters: Mapping[str, str]
    required: frozenset[str]


@dataclass
class NestedCall:
    tool: str
    arguments: dict[str, Any]
    mutating: bool
    is_error: bool = False
    bytes: int = 0

    def audit(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "arguments": self.arguments,
            "is_error": self.is_error,
            "bytes": self.bytes,
            "mutating": self.mutating,
        }


def validate_arguments(
    py_name: str, entry: CatalogEntry, args: Any, kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    """Keyword arguments in Python names -> MCP arguments; ``TypeError`` like Python's own (A3)."""
    if args:
        raise TypeError(f"{py_name}() takes keyword arguments only")
    unknown = [name for name in kwargs if name not in entry.parameters]
    if unknown:
        accepted = ", ".join(entry.parameters) or "(none)"
        raise TypeError(
            f"{py_name}() got an unexpected keyword argument '{unknown[0]}'; accepted: {accepted}"
        )
    missing = [name for name in entry.parameters if name in entry.required and kwargs.get(name) is None]
    if missing:
        raise TypeError(f"{py_name}() missing required keyword argument '{missing[0]}'")
    return {entry.parameters[name]: value for name, value in kwargs.items() if value is not None}


def refuse_os(**_: Any) -> None:
    """An ``os=`` handler: every filesystem or environment call is refused."""
    raise PermissionError(OS_DENIED)


@dataclass
class SnippetDispatcher:
    """Runs the nested calls of one snippet against the inner executor."""

    catalog: Mapping[str, CatalogEntry]
    inner: ToolExecutor
    limits: CodeModeLimits
    calls: list[NestedCall] = field(default_factory=list)
    suspensions: int = 0
    exhausted: str | None = None
    """Set once the suspension budget is spent: the snippet then ends as an error, caught or not."""
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set)

    def _count_suspension(self) -> None:
        self.suspensions += 1
        if self.suspensions > self.limits.max_suspensions:
            self.exhausted = (
                f"RuntimeError: suspension limit exceeded: more than {self.limits.max_suspensions} "
                "tool or OS calls in one run_code"
            )
            raise RuntimeError(self.exhausted.removeprefix("RuntimeError: "))

    async def call(self, py_name: str, args: Any, kwargs: Mapping[str, Any]) -> str:
        """The sandbox's ``_asyncai_tool``: returns the result text or raises into the sandbox."""
        self._count_suspension()
        entry = self.catalog.get(py_name)
        if entry is None:
            raise NameError(f"name '{py_name}' is not defined")
        arguments = validate_arguments(py_name, entry, args, kwargs)
        if len(self.calls) >= self.limits.max_calls:
            raise RuntimeError(
                f"nested tool call budget exceeded: at most {self.limits.max_calls} per run_code"
            )
        record = NestedCall(tool=entry.tool.name, arguments=arguments, mutating=entry.tool.mutating)
        self.calls.append(record)
        level = logging.WARNING if record.mutating else logging.INFO
        mutating = {"mutating": True} if record.mutating else {}
        log_event("mcp.tool_call", level, via="code_mode", tool=record.tool, arguments=arguments, **mutating)
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        content = ""
        try:
            output = await asyncio.wait_for(
                self.inner.call_tool(record.tool, arguments), self.limits.tool_timeout
            )
            record.is_error, content = output.is_error, output.content
        except TimeoutError:
            record.is_error = True
            raise RuntimeError(f"tool {record.tool} timed out after {self.limits.tool_timeout:g}s") from None
        except asyncio.CancelledError:
            record.is_error, content = True, "cancelled"
            raise
        except Exception as exc:  # an executor bug must still reach the snippet as a catchable error
            record.is_error = True
            raise RuntimeError(f"tool error: {type(exc).__name__}: {exc}") from None
        finally:
            if task is not None:
                self._tasks.discard(task)
            record.bytes = len(content.encode())
            # Every call gets its result line, so a mutating call is never logged half (A6).
            log_event(
                "mcp.tool_result",
                level,
                via="code_mode",
                tool=record.tool,
                is_error=record.is_error,
                bytes=record.bytes,
                content=decoded_or_preview(content),
                **mutating,
            )
        if record.is_error:
            raise RuntimeError(content)
        return content

    def deny_os(self, **kwargs: Any) -> None:
        """The sandbox's ``os=`` handler for snippets: counted, then refused."""
        self._count_suspension()
        refuse_os(**kwargs)

    def cancel_in_flight(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    def audit(self) -> dict[str, Any]:
        return {"nested_calls": [call.audit() for call in self.calls]}
