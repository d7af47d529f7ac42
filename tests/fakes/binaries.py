"""Programs some tests need from the machine: skipped with the reason where they are missing,
failed under CI (``.ci/run`` and ``make test`` provide them there)."""

from __future__ import annotations

import os
import shutil

import pytest


def require(name: str, why: str) -> str:
    """The path of ``name``; a skip saying ``why`` when it is missing (a failure under CI)."""
    found = shutil.which(name)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is missing in CI: {why}")
        pytest.skip(f"{name} is not installed: {why}")
    return found
