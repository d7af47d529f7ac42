"""Saved skills in Redis (``RedisSkills``): where a state store is Redis, the skills the agent saves
live there too, so every instance behind a balancer lists and loads them. Each skill is one key
holding its files (``asyncai:skill:<name>``, no expiry: a skill is kept until removed), and one set
holds the names."""

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

NAMES_KEY = "asyncai:skills"
SKILL_PREFIX = "asyncai:skill:"


class RedisSkills:
    """``client`` is a ``redis.asyncio`` client (``RedisStore.client``)."""

    shared = True
    """Other processes add skills here at any time."""

    def __init__(self, client: Any, origin: str = "saved") -> None:
        self.client = client
        self.origin = origin

    async def skills(self) -> list[Skill]:
        try:
            names = sorted(
                name.decode() if isinstance(name, bytes) else str(name)
                for name in await self.client.smembers(NAMES_KEY)
            )
            stored = await self.client.mget([SKILL_PREFIX + name for name in names]) if names else []
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
        blob = await self.client.get(SKILL_PREFIX + skill.name)
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
            pipe.set(SKILL_PREFIX + name, json.dumps(files))
            pipe.sadd(NAMES_KEY, name)
            await pipe.execute()
        return self._skill(name, files)

    async def remove(self, name: str) -> bool:
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.delete(SKILL_PREFIX + name)
            pipe.srem(NAMES_KEY, name)
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
