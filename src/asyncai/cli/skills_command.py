"""``asyncai skills``: the skills snippets can load, where each comes from (a directory, the saved
ones, or an MCP server given with ``--mcp-*``); ``show NAME`` prints one, ``rm NAME`` removes one the
agent saved."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, TextIO

from asyncai.cli.settings import Settings, UsageError, add_mcp_options, server_specs, skill_set

if TYPE_CHECKING:
    from asyncai.skills.skillset import SkillSet
    from asyncai.tools.mcp.client import McpConnection

HEADER = ("NAME", "ORIGIN", "DESCRIPTION")


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "skills",
        help="list the skills, show one, or remove one the agent saved",
        description="Lists the skills snippets can load (.claude/skills here and in ~/.claude, each "
        "--skills DIR, those the agent saved, and those the MCP servers given serve); `show NAME` prints "
        "one, `rm NAME` removes a saved one.",
    )
    parser.add_argument("skills_action", metavar="list|show|rm", nargs="?", help="what to do (list)")
    parser.add_argument("skills_name", metavar="NAME", nargs="?", help="the skill (show, rm)")
    parser.add_argument("--skills", action="append", metavar="DIR", help="a directory of skills (repeatable)")
    add_mcp_options(parser)


@contextlib.asynccontextmanager
async def connected(settings: Settings) -> AsyncIterator[list[McpConnection]]:
    """The configured MCP servers' connections, started; none (and nothing started) without any."""
    if not server_specs(settings):
        yield []
        return
    from asyncai.cli.wiring import mcp_executor  # the event loop's world: only to run

    async with mcp_executor(settings, sign_in="never", list_sign_in=True) as executor:
        yield list(executor.connections)


def render(skills: SkillSet) -> str:
    rows = [HEADER] + [
        (name, skill.origin, " ".join(skill.description.split())) for name, skill in skills.entries()
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    return "\n".join(
        f"{row[0].ljust(widths[0])}  {row[1].ljust(widths[1])}  {row[2]}".rstrip() for row in rows
    )


async def run(settings: Settings, out: TextIO = sys.stdout) -> int:
    action, name = settings.text("skills_action") or "list", settings.text("skills_name")
    if action not in ("list", "show", "rm"):
        raise UsageError(f"asyncai skills: {action!r} is not list, show or rm")
    if action != "list" and not name:
        raise UsageError(f"asyncai skills {action} needs the skill's name")
    async with connected(settings) as servers:
        return await _act(action, name, skill_set(settings, servers), out)


async def _act(action: str, name: str | None, skills: SkillSet, out: TextIO) -> int:
    from asyncai.skills.skill import SKILL_FILE, SkillError

    await skills.refresh()
    if action == "list":
        print(
            render(skills)
            if skills.entries()
            else "no skills (see `asyncai skills --help` for where they are read)",
            file=out,
        )
        return 0
    assert name is not None
    try:
        found = skills.find(name)
        if action == "show":
            print(await skills.text(name, SKILL_FILE), end="", file=out)
            print(f"\n[{found.skill.origin}: {', '.join(f.path for f in found.skill.files)}]", file=out)
            return 0
        if found.source is not skills.saving or skills.saving is None:
            raise SkillError(
                f"skill {name!r} is {found.skill.origin}, not one the agent saved: remove it yourself"
            )
        await skills.saving.remove(found.skill.name)
    except SkillError as exc:
        raise UsageError(str(exc)) from None
    print(f"removed {name}", file=out)
    return 0
