"""Where skills come from, behind one small protocol: ``SkillSource`` lists skills and reads their
files, each read checked against the digest the listing gave. ``DirectorySkills`` is a directory of
skill directories on this machine (``.claude/skills``, ``~/.claude/skills``, ``--skills DIR``)."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from asyncai.log import log_event
from asyncai.skills.skill import (
    SKILL_FILE,
    Skill,
    SkillError,
    SkillFile,
    check_name,
    check_size,
    file_digest,
    saved_skill_files,
    split_skill_md,
    verified,
)


def saved_skills_dir() -> Path:
    """Where the skills the agent saves go: ``$XDG_DATA_HOME/asyncai/skills`` (else
    ``~/.local/share/asyncai/skills``)."""
    data = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return Path(data) / "asyncai" / "skills"


class SkillSource(Protocol):
    origin: str
    """Where its skills come from, as the model and the user read it (``local``, a server's name)."""

    async def skills(self) -> list[Skill]:
        """Every skill it offers now; one that cannot be used is left out with a warning."""
        ...

    async def read(self, skill: Skill, path: str) -> bytes:
        """The bytes of one of ``skill``'s files, verified against its manifest (``SkillError``)."""
        ...


class SkillSaver(SkillSource, Protocol):
    """Where the skills the agent saves go: a directory, or Redis (``stored.RedisSkills``)."""

    shared: bool
    """Other processes add skills there while this one runs (so snippets are always offered the
    functions that read skills)."""

    async def save(self, name: str, description: str, functions: Mapping[str, str]) -> Skill: ...

    async def remove(self, name: str) -> bool: ...

    def for_caller(self, caller: str) -> SkillSaver:
        """The part of it that holds one caller's saved skills, apart from every other caller's."""
        ...


CALLERS_DIR = ".callers"
"""Under a saved-skills directory, one directory per caller (hidden: it holds no skill itself)."""


def caller_key(caller: str) -> str:
    """``caller`` (``token:<hash>``) as a name safe for a directory or a Redis key."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", caller)


class DirectorySkills:
    """Each directory under ``root`` that holds a ``SKILL.md`` is a skill; a ``SKILL.md`` deeper
    down belongs to its enclosing skill as a supporting file (a nested skill is never activated by
    loading its parent)."""

    shared = False

    def __init__(self, root: Path, origin: str = "local") -> None:
        self.root = root
        self.origin = origin

    async def skills(self) -> list[Skill]:
        return await asyncio.to_thread(self._scan)

    async def read(self, skill: Skill, path: str) -> bytes:
        skill.file(path)  # a path the manifest does not list is never opened
        data = await asyncio.to_thread((self.root / skill.name / path).read_bytes)
        try:
            return verified(skill, path, data)
        except SkillError as exc:
            log_event(
                "skills.refused", logging.WARNING, directory=str(self.root), skill=skill.name, reason=str(exc)
            )
            raise

    async def save(self, name: str, description: str, functions: Mapping[str, str]) -> Skill:
        """Write the skill ``name`` (replacing one of that name here) whose Python file holds
        ``functions`` (name -> source); the skill as listed."""
        files = saved_skill_files(name, description, functions)
        await asyncio.to_thread(self._write, name, files)
        return await asyncio.to_thread(self._skill, self.root / name)

    def for_caller(self, caller: str) -> DirectorySkills:
        return DirectorySkills(self.root / CALLERS_DIR / caller_key(caller), self.origin)

    async def remove(self, name: str) -> bool:
        """Delete the skill ``name`` from here; False when there is none."""
        directory = self.root / name
        if not (directory / SKILL_FILE).is_file():
            return False
        await asyncio.to_thread(shutil.rmtree, directory)
        return True

    def _write(self, name: str, files: Mapping[str, str]) -> None:
        """All files or none: written beside, then swapped in."""
        self.root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=self.root))
        for path, text in files.items():
            target = staging / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        final = self.root / name
        old = None
        if final.exists():
            old = self.root / f".{name}-replaced-{os.getpid()}"
            final.rename(old)
        staging.rename(final)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)

    def _scan(self) -> list[Skill]:
        try:
            directories = sorted(entry for entry in self.root.iterdir() if entry.is_dir())
        except OSError:
            return []  # no such directory: no skills from it
        found = []
        for directory in directories:
            if not (directory / SKILL_FILE).is_file():
                continue
            try:
                found.append(self._skill(directory))
            except (SkillError, OSError, UnicodeDecodeError) as exc:
                log_event("skills.skipped", logging.WARNING, directory=str(directory), reason=str(exc))
        return found

    def _skill(self, directory: Path) -> Skill:
        files = []
        real = directory.resolve()
        for path in sorted(directory.rglob("*")):
            inside = path.relative_to(directory).parts
            # A link could lead anywhere on the host: a skill is the files in its own directory.
            if not path.is_file() or any(part.startswith(".") for part in inside):
                continue
            if path.is_symlink() or not path.resolve().is_relative_to(real):
                continue
            data = path.read_bytes()
            files.append(SkillFile(path.relative_to(directory).as_posix(), len(data), file_digest(data)))
        frontmatter, _ = split_skill_md((directory / SKILL_FILE).read_text(encoding="utf-8"))
        name = str(frontmatter["name"])
        check_name(name, directory.name)
        manifest = tuple(files)
        check_size(name, manifest)
        return Skill(
            name=name,
            description=str(frontmatter["description"]).strip(),
            frontmatter=frontmatter,
            origin=self.origin,
            uri=f"skill://{name}/{SKILL_FILE}",
            files=manifest,
        )
