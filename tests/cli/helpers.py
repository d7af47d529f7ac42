"""Helpers shared by the cli tests: running ``asyncai`` on a pseudo-terminal, finding and reading
the session transcripts it writes, and checking one-line usage errors."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import uuid
from pathlib import Path
from typing import Any

from tests.cli.conftest import BIN, SIMPLE, CliResult, asyncai
from tests.fakes.openai_server import ScriptedOpenAI


def assert_one_line_usage_error(result: CliResult, *needles: str) -> None:
    assert result.status == 2, result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("asyncai: "), result.stderr
    assert all(needle in result.stderr for needle in needles), result.stderr


def on_a_terminal(
    args: list[str], typed: str, state: Path, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``asyncai`` (in ``cwd``) with a pty as stdin (so it sees a terminal) and type ``typed``;
    input history and saved REPLs go under ``state`` (XDG_STATE_HOME), never into the real home."""
    master, slave = pty.openpty()
    try:
        process = subprocess.Popen(
            [str(BIN / "asyncai"), *args],
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "XDG_STATE_HOME": str(state)},
            cwd=cwd,
        )
        os.write(master, typed.encode())
        out, err = process.communicate(timeout=90)
    finally:
        os.close(slave)
        os.close(master)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def sessions_dir(claude_dir: Path, project: Path) -> Path:
    return claude_dir / "projects" / re.sub(r"[^a-zA-Z0-9]", "-", str(project))


def session_of(result: CliResult) -> str:
    [line] = [line for line in result.stderr.splitlines() if line.startswith("session: ")]
    session_id = line.removeprefix("session: ")
    assert str(uuid.UUID(session_id)) == session_id
    return session_id


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def ask(model: ScriptedOpenAI, project: Path, *args: str, stdin: str | None = None) -> CliResult:
    return asyncai(
        "--base-url", model.base_url, "--model", "m", "--mcp-stdio", SIMPLE, *args, cwd=project, stdin=stdin
    )
