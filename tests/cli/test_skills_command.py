"""``asyncai skills``: list every skill with its origin, show one, remove one the agent saved."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.cli.conftest import asyncai
from tests.skills.conftest import write_skill


def test_list_show_and_remove(tmp_path: Path) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    saved = tmp_path / "data" / "asyncai" / "skills"
    write_skill(
        saved,
        "doubler",
        "Double a number.",
        "Load it.\n",
        {"scripts/doubler.py": "def twice(n):\n    return 2 * n\n"},
    )
    write_skill(tmp_path / "mine", "report", "Weekly  report  for the team.")
    write_skill(tmp_path / ".claude" / "skills", "here", "A project's skill.")
    listed = asyncai("skills", "--skills", str(tmp_path / "mine"), env=env, cwd=tmp_path)
    assert listed.status == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        "NAME     ORIGIN  DESCRIPTION",
        "doubler  saved   Double a number.",
        "here     local   A project's skill.",
        "report   local   Weekly report for the team.",
    ]
    shown = asyncai("skills", "show", "doubler", env=env, cwd=tmp_path)
    assert shown.status == 0 and "Load it.\n" in shown.stdout
    assert shown.stdout.rstrip().endswith("[saved: SKILL.md, scripts/doubler.py]")
    refused = asyncai("skills", "rm", "report", "--skills", str(tmp_path / "mine"), env=env, cwd=tmp_path)
    assert refused.status == 2 and "skill 'report' is local, not one the agent saved" in refused.stderr
    assert (tmp_path / "mine" / "report").is_dir()
    removed = asyncai("skills", "rm", "doubler", env=env, cwd=tmp_path)
    assert (removed.status, removed.stdout) == (0, "removed doubler\n")
    assert not (saved / "doubler").exists()


def test_bad_input_is_one_line_and_status_2(tmp_path: Path) -> None:
    for argv, message in [
        (("skills", "show"), "asyncai skills show needs the skill's name"),
        (("skills", "frob"), "'frob' is not list, show or rm"),
        (("skills", "show", "nope"), "no skill named 'nope'"),
        (("skills", "--skills", str(tmp_path / "missing")), "not a directory"),
    ]:
        result = asyncai(*argv, env={"XDG_DATA_HOME": str(tmp_path)}, cwd=tmp_path)
        assert result.status == 2 and message in result.stderr and len(result.stderr.splitlines()) == 1, (
            result.stderr
        )


def test_the_skills_of_the_mcp_servers_given_are_listed_and_shown_with_their_origin(tmp_path: Path) -> None:
    """Beside the local ones, a server's skills (SEP-2640) with the server as origin; showing one
    reads and verifies its SKILL.md, and a tampered one is refused in one line."""
    server = (
        f"skills={sys.executable} {Path(__file__).resolve().parent.parent / 'fakes' / 'skills_server.py'}"
    )
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    write_skill(tmp_path / ".claude" / "skills", "here", "A project's skill.")
    listed = asyncai("skills", "--mcp-stdio", server, env=env, cwd=tmp_path)
    assert listed.status == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        "NAME      ORIGIN  DESCRIPTION",
        "clock     skills  The hour in UTC, from the server.",
        "here      local   A project's skill.",
        "inner     skills  The nested one.",
        "outer     skills  Holds a nested skill.",
        "tampered  skills  Its digest lies.",
    ]
    shown = asyncai("skills", "show", "clock", "--mcp-stdio", server, env=env, cwd=tmp_path)
    assert shown.status == 0 and shown.stdout.rstrip().endswith("[skills: SKILL.md, scripts/clock.py]")
    refused = asyncai("skills", "show", "tampered", "--mcp-stdio", server, env=env, cwd=tmp_path)
    *logged, error = refused.stderr.splitlines()  # the log's warning event, then the error
    assert refused.status == 2 and error.startswith("asyncai: skill 'tampered' (skills): SKILL.md does not")
    assert [json.loads(line)["event"] for line in logged] == ["skills.refused"]
