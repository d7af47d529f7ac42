"""``serve-mcp`` serves the skills it knows (local and saved) over SEP-2640: it declares
``io.modelcontextprotocol/skills`` (with ``directoryRead``) and answers ``skills/list``, ``skills/get``,
``resources/list``, ``resources/read`` and ``resources/directory/read``, so Claude Code and other MCP
clients get the skills asyncai's agents wrote.

Each file is the resource ``skill://<name>/<path>`` (``skill://<origin>/<name>/...`` for a name two
origins share); skills that came from another MCP server are that server's to serve, not ours. Where
saved skills belong to their caller (``SkillSet.per_caller``), each request is answered with the
skills its caller sees."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import mcp.types as mt
from mcp import MCPError
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from asyncai.skills.skill import SKILL_FILE, Skill, SkillError
from asyncai.skills.skillset import Found, SkillSet
from asyncai.skills.sources import DirectorySkills
from asyncai.skills.stored import RedisSkills
from asyncai.tools.mcp.client import SKILLS_EXTENSION

DIRECTORY_MIME = "inode/directory"
"""How ``resources/directory/read`` marks a child that is itself a directory."""
TTL_MS = 0
"""The listing may change at any time (``save_skill``): clients are told to hold it no longer."""


class ListSkillsParams(mt.RequestParams):
    cursor: str | None = None


class GetSkillParams(mt.RequestParams):
    uri: str


class ReadDirectoryParams(mt.RequestParams):
    uri: str
    cursor: str | None = None


def directory_children(paths: list[str], directory: str) -> list[tuple[str, bool]] | None:
    """The direct children of ``directory`` (``""``: the skill's root) among a skill's file
    ``paths``, each with whether it is a directory, sorted; ``None`` when it is no directory."""
    prefix = f"{directory}/" if directory else ""
    children: dict[str, bool] = {}
    for path in paths:
        if path.startswith(prefix):
            head, _, rest = path[len(prefix) :].partition("/")
            children[head] = children.get(head, False) or bool(rest)
    return sorted(children.items()) if children else None


Caller = Callable[[ServerRequestContext[Any, Any]], str]
"""Who makes a request (``serve.server``: a hash of its bearer token)."""


class ServedSkills:
    def __init__(self, skills: SkillSet, caller: Caller) -> None:
        self.skills = skills
        self.caller = caller

    def served(self, ctx: ServerRequestContext[Any, Any] | None = None) -> dict[str, Found]:
        """The skills served (to ``ctx``'s caller), by the root URI of each (``skill://<name>``)."""
        skills = self._skills(ctx)
        served = {}
        for name, _ in skills.entries():
            found = skills.find(name)
            if isinstance(found.source, DirectorySkills | RedisSkills):
                served[f"skill://{name.replace(':', '/')}"] = found
        return served

    def _skills(self, ctx: ServerRequestContext[Any, Any] | None) -> SkillSet:
        return self.skills if ctx is None else self.skills.for_caller(self.caller(ctx))

    async def current(self, ctx: ServerRequestContext[Any, Any]) -> dict[str, Found]:
        """``served(ctx)``, listed again: saved ones change while it serves."""
        await self._skills(ctx).refresh()
        return self.served(ctx)

    async def serving(self, ctx: ServerRequestContext[Any, Any], uri: str) -> tuple[str, Found] | None:
        """The served skill whose root ``uri`` is or lies under, with that root; the skills are
        listed again only when none is (one saved since), not on every read."""
        skills = self._skills(ctx)
        await skills.ensure_loaded()
        for listed_again in (False, True):
            if listed_again:
                await skills.refresh()
            for root, found in self.served(ctx).items():
                if uri == root or uri.startswith(f"{root}/"):
                    return root, found
        return None

    async def list(self, ctx: ServerRequestContext[Any, Any], params: ListSkillsParams) -> dict[str, Any]:
        entries = [entry(root, found.skill) for root, found in (await self.current(ctx)).items()]
        return {"skills": entries, "ttlMs": TTL_MS, "cacheScope": "private"}

    async def get(self, ctx: ServerRequestContext[Any, Any], params: GetSkillParams) -> dict[str, Any]:
        root = params.uri.removesuffix(f"/{SKILL_FILE}")
        hit = await self.serving(ctx, root)
        if hit is None or hit[0] != root or not params.uri.endswith(f"/{SKILL_FILE}"):
            raise MCPError(mt.INVALID_PARAMS, f"no skill at {params.uri}")
        found = hit[1]
        return {"skill": entry(root, found.skill), "ttlMs": TTL_MS, "cacheScope": "private"}

    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListResourcesResult:
        resources = [
            mt.Resource(
                uri=f"{root}/{file.path}",
                name=found.skill.name if file.path == SKILL_FILE else file.path,
                description=found.skill.description if file.path == SKILL_FILE else None,
                mime_type="text/markdown" if file.path.endswith(".md") else None,
                size=file.size,
            )
            for root, found in (await self.current(ctx)).items()
            for file in found.skill.files
        ]
        return mt.ListResourcesResult(resources=resources)

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: mt.ReadResourceRequestParams
    ) -> mt.ReadResourceResult:
        uri = str(params.uri)
        hit = await self.serving(ctx, uri)
        if hit is None or hit[0] == uri:
            raise MCPError(mt.INVALID_PARAMS, f"no resource {uri}")
        root, found = hit
        try:
            data = await found.source.read(found.skill, uri[len(root) + 1 :])
        except SkillError as exc:
            raise MCPError(mt.INVALID_PARAMS, str(exc)) from None
        return mt.ReadResourceResult(contents=[_contents(uri, data)])

    async def read_directory(
        self, ctx: ServerRequestContext[Any, Any], params: ReadDirectoryParams
    ) -> dict[str, Any]:
        """SEP-2640's ``resources/directory/read``: a skill directory's direct children, one page."""
        uri = params.uri.rstrip("/")
        hit = await self.serving(ctx, uri)
        children = None
        if hit is not None:
            root, found = hit
            children = directory_children([f.path for f in found.skill.files], uri[len(root) + 1 :])
        if children is None:
            raise MCPError(mt.INVALID_PARAMS, f"not a skill directory: {params.uri}")
        resources = [
            {"uri": f"{uri}/{name}", "name": name, **({"mimeType": DIRECTORY_MIME} if is_dir else {})}
            for name, is_dir in children
        ]
        return {"resources": resources}


def entry(root: str, skill: Skill) -> dict[str, Any]:
    """SEP-2640's ``Skill`` entry: the SKILL.md's URI, its frontmatter verbatim, every file."""
    return {
        "uri": f"{root}/{SKILL_FILE}",
        "frontmatter": json.loads(json.dumps(dict(skill.frontmatter), default=str)),
        "resources": [{"uri": f"{root}/{f.path}", "digest": f.digest, "size": f.size} for f in skill.files],
    }


def serve_skills(server: Server[Any], skills: SkillSet, caller: Caller) -> bool:
    """Offer ``skills`` on ``server`` when it has any of its own, or saves them where other
    instances or callers do (then it declares the extension and the resources capability it
    needs); whether it did. ``caller`` says who makes a request."""
    served = ServedSkills(skills, caller)
    if not served.served() and not skills.shared and not skills.per_caller:
        return False
    server.extensions[SKILLS_EXTENSION] = {"directoryRead": True}
    server.add_request_handler("skills/list", ListSkillsParams, served.list)
    server.add_request_handler("skills/get", GetSkillParams, served.get)
    server.add_request_handler("resources/list", mt.PaginatedRequestParams, served.list_resources)
    server.add_request_handler("resources/read", mt.ReadResourceRequestParams, served.read_resource)
    server.add_request_handler("resources/directory/read", ReadDirectoryParams, served.read_directory)
    return True


def _contents(uri: str, data: bytes) -> mt.TextResourceContents | mt.BlobResourceContents:
    mime = "text/markdown" if uri.endswith(".md") else None
    try:
        return mt.TextResourceContents(uri=uri, text=data.decode("utf-8"), mime_type=mime)
    except UnicodeDecodeError:
        return mt.BlobResourceContents(uri=uri, blob=base64.b64encode(data).decode(), mime_type=mime)
