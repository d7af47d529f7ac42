"""``asyncai sessions``: the sessions recorded for this directory, the most recently active first."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

from asyncai.cli.settings import Settings

if TYPE_CHECKING:
    from asyncai.transcripts import SessionInfo

HEADER = ("SESSION", "LAST ACTIVITY", "TURNS", "FIRST PROMPT")


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    subparsers.add_parser(
        "sessions",
        help="list the sessions recorded for this directory",
        description="Lists the sessions recorded for this directory (continue one with --resume UUID, "
        "or the first with -c).",
    )


def render(sessions: list[SessionInfo]) -> str:
    rows = [HEADER] + [
        (
            info.session_id,
            info.last_activity.astimezone().strftime("%Y-%m-%d %H:%M"),
            str(info.turns),
            info.first_prompt,
        )
        for info in sessions
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1]), row[2].rjust(widths[2]), row[3]]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


async def run(settings: Settings, out: TextIO = sys.stdout) -> int:
    from asyncai.cli.sessions import working_directory  # the transcripts: only to list them
    from asyncai.transcripts import list_sessions, project_dir, project_dirs

    cwd = working_directory()
    directory = project_dir(cwd)
    sessions = list_sessions(project_dirs(cwd))
    if not sessions:
        print(f"no sessions recorded for {cwd} (they are kept in {directory})", file=out)
        return 0
    print(render(sessions), file=out)
    return 0
