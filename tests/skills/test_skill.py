"""A skill's SKILL.md, names, digests and the files ``load_skill`` runs: pure rules."""

from __future__ import annotations

import hashlib
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from asyncai.skills.skill import (
    Skill,
    SkillError,
    SkillFile,
    check_name,
    defined_functions,
    file_digest,
    split_skill_md,
    verified,
)


def test_the_frontmatter_is_yaml_and_the_body_follows_it() -> None:
    text = "---\nname: report\ndescription: Make the weekly report\nmetadata:\n  version: '2'\n---\n\n# Report\nSteps.\n"
    frontmatter, body = split_skill_md(text)
    assert frontmatter == {
        "name": "report",
        "description": "Make the weekly report",
        "metadata": {"version": "2"},
    }
    assert body == "# Report\nSteps.\n"
    assert split_skill_md("\ufeff" + text) == (frontmatter, body), "a byte-order mark is not content"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("# no frontmatter\n", "does not begin with YAML frontmatter"),
        ("---\nname: [unclosed\n---\n", "is not YAML"),
        ("---\n- a list\n---\n", "not a mapping"),
        ("---\nname: x\n---\n", "has no description"),
        ("---\ndescription: d\n---\n", "has no name"),
        ("---\nname: x\ndescription: '  '\n---\n", "has no description"),
    ],
)
def test_a_skill_md_that_cannot_be_used_says_why(text: str, reason: str) -> None:
    with pytest.raises(SkillError, match=reason):
        split_skill_md(text)


@pytest.mark.parametrize("name", ["a", "pdf-processing", "v2-report", "x" * 64])
def test_names_as_agent_skills_allows_them(name: str) -> None:
    check_name(name, name)


@pytest.mark.parametrize("name", ["", "Report", "two--hyphens", "-lead", "trail-", "under_score", "x" * 65])
def test_names_agent_skills_refuses(name: str) -> None:
    with pytest.raises(SkillError, match="lowercase letters"):
        check_name(name, name)


def test_a_name_must_be_its_directorys() -> None:
    with pytest.raises(SkillError, match="not its directory's name 'other'"):
        check_name("report", "other")


@given(st.binary(max_size=200))
def test_a_file_is_verified_by_its_size_and_sha256(data: bytes) -> None:
    assert file_digest(data) == "sha256:" + hashlib.sha256(data).hexdigest()
    skill = _skill(SkillFile("SKILL.md", len(data), file_digest(data)))
    assert verified(skill, "SKILL.md", data) == data
    with pytest.raises(SkillError, match="does not match its digest"):
        verified(skill, "SKILL.md", data + b"!")


def test_a_file_the_manifest_does_not_list_is_refused() -> None:
    with pytest.raises(SkillError, match=re.escape("has no file 'secret.txt'; its files: SKILL.md")):
        _skill(SkillFile("SKILL.md", 0, file_digest(b""))).file("secret.txt")


def test_load_skill_runs_scripts_then_top_level_python_files() -> None:
    paths = [
        "SKILL.md",
        "b.py",
        "a.py",
        "scripts/z.py",
        "scripts/m.py",
        "scripts/deep/x.py",
        "nested/SKILL.md",
    ]
    skill = _skill(*(SkillFile(path, 0, file_digest(b"")) for path in paths))
    assert skill.python_files == ("scripts/m.py", "scripts/z.py", "a.py", "b.py")


def test_the_signatures_of_what_a_file_defines() -> None:
    source = "import json\n\nasync def total(rows: list[dict], key: str = 'n') -> int:\n    return 0\n\ndef _helper(x):\n    pass\nX = 1\n"
    assert defined_functions(source) == [
        "async def total(rows: list[dict], key: str='n') -> int",
        "def _helper(x)",
    ]
    assert defined_functions("def broken(:\n") == []


def _skill(*files: SkillFile) -> Skill:
    return Skill(
        "report", "d", {"name": "report", "description": "d"}, "local", "skill://report/SKILL.md", files
    )
