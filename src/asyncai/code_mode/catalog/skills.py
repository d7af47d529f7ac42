"""The skill functions of a snippet (issue 37): ``skills``, ``skill``, ``skill_file`` and
``load_skill`` once there is a skill to read, ``save_skill`` where skills can be saved (``offered``).

Like the resource functions they are answered by asyncai, not by a server: no call budget, no
audit; only ``save_skill``, a write, goes through the mutation gate. ``load_skill`` defines the
functions of a skill's Python files in the REPL: the engine feeds those files to the worker before
the snippet that loads the skill runs (``engine.skill_feed``), so the skill's code runs in the
sandbox, never on the host, and the call itself returns what they defined."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from asyncai.code_mode.engine.crossing import Payload
from asyncai.log import dumps_compact, log_event
from asyncai.skills.skill import SkillError
from asyncai.skills.skillset import SkillSet
from asyncai.tools.types import ToolDefinition

_NAME: Final = {"type": "string", "description": "the skill's name, as skills() lists it"}

SKILLS: Final = ToolDefinition(
    name="skills",
    description=(
        "The skills there are (instructions and code for tasks like this one): name, description, "
        "origin, and functions (true when load_skill defines functions). query keeps those whose "
        "name or description has every word of it."
    ),
    input_schema={"type": "object", "properties": {"query": {"type": "string"}}},
    output_schema={
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "description": {"type": "string"},
                "origin": {"type": "string"},
                "functions": {"type": "boolean"},
            },
            "required": ["name", "description", "origin", "functions"],
        },
    },
    read_only=True,
    positional=1,
)
SKILL: Final = ToolDefinition(
    name="skill",
    description="A skill's instructions: its SKILL.md without the frontmatter. Read them before you use it.",
    input_schema={"type": "object", "properties": {"name": _NAME}, "required": ["name"]},
    output_schema={"type": "string"},
    read_only=True,
    positional=1,
)
SKILL_FILE_FUNCTION: Final = ToolDefinition(
    name="skill_file",
    description="One file of a skill (a reference, an example, a script), by its path in the skill.",
    input_schema={
        "type": "object",
        "properties": {"name": _NAME, "path": {"type": "string", "description": 'e.g. "references/api.md"'}},
        "required": ["name", "path"],
    },
    output_schema={"type": "string"},
    read_only=True,
    positional=1,
)
LOAD_SKILL: Final = ToolDefinition(
    name="load_skill",
    description=(
        "Define a skill's Python functions in this REPL and return their signatures; call them "
        "like any function afterwards (they call the tools). Pass the name as a literal: "
        'await load_skill(name="report").'
    ),
    input_schema={"type": "object", "properties": {"name": _NAME}, "required": ["name"]},
    output_schema={"type": "array", "items": {"type": "string"}},
    read_only=True,
    positional=1,
)
SAVE_SKILL: Final = ToolDefinition(
    name="save_skill",
    description=(
        "Keep functions this REPL defined as a skill for later conversations: name (lowercase "
        "letters, digits and hyphens), what it does and when to use it, and the functions by "
        'name: await save_skill(name="order-total", description="...", functions=["total"]). '
        "Returns the saved skill's name and files."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "description": {"type": "string"},
            "functions": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["name", "description", "functions"],
    },
    output_schema={
        "type": "object",
        "properties": {"name": {"type": "string"}, "files": {"type": "array", "items": {"type": "string"}}},
    },
    read_only=False,
    destructive=False,
    positional=1,
)
READING: Final = {tool.name: tool for tool in (SKILLS, SKILL, SKILL_FILE_FUNCTION, LOAD_SKILL)}
SKILL_FUNCTIONS: Final = {**READING, SAVE_SKILL.name: SAVE_SKILL}


def offered(skills: SkillSet | None) -> dict[str, ToolDefinition]:
    """The skill functions snippets get: reading them once there is a skill (or may be one: saved
    by another process, or by a caller whose own skills the code mode does not list), saving where
    skills can be saved."""
    if skills is None:
        return {}
    functions = dict(READING) if skills.entries() or skills.shared or skills.per_caller else {}
    if skills.saving is not None:
        functions[SAVE_SKILL.name] = SAVE_SKILL
    return functions


NOT_LITERAL: Final = (
    "load_skill needs the skill's name written as a string literal, "
    'e.g. await load_skill(name="report"): its code is defined before the snippet runs'
)
_FUNCTION_VALUE: Final = re.compile(r"<function '(?P<name>[^']*)' at 0x[0-9a-f]+>")
"""How a function a snippet passes reaches the host (Monty gives its repr)."""


async def call_skill_function(
    skills: SkillSet,
    definition: ToolDefinition,
    arguments: dict[str, Any],
    loaded: Mapping[str, Any],
    functions: Mapping[str, str],
) -> Payload:
    """Answer a skill function; ``loaded`` is what the engine defined for each skill this snippet
    loads (its signatures, or the error that stopped it), ``functions`` the source of each
    function the REPL knows. A failure raises ``RuntimeError``."""
    try:
        await skills.ensure_loaded()
        name = str(arguments.get("name", ""))
        if definition is SKILLS:
            if skills.shared:
                await skills.refresh()  # another process may have saved one since
            value: Any = _listing(skills, str(arguments.get("query") or ""))
        elif definition is SKILL:
            value = await skills.instructions(name)
        elif definition is SKILL_FILE_FUNCTION:
            value = await skills.text(name, str(arguments["path"]))
        elif definition is SAVE_SKILL:
            value = await _saved(skills, name, arguments, functions)
        else:
            value = await _loaded(skills, name, loaded)
    except SkillError as exc:
        raise RuntimeError(str(exc)) from None
    except OSError as exc:  # a skills directory that cannot be read or written
        raise RuntimeError(f"skills: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")) from None
    return Payload("json", dumps_compact(value))


def _listing(skills: SkillSet, query: str) -> list[dict[str, Any]]:
    words = query.lower().split()
    return [
        {
            "name": name,
            "description": skill.description,
            "origin": skill.origin,
            "functions": bool(skill.python_files),
        }
        for name, skill in skills.entries()
        if all(word in f"{name} {skill.description}".lower() for word in words)
    ]


async def _saved(
    skills: SkillSet, name: str, arguments: Mapping[str, Any], functions: Mapping[str, str]
) -> dict[str, Any]:
    given = arguments.get("functions")
    if not isinstance(given, list) or not all(isinstance(item, str) for item in given):
        raise SkillError("functions must be a list of functions or their names, e.g. functions=[total]")
    wanted = [(found["name"] if (found := _FUNCTION_VALUE.fullmatch(item)) else item) for item in given]
    if "<lambda>" in wanted:
        raise SkillError("a lambda cannot be saved: define the function with def, then save it")
    unknown = [item for item in wanted if item not in functions]
    if unknown:
        known = ", ".join(sorted(functions)) or "none yet"
        raise SkillError(f"no function {unknown[0]!r} was defined by a snippet here (defined: {known})")
    skill = await skills.save(name, str(arguments.get("description", "")), {f: functions[f] for f in wanted})
    log_event("skills.saved", skill=skill.name, functions=wanted, origin=skill.origin)
    return {"name": skill.name, "files": [entry.path for entry in skill.files]}


async def _loaded(skills: SkillSet, name: str, loaded: Mapping[str, Any]) -> list[str]:
    if name not in loaded:
        await skills.current(name)  # an unknown name says which exist
        raise SkillError(NOT_LITERAL)
    outcome = loaded[name]
    if isinstance(outcome, str):
        raise SkillError(outcome)
    return list(outcome)
