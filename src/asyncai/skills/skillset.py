"""``SkillSet``: the skills of every source, by the names snippets use.

A name two origins share is never resolved to one of them behind the model's back (SEP-2640: no
silent shadowing): each of those skills is then named ``origin:name``."""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from asyncai.arguments import refusal
from asyncai.skills.skill import SKILL_FILE, Skill, SkillError, split_skill_md
from asyncai.skills.sources import DirectorySkills, SkillSaver, SkillSource


@dataclass(frozen=True)
class Found:
    """A skill and the source that reads its files."""

    skill: Skill
    source: SkillSource


class SkillSet:
    """``saving``: where the skills the agent saves go (also one of the sources it lists). With
    ``per_caller`` each caller saves into a part of it of its own (``for_caller``), and this set
    lists only the other sources: what every caller shares."""

    def __init__(
        self,
        sources: Sequence[SkillSource | str | Path],
        saving: SkillSaver | None = None,
        *,
        per_caller: bool = False,
    ) -> None:
        self.sources = skill_sources(sources, "SkillSet", "sources")
        self.saving = saving
        self.per_caller = per_caller and saving is not None
        if saving is not None and saving not in self.sources and not self.per_caller:
            self.sources.append(saving)
        self._callers: dict[str, SkillSet] = {}
        self._by_name: dict[str, Found] | None = None
        self._verified: set[tuple[str, str, str]] = set()
        """``(origin, uri, SKILL.md digest)`` of each skill whose SKILL.md was read and verified."""

    def for_caller(self, caller: str | None) -> SkillSet:
        """The skills ``caller`` sees: the shared ones and its own saved ones, saving into its own
        part (the same set for every call of that caller); this set itself without ``per_caller``
        or without a caller (one user, or callers that cannot be told apart)."""
        if not self.per_caller or caller is None:
            return self
        if caller not in self._callers:
            assert self.saving is not None
            self._callers[caller] = SkillSet(self.sources, self.saving.for_caller(caller))
        return self._callers[caller]

    @property
    def shared(self) -> bool:
        """Other processes save skills where this one does (Redis): one may come at any time."""
        return self.saving is not None and self.saving.shared

    async def refresh(self) -> None:
        """List every source again (a source that fails lists nothing)."""
        listed = await asyncio.gather(*(source.skills() for source in self.sources))
        found = [
            Found(skill, source)
            for source, skills in zip(self.sources, listed, strict=True)
            for skill in skills
        ]
        counts: dict[str, int] = {}
        for item in found:
            counts[item.skill.name] = counts.get(item.skill.name, 0) + 1
        self._by_name = {
            item.skill.name
            if counts[item.skill.name] == 1
            else f"{item.skill.origin}:{item.skill.name}": item
            for item in found
        }

    async def ensure_loaded(self) -> None:
        if self._by_name is None:
            await self.refresh()

    def names(self) -> list[str]:
        return sorted(self._by_name or {})

    def entries(self) -> list[tuple[str, Skill]]:
        """Each skill by the name snippets use, sorted."""
        by_name = self._by_name or {}
        return [(name, by_name[name].skill) for name in sorted(by_name)]

    def find(self, name: str) -> Found:
        by_name = self._by_name or {}
        if name in by_name:
            return by_name[name]
        close = difflib.get_close_matches(name, list(by_name), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        known = f" (skills: {', '.join(sorted(by_name)[:20])})" if by_name and not close else ""
        raise SkillError(f"no skill named {name!r}{hint}{known}")

    async def current(self, name: str) -> Found:
        """``find``, after listing again when ``name`` is not known (another process may have
        saved it since)."""
        try:
            return self.find(name)
        except SkillError:
            await self.refresh()
            return self.find(name)

    async def text(self, name: str, path: str) -> str:
        """One of a skill's files as text (verified). Another file than ``SKILL.md`` is read only
        once the skill's ``SKILL.md`` was (SEP-2640: a skill whose SKILL.md fails verification is
        not loaded, so none of its files is used)."""
        found = await self.current(name)
        data = await self._read(found, path)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise SkillError(f"skill {name!r}: {path} is not UTF-8 text ({len(data):,} bytes)") from None

    async def _read(self, found: Found, path: str) -> bytes:
        if path != SKILL_FILE and _identity(found.skill) not in self._verified:
            await self._read(found, SKILL_FILE)
        data = await found.source.read(found.skill, path)
        if path == SKILL_FILE:
            self._verified.add(_identity(found.skill))
        return data

    async def instructions(self, name: str) -> str:
        """The ``SKILL.md`` body: its instructions, without the frontmatter."""
        return split_skill_md(await self.text(name, SKILL_FILE))[1]

    async def save(self, name: str, description: str, functions: Mapping[str, str]) -> Skill:
        """Store a new skill (or replace a saved one of that name) and list the skills again."""
        if self.saving is None:
            raise SkillError("skills cannot be saved here: no directory for saved skills was given")
        if self.per_caller:
            raise SkillError("saved skills belong to a caller here, and this run has none")
        skill = await self.saving.save(name, description, functions)
        await self.refresh()
        return skill

    async def python_sources(self, name: str) -> list[tuple[str, str]]:
        """``(path, source)`` of each Python file ``load_skill`` runs, in order."""
        found = await self.current(name)
        return [(path, await self.text(name, path)) for path in found.skill.python_files]


def _identity(skill: Skill) -> tuple[str, str, str]:
    return (skill.origin, skill.uri, skill.file(SKILL_FILE).digest)


def skill_sources(value: object, owner: str, name: str) -> list[SkillSource]:
    """``value``'s skill sources (a directory path stands for ``DirectorySkills``); a one-line
    ``TypeError`` naming ``owner``'s ``name`` otherwise."""
    if isinstance(value, str | Path) or not isinstance(value, Sequence):
        raise TypeError(refusal(owner, name, "a list of skill directories and sources", value))
    sources: list[SkillSource] = []
    for item in value:
        if isinstance(item, str | Path):
            sources.append(DirectorySkills(Path(item).expanduser()))
        elif callable(getattr(item, "skills", None)) and callable(getattr(item, "read", None)):
            sources.append(item)
        else:
            raise TypeError(
                refusal(owner, name, "skill directories (str or Path) or SkillSource objects", item)
            )
    return sources


def skill_set(value: object, owner: str, name: str) -> SkillSet | None:
    """``value`` as a ``SkillSet``: one already, or sources (``skill_sources``); a one-line
    ``TypeError`` naming ``owner``'s ``name`` otherwise."""
    if value is None or isinstance(value, SkillSet):
        return value
    if isinstance(value, str | Path) or not isinstance(value, Sequence):
        raise TypeError(refusal(owner, name, "a SkillSet or a list of skill directories and sources", value))
    return SkillSet(skill_sources(value, owner, name))
