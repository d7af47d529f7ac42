"""Saved skills in Redis (``RedisSkills``): where a state store is Redis, the skills the agent saves
live there too, so every instance behind a balancer lists and loads them. Each skill is one key
holding its files (``asyncai:skill:<name>``, no expiry: a skill is kept until removed), and one set
holds the names. A caller's own saved skills have keys of their own
(``asyncai:caller:<caller>:skill:<name>``, ``asyncai:caller:<caller>:skills``)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

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
from asyncai.skills.sources import caller_key

NAMES_KEY = "asyncai:skills"
SKILL_PREFIX = "asyncai:skill:"


class RedisSkills:
    """``client`` is a ``redis.asyncio`` client (``RedisStore.client``)."""

    shared = True
    """Other processes add skills here at any time."""

    def __init__(self, client: Any, origin: str = "saved", caller: str | None = None) -> None:
        self.client = client
        self.origin = origin
        # ``caller``: whose saved skills these are (``None``: every caller's, shared).
        own = None if caller is None else f"asyncai:caller:{caller_key(caller)}:"
        self._names_key = NAMES_KEY if own is None else f"{own}skills"
        self._skill_prefix = SKILL_PREFIX if own is None else f"{own}skill:"

    def for_caller(self, caller: str) -> RedisSkills:
        return RedisSkills(self.client, self.origin, caller)

    async def skills(self) -> list[Skill]:
        try:
            names = sorted(
                name.decode() if isinstance(name, bytes) else str(name)
                for name in await self.client.smembers(self._names_key)
            )
            stored = await self.client.mget([self._skill_prefix + name for name in names]) if names else []
        except Exception as exc:  # a store that fails lists nothing, said once
            log_event("skills.list_failed", logging.WARNING, store="redis", error=str(exc))
            return []
        found = []
        for name, blob in zip(names, stored, strict=True):
            if blob is None:
                continue  # removed between the two reads
            try:
                found.append(self._skill(name, _files(blob)))
            except (SkillError, ValueError) as exc:
                log_event("skills.skipped", logging.WARNING, skill=name, reason=str(exc))
        return found

    async def read(self, skill: Skill, path: str) -> bytes:
        skill.file(path)
        blob = await self.client.get(self._skill_prefix + skill.name)
        files = _files(blob) if blob is not None else {}
        data = files.get(path, "").encode("utf-8")
        try:
            return verified(skill, path, data)
        except SkillError as exc:
            log_event("skills.refused", logging.WARNING, store="redis", skill=skill.name, reason=str(exc))
            raise

    async def save(self, name: str, description: str, functions: Mapping[str, str]) -> Skill:
        files = saved_skill_files(name, description, functions)
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.set(self._skill_prefix + name, json.dumps(files))
            pipe.sadd(self._names_key, name)
            await pipe.execute()
        return self._skill(name, files)

    async def remove(self, name: str) -> bool:
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.delete(self._skill_prefix + name)
            pipe.srem(self._names_key, name)
            deleted, _ = await pipe.execute()
        return bool(deleted)

    def _skill(self, name: str, files: Mapping[str, str]) -> Skill:
        check_name(name, name)
        frontmatter, _ = split_skill_md(files.get(SKILL_FILE, ""))
        check_name(str(frontmatter["name"]), name)
        manifest = tuple(
            SkillFile(path, len(data), file_digest(data))
            for path, data in sorted((path, text.encode("utf-8")) for path, text in files.items())
        )
        check_size(name, manifest)
        return Skill(
            name,
            str(frontmatter["description"]).strip(),
            frontmatter,
            self.origin,
            f"skill://{name}/{SKILL_FILE}",
            manifest,
        )


def _files(blob: bytes | str) -> dict[str, str]:
    files = json.loads(blob)
    if not isinstance(files, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in files.items()
    ):
        raise ValueError("not a stored skill's files")
    return files
