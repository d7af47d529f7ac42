"""Skill directories written for a test."""

from __future__ import annotations

from pathlib import Path


def write_skill(
    root: Path, name: str, description: str, body: str = "", files: dict[str, str] | None = None
) -> Path:
    """A skill directory ``root/name`` with its SKILL.md and ``files`` (path -> text)."""
    directory = root / name
    directory.mkdir(parents=True)
    (directory / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}")
    for path, text in (files or {}).items():
        target = directory / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return directory
