"""Skills an MCP server serves (SEP-2640, ``io.modelcontextprotocol/skills``): listed with
``skills/list`` (every page), each file read with ``resources/read`` and verified against the
entry's digest and size; ``SKILL.md``'s frontmatter must be the entry's, field by field."""

from __future__ import annotations

import base64
import logging
from collections.abc import Sequence
from typing import Any, Protocol

from asyncai.log import log_event
from asyncai.skills.skill import (
    SKILL_FILE,
    Skill,
    SkillError,
    SkillFile,
    check_name,
    check_size,
    split_skill_md,
    verified,
)

MAX_PAGES = 100
"""``skills/list`` pages read at most (a server whose cursor never ends is not followed forever)."""


class SkillServer(Protocol):
    """What ``ServerSkills`` needs of an MCP connection (``McpConnection``)."""

    @property
    def name(self) -> str: ...

    async def extension_request(self, method: str, params: dict[str, Any]) -> dict[str, Any]: ...

    async def read_resource(self, uri: str) -> list[dict[str, Any]]: ...


class ServerSkills:
    """The skills of one MCP server; its name is their origin."""

    def __init__(self, server: SkillServer) -> None:
        self.server = server
        self.origin = server.name

    async def skills(self) -> list[Skill]:
        found: list[Skill] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            try:
                page = await self.server.extension_request(
                    "skills/list", {"cursor": cursor} if cursor else {}
                )
            except Exception as exc:  # a server whose listing fails offers no skills, said once
                log_event("skills.list_failed", logging.WARNING, server=self.origin, error=str(exc))
                return found
            for entry in page.get("skills") or []:
                try:
                    found.append(skill_of(entry, self.origin))
                except SkillError as exc:
                    log_event("skills.skipped", logging.WARNING, server=self.origin, reason=str(exc))
            cursor = page.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                break
        return found

    async def read(self, skill: Skill, path: str) -> bytes:
        skill.file(path)  # only what the entry lists is read
        uri = f"{root_of(skill.uri)}/{path}"
        try:
            parts = await self.server.read_resource(uri)
        except Exception as exc:
            raise SkillError(f"skill {skill.name!r} ({self.origin}): cannot read {path}: {exc}") from None
        try:
            data = verified(skill, path, b"".join(_bytes(part) for part in parts))
            if path == SKILL_FILE and dict(split_skill_md(data.decode("utf-8"))[0]) != dict(
                skill.frontmatter
            ):
                raise SkillError(
                    f"skill {skill.name!r} ({self.origin}): its SKILL.md's frontmatter is not the "
                    "listed one; it is not used"
                )
        except (SkillError, UnicodeDecodeError) as exc:
            log_event(
                "skills.refused", logging.WARNING, server=self.origin, skill=skill.name, reason=str(exc)
            )
            raise SkillError(str(exc)) from None
        return data


def skill_sources(servers: Sequence[Any]) -> list[ServerSkills]:
    """A source for each connected server that declares the skills extension."""
    return [ServerSkills(server) for server in servers if getattr(server, "offers_skills", False)]


def root_of(uri: str) -> str:
    return uri.removesuffix(f"/{SKILL_FILE}")


def skill_of(entry: Any, origin: str) -> Skill:
    """A ``skills/list`` or ``skills/get`` entry as a ``Skill``; ``SkillError`` for one that must
    not be loaded (no complete manifest, a name that is not its path's last segment...)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("uri"), str):
        raise SkillError(f"an entry without a uri: {str(entry)[:100]}")
    uri: str = entry["uri"]
    frontmatter = entry.get("frontmatter")
    if not uri.endswith(f"/{SKILL_FILE}") or not isinstance(frontmatter, dict):
        raise SkillError(f"{uri}: not the entry of a SKILL.md with its frontmatter")
    name, description = frontmatter.get("name"), frontmatter.get("description")
    if not isinstance(name, str) or not isinstance(description, str):
        raise SkillError(f"{uri}: its frontmatter has no name or description")
    root = root_of(uri)
    check_name(name, root.rsplit("/", 1)[-1].removeprefix("skill:"))
    resources = entry.get("resources")
    if resources == "dynamic":
        raise SkillError(f"{uri}: its content is dynamic, so it cannot be verified; it is not loaded")
    if not isinstance(resources, list):
        raise SkillError(f"{uri}: no manifest of its files")
    files = []
    for resource in resources:
        file_uri = resource.get("uri") if isinstance(resource, dict) else None
        digest, size = (
            (resource.get("digest"), resource.get("size")) if isinstance(resource, dict) else (None, None)
        )
        if not isinstance(file_uri, str) or not file_uri.startswith(f"{root}/"):
            raise SkillError(f"{uri}: a listed file is not in the skill: {str(file_uri)[:100]}")
        if not isinstance(digest, str) or not digest.startswith("sha256:") or type(size) is not int:
            raise SkillError(f"{uri}: {file_uri} has no sha256 digest and size")
        files.append(SkillFile(file_uri[len(root) + 1 :], size, digest))
    manifest = tuple(files)
    if SKILL_FILE not in {file.path for file in manifest}:
        raise SkillError(f"{uri}: its manifest does not list SKILL.md")
    check_size(name, manifest)
    return Skill(name, description.strip(), frontmatter, origin, uri, manifest)


def _bytes(part: dict[str, Any]) -> bytes:
    if isinstance(part.get("text"), str):
        return str(part["text"]).encode("utf-8")
    return base64.b64decode(str(part.get("data", "")))
