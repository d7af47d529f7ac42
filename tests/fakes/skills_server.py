"""An MCP server that serves skills over SEP-2640, for tests: ``python tests/fakes/skills_server.py``.

It declares ``io.modelcontextprotocol/skills`` and answers ``skills/list`` (two pages) and
``skills/get``; each file is a ``skill://`` resource. Skills: ``clock`` (instructions and a Python
file whose function calls the server's ``utc_hour`` tool), ``tampered`` (its SKILL.md's listed digest is not
its content's; its reference file's is) and ``outer`` (a nested skill ``outer/inner`` inside it, listed on its own).
"""

from __future__ import annotations

import hashlib
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import MCPServer
from mcp.types import RequestParams, ToolAnnotations

CLOCK_MD = "---\nname: clock\ndescription: The hour in UTC, from the server.\n---\n# Clock\n\nload_skill, then hour().\n"
CLOCK_PY = "async def hour() -> int:\n    return (await utc_hour())['hour']\n"
TAMPERED_MD = "---\nname: tampered\ndescription: Its digest lies.\n---\nDo something else.\n"
OUTER_MD = "---\nname: outer\ndescription: Holds a nested skill.\n---\nOuter.\n"
INNER_MD = "---\nname: inner\ndescription: The nested one.\n---\nInner.\n"
INNER_PY = "def inner_fn():\n    return 'inner ran'\n"

FILES: dict[str, str] = {
    "skill://clock/SKILL.md": CLOCK_MD,
    "skill://clock/scripts/clock.py": CLOCK_PY,
    "skill://tampered/SKILL.md": TAMPERED_MD,
    "skill://tampered/references/notes.md": "Notes that match their digest.\n",
    "skill://outer/SKILL.md": OUTER_MD,
    "skill://outer/inner/SKILL.md": INNER_MD,
    "skill://outer/inner/scripts/inner.py": INNER_PY,
}
SKILLS = {  # SKILL.md uri -> (frontmatter, file uris)
    "skill://clock/SKILL.md": (
        {"name": "clock", "description": "The hour in UTC, from the server."},
        ["skill://clock/SKILL.md", "skill://clock/scripts/clock.py"],
    ),
    "skill://tampered/SKILL.md": (
        {"name": "tampered", "description": "Its digest lies."},
        ["skill://tampered/SKILL.md", "skill://tampered/references/notes.md"],
    ),
    "skill://outer/SKILL.md": (
        {"name": "outer", "description": "Holds a nested skill."},
        ["skill://outer/SKILL.md", "skill://outer/inner/SKILL.md", "skill://outer/inner/scripts/inner.py"],
    ),
    "skill://outer/inner/SKILL.md": (
        {"name": "inner", "description": "The nested one."},
        ["skill://outer/inner/SKILL.md", "skill://outer/inner/scripts/inner.py"],
    ),
}


def entry(uri: str) -> dict[str, Any]:
    frontmatter, files = SKILLS[uri]
    resources = []
    for file in files:
        data = FILES[file].encode()
        lies = file == "skill://tampered/SKILL.md"
        digest = hashlib.sha256(b"not what is served" if lies else data).hexdigest()
        resources.append({"uri": file, "digest": f"sha256:{digest}", "size": len(data)})
    return {"uri": uri, "frontmatter": frontmatter, "resources": resources}


class ListParams(RequestParams):
    cursor: str | None = None


class GetParams(RequestParams):
    uri: str


class Skills(Extension):
    identifier = "io.modelcontextprotocol/skills"

    def methods(self) -> list[MethodBinding]:
        return [
            MethodBinding("skills/list", ListParams, self.list),
            MethodBinding("skills/get", GetParams, self.get),
        ]

    async def list(self, ctx: ServerRequestContext[Any, Any], params: ListParams) -> dict[str, Any]:
        uris = list(SKILLS)
        page, rest = (uris[:2], uris[2:]) if params.cursor is None else (uris[2:], [])
        result: dict[str, Any] = {"skills": [entry(uri) for uri in page], "ttlMs": 0, "cacheScope": "public"}
        if rest:
            result["nextCursor"] = "page-2"
        return result

    async def get(self, ctx: ServerRequestContext[Any, Any], params: GetParams) -> dict[str, Any]:
        return {"skill": entry(params.uri), "ttlMs": 0, "cacheScope": "public"}


def build() -> MCPServer:
    server = MCPServer("skills", version="0.0.1", extensions=[Skills()])

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def utc_hour() -> dict[str, int]:
        """A fixed hour, so tests can check it."""
        return {"hour": 7}

    for uri, text in FILES.items():
        mime = "text/markdown" if uri.endswith(".md") else "text/x-python"
        server.resource(uri, mime_type=mime)(_reader(text))
    return server


def _reader(text: str) -> Any:
    def read() -> str:
        return text

    return read


if __name__ == "__main__":
    build().run()
