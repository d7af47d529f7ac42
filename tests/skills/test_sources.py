"""``DirectorySkills`` and ``SkillSet`` over real directories."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from asyncai.skills.skill import SkillError
from asyncai.skills.skillset import SkillSet, skill_set
from asyncai.skills.sources import DirectorySkills
from tests.skills.conftest import write_skill

pytestmark = pytest.mark.anyio


async def test_each_directory_with_a_skill_md_is_a_skill_listed_with_its_files(tmp_path: Path) -> None:
    write_skill(
        tmp_path, "report", "Weekly report", "# Steps\n", {"scripts/make.py": "def make():\n    pass\n"}
    )
    (tmp_path / "report" / ".hidden").write_text("editor state")
    (tmp_path / "secret").write_text("host file")
    (tmp_path / "report" / "linked.md").symlink_to(tmp_path / "secret")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "key.txt").write_text("host file")
    (tmp_path / "report" / "linked-dir").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "not-a-skill").mkdir()
    [skill] = await DirectorySkills(tmp_path).skills()
    assert (skill.name, skill.description, skill.origin, skill.uri) == (
        "report",
        "Weekly report",
        "local",
        "skill://report/SKILL.md",
    )
    assert [f.path for f in skill.files] == ["SKILL.md", "scripts/make.py"], (
        "hidden files and links are not the skill's"
    )
    assert skill.files[1].size == len("def make():\n    pass\n")


async def test_a_nested_skill_is_a_supporting_file_of_its_parent(tmp_path: Path) -> None:
    parent = write_skill(tmp_path, "outer", "Outer", files={"notes.md": "n"})
    write_skill(parent, "inner", "Inner", files={"scripts/run.py": "def inner_fn():\n    pass\n"})
    [skill] = await DirectorySkills(tmp_path).skills()
    assert skill.name == "outer"
    assert "inner/SKILL.md" in [f.path for f in skill.files]
    assert skill.python_files == (), "loading the parent runs none of the nested skill's code"


async def test_a_skill_that_cannot_be_used_is_left_out_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_skill(tmp_path, "good", "Fine")
    write_skill(tmp_path, "Bad_Name", "Wrongly named")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "SKILL.md").write_text("no frontmatter\n")
    with caplog.at_level(logging.WARNING):
        skills = await DirectorySkills(tmp_path).skills()
    assert [skill.name for skill in skills] == ["good"]
    warned = " ".join(record.getMessage() for record in caplog.records)
    assert "skills.skipped" in warned and "Bad_Name" in warned and "broken" in warned


async def test_a_directory_that_does_not_exist_has_no_skills(tmp_path: Path) -> None:
    assert await DirectorySkills(tmp_path / "missing").skills() == []


async def test_a_file_changed_after_the_listing_is_refused(tmp_path: Path) -> None:
    write_skill(tmp_path, "report", "Weekly report", "# Steps\n")
    source = DirectorySkills(tmp_path)
    [skill] = await source.skills()
    assert await source.read(skill, "SKILL.md") == (tmp_path / "report" / "SKILL.md").read_bytes()
    (tmp_path / "report" / "SKILL.md").write_text("---\nname: report\ndescription: swapped\n---\nrm -rf\n")
    with pytest.raises(SkillError, match="does not match its digest"):
        await source.read(skill, "SKILL.md")
    with pytest.raises(SkillError, match="has no file"):
        await source.read(skill, "../../etc/passwd")


async def test_a_name_two_origins_share_is_qualified_for_both(tmp_path: Path) -> None:
    write_skill(tmp_path / "a", "report", "From a")
    write_skill(tmp_path / "a", "only-a", "Only in a")
    write_skill(tmp_path / "b", "report", "From b")
    skills = SkillSet([DirectorySkills(tmp_path / "a", "local"), DirectorySkills(tmp_path / "b", "saved")])
    await skills.refresh()
    assert skills.names() == ["local:report", "only-a", "saved:report"]
    assert await skills.instructions("saved:report") == ""
    with pytest.raises(SkillError, match="no skill named 'report'; did you mean"):
        skills.find("report")


def test_skills_are_given_as_a_skill_set_or_directories(tmp_path: Path) -> None:
    given = skill_set([tmp_path, str(tmp_path)], "CodeMode", "skills")
    assert given is not None and [type(s).__name__ for s in given.sources] == ["DirectorySkills"] * 2
    assert skill_set(None, "CodeMode", "skills") is None
    with pytest.raises(TypeError, match="CodeMode: skills must be a SkillSet or a list"):
        skill_set(str(tmp_path), "CodeMode", "skills")
    with pytest.raises(TypeError, match="skill directories"):
        skill_set([3], "CodeMode", "skills")


def test_a_skill_set_takes_directories_and_refuses_what_is_not_a_source(tmp_path: Path) -> None:
    """``SkillSet([path])`` reads the directory, as ``CodeMode(skills=[path])`` does; anything else is a
    one-line ``TypeError`` at the call, not an ``AttributeError`` when the skills are first listed."""
    assert [type(s).__name__ for s in SkillSet([tmp_path]).sources] == ["DirectorySkills"]
    with pytest.raises(TypeError, match=r"^SkillSet: sources must be skill directories .* not int 3$"):
        SkillSet([3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"^SkillSet: sources must be a list"):
        SkillSet(str(tmp_path))  # a str is a Sequence to the type checker, not a list here
