"""A skill as asyncai holds it: an Agent Skills directory (``SKILL.md`` with YAML frontmatter, then
instructions; supporting files beside it), known by its frontmatter and a manifest of its files
with SHA-256 digests, as SEP-2640's ``Skill`` entry has it. Pure functions; no I/O."""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import yaml

SKILL_FILE: Final = "SKILL.md"
MAX_FILES: Final = 512
MAX_BYTES: Final = 16 * 1024 * 1024
"""SEP-2640's per-skill limits: files (``SKILL.md`` included) and their total size."""
_NAME: Final = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_FRONTMATTER: Final = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


class SkillError(Exception):
    """A skill that cannot be used: one line saying why."""


@dataclass(frozen=True)
class SkillFile:
    """One file of a skill: its path in the skill's directory (``/``-separated), size and digest."""

    path: str
    size: int
    digest: str
    """``sha256:`` and 64 lowercase hex digits of the file's bytes."""


@dataclass(frozen=True)
class Skill:
    """A skill from one origin (``local``, ``saved``, or an MCP server's name)."""

    name: str
    description: str
    frontmatter: Mapping[str, Any]
    """Verbatim, every field the author wrote."""
    origin: str
    uri: str
    """Of its ``SKILL.md`` (``skill://<name>/SKILL.md`` for the skills asyncai serves itself)."""
    files: tuple[SkillFile, ...]

    def file(self, path: str) -> SkillFile:
        """The manifest entry of ``path``; ``SkillError`` when the skill has no such file."""
        for entry in self.files:
            if entry.path == path:
                return entry
        listed = ", ".join(entry.path for entry in self.files)
        raise SkillError(f"skill {self.name!r} has no file {path!r}; its files: {listed}")

    @property
    def python_files(self) -> tuple[str, ...]:
        """What ``load_skill`` runs, in order: ``scripts/*.py``, then top-level ``*.py``."""
        scripts = sorted(f.path for f in self.files if re.fullmatch(r"scripts/[^/]+\.py", f.path))
        top = sorted(f.path for f in self.files if re.fullmatch(r"[^/]+\.py", f.path))
        return (*scripts, *top)


def file_digest(data: bytes) -> str:
    return f"sha256:{hashlib.sha256(data).hexdigest()}"


def verified(skill: Skill, path: str, data: bytes) -> bytes:
    """``data`` when it is what the skill's manifest says ``path`` holds; else ``SkillError``."""
    entry = skill.file(path)
    if len(data) != entry.size or file_digest(data) != entry.digest:
        raise SkillError(
            f"skill {skill.name!r} ({skill.origin}): {path} does not match its digest "
            "(changed or tampered with since it was listed); it is not used"
        )
    return data


def split_skill_md(text: str) -> tuple[dict[str, Any], str]:
    """The YAML frontmatter (with ``name`` and ``description``) and the instructions after it."""
    text = text.removeprefix("\ufeff")
    match = _FRONTMATTER.match(text)
    if match is None:
        raise SkillError("SKILL.md does not begin with YAML frontmatter between --- lines")
    try:
        frontmatter = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        raise SkillError(f"SKILL.md's frontmatter is not YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(frontmatter, dict):
        raise SkillError("SKILL.md's frontmatter is not a mapping of fields")
    for key in ("name", "description"):
        if not isinstance(frontmatter.get(key), str) or not frontmatter[key].strip():
            raise SkillError(f"SKILL.md's frontmatter has no {key}")
    return frontmatter, text[match.end() :].lstrip("\n")


def check_name(name: str, directory: str) -> None:
    """The Agent Skills naming rules: lowercase letters, digits and single hyphens, at most 64
    characters, and the name of the skill's directory."""
    if len(name) > 64 or not _NAME.fullmatch(name):
        raise SkillError(f"skill name {name!r} is not lowercase letters, digits and single hyphens (≤ 64)")
    if name != directory:
        raise SkillError(f"skill name {name!r} is not its directory's name {directory!r}")


def check_size(name: str, files: tuple[SkillFile, ...]) -> None:
    total = sum(entry.size for entry in files)
    if len(files) > MAX_FILES or total > MAX_BYTES:
        raise SkillError(
            f"skill {name!r} has {len(files)} files of {total:,} bytes, over the limit of "
            f"{MAX_FILES} files and {MAX_BYTES:,} bytes"
        )


def defined_functions(source: str) -> list[str]:
    """The signature of each top-level function ``source`` defines (``async def f(x: int) -> str``)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    signatures = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
            returns = f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""
            signatures.append(f"{prefix} {node.name}({ast.unparse(node.args)}){returns}")
    return signatures


def saved_skill_files(name: str, description: str, functions: Mapping[str, str]) -> dict[str, str]:
    """The files of a skill the agent saves: a ``SKILL.md`` saying what it does and what it
    defines, and ``scripts/<name>.py`` with the functions' source, ready for ``load_skill``."""
    check_name(name, name)
    if not description.strip():
        raise SkillError("a skill needs a description: what it does and when to use it")
    if not functions:
        raise SkillError("a skill needs at least one function")
    source = "\n\n".join(text.rstrip() + "\n" for text in functions.values())
    frontmatter = yaml.safe_dump(
        {"name": name, "description": " ".join(description.split()), "metadata": {"saved-by": "asyncai"}},
        sort_keys=False,
        allow_unicode=True,
    )
    listed = "\n".join(f"- `{signature}`" for signature in defined_functions(source))
    body = (
        f"{' '.join(description.split())}\n\n"
        f'Load it with `await load_skill(name="{name}")`; it defines:\n\n{listed}\n'
    )
    return {SKILL_FILE: f"---\n{frontmatter}---\n\n{body}", f"scripts/{name.replace('-', '_')}.py": source}
