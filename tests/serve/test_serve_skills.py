"""``serve-mcp`` serves its local and saved skills over SEP-2640 (issue 37): the extension is
declared, ``skills/list`` and ``skills/get`` answer in the SEP's shapes (checked field by field),
and an SDK client reads a skill's files through ``resources/read``, matching the listed digests."""

from __future__ import annotations

import contextlib
import hashlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp.types as mt
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client, MCPError
from mcp.client.stdio import stdio_client

from asyncai.serve.skills import directory_children
from asyncai.tools.mcp.client import _AnyResult
from tests.fakes.redis import redis_server
from tests.serve.helpers import ENV, SIMPLE, Ran, client, run_code, serve_http, stdio_params
from tests.skills.conftest import write_skill

SERVER = f"echo={sys.executable} {Path(__file__).resolve().parent.parent / 'fakes' / 'mcp_test_server.py'}"
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def served(tmp_path: Path, work: Any) -> Any:
    """``work(client)``'s value, against ``serve-mcp`` with a skills directory."""
    write_skill(
        tmp_path / "skills",
        "report",
        "Weekly report for the team.",
        "# Report\n\nSteps.\n",
        {"scripts/report.py": "def title():\n    return 'Weekly'\n", "references/style.md": "Be brief.\n"},
    )
    params = stdio_params(
        "--mcp-stdio",
        SERVER,
        "--skills",
        str(tmp_path / "skills"),
        env={"XDG_DATA_HOME": str(tmp_path / "data")},
    )
    params = params.model_copy(update={"cwd": str(tmp_path)})
    out: list[Any] = []

    async def session() -> None:
        with anyio.fail_after(60):  # the SDK's default client: 2026-07-28, where extensions are declared
            async with Client(stdio_client(params)) as client:
                out.append(await work(client))

    anyio.run(session)
    return out[0]


