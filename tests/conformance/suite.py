"""What the client-mode and server-mode harnesses share: a scenario run at one spec version, which
versions each scenario runs at, and how a case is marked (skipped with its reason, or a strict
xfail while it should pass but does not yet)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

REVISIONS = ("2025-11-25", "2026-07-28")
"""The spec revisions the suite's requirement sets (its ``requirements/*.yaml``) are for."""


@dataclass(frozen=True)
class Case:
    scenario: str
    version: str | None
    """The ``--spec-version`` it runs at; None for an extension scenario (not on the timeline)."""

    @property
    def id(self) -> str:
        return f"{self.scenario}@{self.version or 'extension'}"


def cases(
    scenarios: Mapping[str, tuple[str, ...]], newest_only: Callable[[str], bool] = lambda _: False
) -> list[Case]:
    """Each scenario at each revision it applies to (else its latest version; ``newest_only``: only
    the newest of those); an extension scenario once, without a version."""
    found = []
    for scenario, versions in scenarios.items():
        if versions == ("extension",):
            found.append(Case(scenario, None))
            continue
        wires = [v for v in versions if v in REVISIONS] or [versions[-1]]
        for version in wires[-1:] if newest_only(scenario) else wires:
            found.append(Case(scenario, version))
    return found


def case_param(case: Case, skipped: Mapping[str, str], why_skipped: str, not_yet: Mapping[str, str]) -> Any:
    marks: list[pytest.MarkDecorator] = []
    if case.scenario in skipped:
        marks.append(pytest.mark.skip(reason=f"{why_skipped}: {skipped[case.scenario]}"))
    reason = not_yet.get(case.id) or not_yet.get(case.scenario)
    if reason is not None:
        marks.append(pytest.mark.xfail(strict=True, reason=f"not yet: {reason}"))
    return pytest.param(case, id=case.id, marks=marks)
