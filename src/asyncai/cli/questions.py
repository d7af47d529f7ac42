"""The person at the terminal answers what an MCP server asks (``--elicitation ask``,
``--sampling ask`` in the chat): a form field by field, typed as its schema says, a URL to open,
or whether a server may use the model.

    server everything asks: What is your name?
    answer? [y] fill in, [n] decline, [c] cancel: y
      name (text, required): Ada
      age (whole number) [30]:

An empty answer takes the field's default; end of input cancels.
"""

from __future__ import annotations

import math
import webbrowser
from typing import Any

from asyncai.cli.approval import TerminalAsker
from asyncai.cli.blocking import read_in_thread
from asyncai.tools.mcp.asking import FormAnswer, field_choices, form_problem

PREVIEW_CHARS = 500
_KINDS = {"string": "text", "integer": "whole number", "number": "number", "boolean": "yes/no"}


class _Cancelled(Exception):
    pass


def field_value(spec: dict[str, Any], text: str) -> Any:
    """The typed value of what the person typed for one field; ``ValueError`` saying what fits."""
    kind = spec.get("type")
    choices = _choices(spec)
    if kind == "array":
        allowed = _choices(spec.get("items") or {})
        values = [part.strip() for part in text.split(",") if part.strip()]
        bad = [value for value in values if allowed and value not in allowed]
        if bad:
            raise ValueError(f"choose from {', '.join(allowed)}")
        return values
    if choices:
        if text not in choices:
            raise ValueError(f"choose one of {', '.join(map(str, choices))}")
        return text
    if kind == "boolean":
        lowered = text.lower()
        if lowered in ("y", "yes", "true"):
            return True
        if lowered in ("n", "no", "false"):
            return False
        raise ValueError("answer yes or no")
    if kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise ValueError("a whole number, please") from None
    if kind == "number":
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            raise ValueError("a number, please")
        return number
    return text


def _choices(spec: dict[str, Any]) -> list[str]:
    return [str(choice) for choice in field_choices(spec)]


def _shown(value: Any) -> str:
    """A default as the person would type it."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


def _label(name: str, spec: dict[str, Any], required: bool) -> str:
    title = spec.get("title") or name
    kind = spec.get("type")
    choices = _choices(spec) or _choices(spec.get("items") or {})
    described = f"one of {', '.join(choices)}" if choices else _KINDS.get(str(kind), str(kind or "text"))
    if kind == "array":
        described = f"comma-separated, {described}"
    parts = [described] + (["required"] if required else [])
    default = f" [{_shown(spec['default'])}]" if "default" in spec else ""
    hint = f" - {spec['description']}" if spec.get("description") else ""
    return f"  {title} ({', '.join(parts)}){hint}{default}: "


class TerminalPerson(TerminalAsker):
    """``asking.Person`` at the terminal; the live display is cleared while it asks."""

    async def _line(self, question: str) -> str:
        try:
            return (await self._ask(question)).strip()
        except (EOFError, KeyboardInterrupt):
            raise _Cancelled from None

    async def _choose(self, question: str, answers: dict[str, str]) -> str:
        while True:
            answer = await self._line(question)
            if answer in answers:
                return answers[answer]
            question = f"please answer {', '.join(a for a in answers if a)}: "

    async def fill_form(self, server: str, message: str, schema: dict[str, Any]) -> FormAnswer:
        with self._pause():
            try:
                return await self._fill(server, message, schema)
            except _Cancelled:
                return FormAnswer("cancel")

    async def _fill(self, server: str, message: str, schema: dict[str, Any]) -> FormAnswer:
        print(f"server {server} asks: {message}")
        action = await self._choose(
            "answer? [y] fill in, [n] decline, [c] cancel: ",
            {"y": "accept", "yes": "accept", "n": "decline", "no": "decline", "": "decline", "c": "cancel"},
        )
        if action != "accept":
            return FormAnswer("decline" if action == "decline" else "cancel")
        properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        required = set(schema.get("required") or [])
        content: dict[str, Any] = {}
        for name, spec in (properties or {}).items():
            spec = spec if isinstance(spec, dict) else {}
            question = _label(name, spec, name in required)
            while True:
                text = await self._line(question)
                if not text:
                    if "default" in spec:
                        content[name] = spec["default"]
                    elif name in required:
                        question = f"  {name} is required: "
                        continue
                    break
                try:
                    content[name] = field_value(spec, text)
                    break
                except ValueError as exc:
                    question = f"  {exc}: "
        problem = form_problem(schema, content)
        if problem is not None:
            print(f"the answer does not fit the form ({problem}): cancelled")
            return FormAnswer("cancel")
        return FormAnswer("accept", content)

    async def visit_url(self, server: str, message: str, url: str, elicitation_id: str | None) -> FormAnswer:
        with self._pause():
            print(f"server {server} asks you to open a page: {message}\n  {url}")
            try:
                action = await self._choose(
                    "open it? [y] open in the browser, [n] decline, [c] cancel: ",
                    {"y": "accept", "yes": "accept", "n": "decline", "": "decline", "c": "cancel"},
                )
            except _Cancelled:
                return FormAnswer("cancel")
        if action == "accept":
            await read_in_thread(webbrowser.open, url)
        return FormAnswer("accept" if action == "accept" else action)  # type: ignore[arg-type]

    async def allow_sampling(self, server: str, preview: str) -> bool:
        shown = preview if len(preview) <= PREVIEW_CHARS else preview[:PREVIEW_CHARS] + "…"
        with self._pause():
            print(f"server {server} wants the model to answer:\n  {shown}")
            try:
                return (
                    await self._choose("allow? [y] yes, [n] no: ", {"y": "y", "yes": "y", "n": "n", "": "n"})
                ) == "y"
            except _Cancelled:
                return False