async def request(client: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    result = await client.session.send_request(mt.Request[Any, Any](method=method, params=params), _AnyResult)
    return dict(result.model_extra or {})


def check_skill_entry(skill: Any) -> None:
    """SEP-2640's ``Skill``: uri, frontmatter (name, description), resources with digest and size."""
    assert set(skill) == {"uri", "frontmatter", "resources"}
    assert isinstance(skill["uri"], str) and skill["uri"].endswith("/SKILL.md")
    frontmatter = skill["frontmatter"]
    assert isinstance(frontmatter["name"], str) and isinstance(frontmatter["description"], str)
    assert skill["uri"].removesuffix("/SKILL.md").rsplit("/", 1)[-1] == frontmatter["name"]
    assert isinstance(skill["resources"], list) and skill["uri"] in [r["uri"] for r in skill["resources"]]
    for resource in skill["resources"]:
        assert set(resource) == {"uri", "digest", "size"}
        assert resource["uri"].startswith(skill["uri"].removesuffix("SKILL.md"))
        assert DIGEST.fullmatch(resource["digest"]) and type(resource["size"]) is int


def test_skills_list_and_get_have_the_seps_shapes_and_resources_read_matches(tmp_path: Path) -> None:
    async def work(client: Client) -> Any:
        capabilities = client.server_capabilities
        assert capabilities is not None and capabilities.extensions is not None
        assert capabilities.extensions["io.modelcontextprotocol/skills"] == {"directoryRead": True}
        assert capabilities.resources is not None, "the extension needs the resources capability"
        listed = await request(client, "skills/list", {})
        got = await request(client, "skills/get", {"uri": "skill://report/SKILL.md"})
        reads = {
            r["uri"]: (await client.read_resource(r["uri"])).contents[0] for r in got["skill"]["resources"]
        }
        try:
            await request(client, "skills/get", {"uri": "skill://nope/SKILL.md"})
        except MCPError as exc:
            missing = exc.code
        directories = {
            uri: (await request(client, "resources/directory/read", {"uri": uri}))["resources"]
            for uri in ("skill://report", "skill://report/scripts")
        }
        try:
            await request(client, "resources/directory/read", {"uri": "skill://report/SKILL.md"})
        except MCPError as exc:
            not_a_directory = exc.code
        return listed, got, reads, missing, directories, not_a_directory

    listed, got, reads, missing, directories, not_a_directory = served(tmp_path, work)
    assert directories == {
        "skill://report": [
            {"uri": "skill://report/SKILL.md", "name": "SKILL.md"},
            {"uri": "skill://report/references", "name": "references", "mimeType": "inode/directory"},
            {"uri": "skill://report/scripts", "name": "scripts", "mimeType": "inode/directory"},
        ],
        "skill://report/scripts": [{"uri": "skill://report/scripts/report.py", "name": "report.py"}],
    }  # fmt: skip
    assert not_a_directory == mt.INVALID_PARAMS
    assert isinstance(listed["ttlMs"], int) and listed["cacheScope"] in ("public", "private")
    [skill] = listed["skills"]
    check_skill_entry(skill)
    assert skill["frontmatter"] == {"name": "report", "description": "Weekly report for the team."}
    check_skill_entry(got["skill"])
    assert got["skill"] == skill and isinstance(got["ttlMs"], int)
    assert sorted(r["uri"] for r in skill["resources"]) == [
        "skill://report/SKILL.md", "skill://report/references/style.md", "skill://report/scripts/report.py",
    ]  # fmt: skip
    for resource in skill["resources"]:
        contents = reads[resource["uri"]]
        assert isinstance(contents, mt.TextResourceContents)
        data = contents.text.encode()
        assert (len(data), f"sha256:{hashlib.sha256(data).hexdigest()}") == (
            resource["size"],
            resource["digest"],
        )
    assert reads["skill://report/SKILL.md"].text.startswith("---\nname: report\n")
    assert missing == mt.INVALID_PARAMS


def test_without_skills_serve_mcp_declares_neither_the_extension_nor_resources(tmp_path: Path) -> None:
    async def work(client: Client) -> Any:
        return client.server_capabilities

    params = stdio_params("--mcp-stdio", SERVER, env={"XDG_DATA_HOME": str(tmp_path / "data")})
    params = params.model_copy(update={"cwd": str(tmp_path)})
    out: list[Any] = []

    async def session() -> None:
        async with Client(stdio_client(params)) as client:
            out.append(await work(client))

    anyio.run(session)
    [capabilities] = out
    assert capabilities.resources is None and not (capabilities.extensions or {}).get(
        "io.modelcontextprotocol/skills"
    )


def test_a_skill_saved_through_one_instance_loads_on_another(tmp_path: Path) -> None:
    """With Redis as the state store, saved skills live there: two instances, one saves, the
    other (running since before) lists it, loads it and serves it."""
    (tmp_path / "redis").mkdir()
    with redis_server(tmp_path / "redis") as store:
        args = ("--state-store", store.url, "--mcp-stdio", SIMPLE)
        env = {**ENV, "XDG_DATA_HOME": str(tmp_path / "data")}
        with serve_http(*args, env=env) as first, serve_http(*args, env=env) as second:

            async def work() -> tuple[Ran, Ran, list[str]]:
                async with client(first.url) as one:
                    saved = await run_code(
                        one,
                        "def twice(n):\n    return 2 * n\n"
                        'await save_skill(name="doubler", description="Double a number.", functions=["twice"])',
                    )
                async with client(second.url) as other:
                    used = await run_code(other, 'await load_skill(name="doubler")\ntwice(21)')
                    listed = await request(other, "skills/list", {})
                return saved, used, [skill["uri"] for skill in listed["skills"]]

            saved, used, uris = anyio.run(work)
    assert saved.content["value"] == {"name": "doubler", "files": ["SKILL.md", "scripts/doubler.py"]}
    assert used.content["value"] == 42
    assert uris == ["skill://doubler/SKILL.md"]
    assert not (tmp_path / "data" / "asyncai" / "skills").exists(), "saved in Redis, not in a directory"


@given(st.lists(st.from_regex(r"[a-c]{1,2}(/[a-c]{1,2}){0,3}", fullmatch=True), min_size=1, max_size=12))
def test_a_directorys_children_are_the_next_segment_of_the_paths_under_it(paths: list[str]) -> None:
    """Each child is a directory exactly when some path continues below it, and walking the children
    from the root reaches every path once."""
    paths = sorted(set(paths))
    paths = [p for p in paths if not any(q.startswith(f"{p}/") for q in paths)]  # a file is no directory
    reached: list[str] = []

    def walk(directory: str) -> None:
        children = directory_children(paths, directory)
        assert children is not None and children == sorted(children)
        for name, is_directory in children:
            path = f"{directory}/{name}" if directory else name
            assert is_directory == any(p.startswith(f"{path}/") for p in paths)
            if is_directory:
                walk(path)
            else:
                reached.append(path)

    walk("")
    assert sorted(reached) == paths
    assert all(directory_children(paths, p) is None for p in paths)


SAVE_DOUBLER = (
    "def twice(n):\n    return 2 * n\n"
    'await save_skill(name="doubler", description="Double a number.", functions=["twice"])'
)


@dataclass
class Seen:
    """What one caller sees of the skills on one instance."""

    listed: list[str]
    """By ``skills()`` in a snippet."""
    served: list[str]
    """By ``skills/list``."""
    loaded: Any
    read: bool
    """Whether ``resources/read`` of the skill's SKILL.md answered."""


async def seen(url: str, token: str) -> Seen:
    async with client(url, token) as session:
        listed = await run_code(session, "[s['name'] for s in await skills()]")
        served = await request(session, "skills/list", {})
        loaded = await run_code(session, 'await load_skill(name="doubler")\ntwice(21)')
        try:
            await session.read_resource("skill://doubler/SKILL.md")
            read = True
        except MCPError:
            read = False
    return Seen(listed.content["value"], [s["uri"] for s in served["skills"]], loaded.content, read)


@pytest.mark.parametrize("store", ["redis", "directory"])
@pytest.mark.parametrize("sharing", [False, True])
def test_a_callers_saved_skill_is_its_own_on_every_instance(
    tmp_path: Path, store: str, sharing: bool
) -> None:
    """Two callers (a token each): what A's model saves, A lists, serves and loads, on either of two
    instances over Redis, and B does not (unless --share-saved-skills); the same on one instance
    saving into a directory (which other processes do not watch). Both see the local skill."""
    (tmp_path / "tokens").write_text("token-of-a\ntoken-of-b\n")
    write_skill(tmp_path / "skills", "house-style", "How we write.")
    (tmp_path / "redis").mkdir()
    env = {**ENV, "XDG_DATA_HOME": str(tmp_path / "data")}
    with contextlib.ExitStack() as stack:
        args = [
            "--token-file",
            str(tmp_path / "tokens"),
            "--mcp-stdio",
            SIMPLE,
            "--skills",
            str(tmp_path / "skills"),
        ]
        if store == "redis":
            args += ["--state-store", stack.enter_context(redis_server(tmp_path / "redis")).url]
        if sharing:
            args.append("--share-saved-skills")
        first = stack.enter_context(serve_http(*args, env=env))
        second = stack.enter_context(serve_http(*args, env=env)) if store == "redis" else first

        async def work() -> tuple[Ran, dict[str, Seen]]:
            async with client(first.url, "token-of-a") as session:
                saved = await run_code(session, SAVE_DOUBLER)
            views = {}
            for who, token in (("a", "token-of-a"), ("b", "token-of-b")):
                for where, served in (("first", first), ("second", second)):
                    views[f"{who} on {where}"] = await seen(served.url, token)
            return saved, views

        saved, views = anyio.run(work)
    assert saved.content["value"] == {"name": "doubler", "files": ["SKILL.md", "scripts/doubler.py"]}
    for view, got in views.items():
        sees = view.startswith("a") or sharing
        names = ["doubler", "house-style"] if sees else ["house-style"]
        assert (got.listed, got.served, got.read) == (
            names,
            [f"skill://{name}/SKILL.md" for name in names],
            sees,
        ), view
        assert got.loaded.get("value") == 42 if sees else "no skill named 'doubler'" in got.loaded["error"], (
            view
        )
    saved_dir = tmp_path / "data" / "asyncai" / "skills"
    if store == "directory":  # under the caller's own directory, named by its token's hash
        own = sorted(saved_dir.glob(".callers/token-*/doubler"))
        assert (len(own), (saved_dir / "doubler").is_dir()) == ((0, True) if sharing else (1, False))
    else:
        assert not saved_dir.exists(), "saved in Redis, not in a directory"
