"""The set-up's cache of asyncai's dependencies as wheels from the package index, so the packaging
test installs the built wheel into a fresh environment as a user would, without the network:
``python -m tests.packaging.wheelhouse DIR`` (``make`` runs it when pyproject.toml changes)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WHEELHOUSE = ROOT / ".venv" / "wheelhouse"


def dependencies() -> list[str]:
    """The requirements a user's install resolves: pyproject.toml's ``dependencies``."""
    return list(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])


def main() -> None:
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else WHEELHOUSE
    target.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "-d", str(target)]
    subprocess.run([*command, *dependencies()], check=True)


if __name__ == "__main__":
    main()
