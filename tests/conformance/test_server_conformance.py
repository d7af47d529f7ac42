"""The official MCP conformance suite (npm ``@modelcontextprotocol/conformance``, pinned in
``tests/third_party``) in server mode against ``asyncai serve-mcp --http``: one test per scenario and
spec revision.

One ``asyncai serve-mcp --http 127.0.0.1:0 --no-auth --mcp-stdio asyncai-mcp-simple`` serves the whole
module (the suite sends no token, hence ``--no-auth`` on loopback), and a second one with a skill
(``--skills``) serves the skills scenarios (SEP-2640): skills bring the resources capability, which
the other scenarios judge the first one without; for each scenario the suite's
``conformance server --url URL --scenario NAME`` talks to it and judges what it saw on the wire. A test
passes when the suite finished, no check failed or warned (but for the ``EXCUSED_CHECKS``), and at
least one check other than the generic ``wire-schema-valid`` succeeded.

Many server scenarios assume the suite's own "everything" server: its named fixture tools
(``test_simple_text``, ``slow_compute``, ...), prompts, resources, completion and logging. serve-mcp
offers one tool, ``run_code``, so those scenarios are ``NOT_APPLICABLE`` (skipped), and the checks of
otherwise applicable scenarios that need such a fixture are ``EXCUSED_CHECKS``. ``NOT_YET`` lists
what applies but fails today (strict xfail: a fix shows as XPASS, a failure, until the entry goes).

Versions are picked as in the client harness: each of ``2025-11-25`` and ``2026-07-28`` the scenario
applies to, else its latest, an extension scenario without one. The scenarios run in the background
as soon as the first test asks, two at a time; their results stay under pytest's temporary directory
(``checks.json``, ``runner.log``).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

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
from tests.serve.helpers import ENV, SIMPLE, serve_http

SCENARIO_TIMEOUT = 30.0
"""The suite's limit per scenario (its default)."""
RUN_TIMEOUT = SCENARIO_TIMEOUT + 30.0
"""For the whole suite process."""
WORKERS = 2
"""Scenarios at once: each is about 1 s, mostly the suite's Node starting."""
GENERIC = "wire-schema-valid"
"""A check every scenario reports; it alone says nothing of the scenario."""

SCENARIOS: dict[str, tuple[str, ...]] = {
    "server-initialize": ("2025-06-18", "2025-11-25"),
    "server-session-lifecycle": ("2025-03-26", "2025-06-18", "2025-11-25"),
    "server-stateless": ("2026-07-28",),
    "logging-set-level": ("2025-06-18", "2025-11-25"),
    "ping": ("2025-06-18", "2025-11-25"),
    "completion-complete": ("2025-06-18", "2025-11-25", "2026-07-28"),
    "tools-list": ("2025-06-18", "2025-11-25", "2026-07-28"),
    "tools-call-simple-text": ("2025-06-18", "2025-11-25", "2026-07-28"),
    "tools-call-image": ("2025-06-18", "2025-11-25", "2026-07-28"),
    "tools-call-audio": ("2025-06-18", "2025-11-25", "2026-07-28"),
    "tools-call-embedded-resource": ("2025-06-18", "2025-11-25", "2026-07-28"),
    "tools-call-mixed-content": ("2025-06-18", "2025-11-25", "2026-07-28"),
    "tools-call-with-logging": ("2025-06-18", "2025-11-25"),
    "tools-call-error": ("2025-06-18", "2025-11-25", "2026-07-28"),
    "tools-call-with-progress": ("2025-06-18", "2025-11-25", "2026-07-28"),
    "tools-call-sampling": ("2025-06-18", "2025-11-25"),
    "tools-call-elicitation": ("2025-06-18", "2025-11-25"),
    "json-schema-2020-12": ("2025-11-25", "2026-07-28"),
    "elicitation-sep1034-defaults": ("2025-11-25",),
    "server-sse-polling": ("2025-11-25",),
    "server-sse-multiple-streams": ("2025-11-25", "2026-07-28"),
    "elicitation-sep1330-enums": ("2025-11-25",),
    "resources-list": ("2025-06-18", "2025-11-25", "2026-07-28"),
    "resources-read-text": ("2025-06-18", "2025-11-25", "2026-07-28"),
    "resources-read-binary": ("2025-06-18", "2025-11-25", "2026-07-28"),
    "resources-templates-read": ("2025-06-18", "2025-11-25", "2026-07-28"),
    "resources-subscribe": ("2025-06-18", "2025-11-25"),
    "resources-unsubscribe": ("2025-06-18", "2025-11-25"),
    "sep-2164-resource-not-found": ("2026-07-28",),
    "sep-2640-skills-directory": ("extension",),
    "sep-2640-skills-enumeration": ("extension",),
    "sep-2640-skills-manifest": ("extension",),
    "prompts-list": ("2025-06-18", "2025-11-25", "2026-07-28"),
    "prompts-get-simple": ("2025-06-18", "2025-11-25", "2026-07-28"),
    "prompts-get-with-args": ("2025-06-18", "2025-11-25", "2026-07-28"),
    "prompts-get-embedded-resource": ("2025-06-18", "2025-11-25", "2026-07-28"),
    "prompts-get-with-image": ("2025-06-18", "2025-11-25", "2026-07-28"),
    "dns-rebinding-protection": ("2025-11-25", "2026-07-28"),
    "caching": ("2026-07-28",),
    "http-header-validation": ("2026-07-28",),
    "http-custom-header-server-validation": ("2026-07-28",),
    "tasks-lifecycle": ("extension",),
    "tasks-capability-negotiation": ("extension",),
    "tasks-wire-fields": ("extension",),
    "tasks-request-state-removal": ("extension",),
    "tasks-mrtr-input": ("extension",),
    "tasks-request-headers": ("extension",),
    "tasks-dispatch-and-envelope": ("extension",),
    "tasks-status-notifications": ("extension",),
    "tasks-required-task-error": ("extension",),
    "tasks-mrtr-composition": ("extension",),
    "input-required-result-basic-elicitation": ("2026-07-28",),
    "input-required-result-basic-sampling": ("2026-07-28",),
    "input-required-result-basic-list-roots": ("2026-07-28",),
    "input-required-result-request-state": ("2026-07-28",),
    "input-required-result-multiple-input-requests": ("2026-07-28",),
    "input-required-result-multi-round": ("2026-07-28",),
    "input-required-result-missing-input-response": ("2026-07-28",),
    "input-required-result-non-tool-request": ("2026-07-28",),
    "input-required-result-result-type": ("2026-07-28",),
    "input-required-result-unsupported-methods": ("2026-07-28",),
    "input-required-result-tampered-state": ("2026-07-28",),
    "input-required-result-capability-check": ("2026-07-28",),
    "input-required-result-ignore-extra-params": ("2026-07-28",),
    "input-required-result-validate-input": ("2026-07-28",),
}
"""Every server scenario of the pinned suite with the versions it applies to, as ``conformance list``
prints them (``test_the_scenario_table_is_the_suites`` keeps the two equal)."""


def _tool(name: str) -> str:
    return f"calls the suite's fixture tool {name}; serve-mcp offers run_code only"


_NO_PROMPTS = "serve-mcp offers no prompts (no prompts capability; prompts/* are Method not found)"
_NO_RESOURCES = "serve-mcp offers no resources (no resources capability; resources/* are Method not found)"
_TASK_FIXTURES = "every check drives the suite's task fixture tools ({}); serve-mcp offers run_code only"
NOT_APPLICABLE: dict[str, str] = {
    "logging-set-level": "serve-mcp declares no logging capability (logging/setLevel is Method not found)",
    "completion-complete": "serve-mcp offers no prompts or resource templates to complete (no completions capability)",
    "tools-call-simple-text": _tool("test_simple_text"),
    "tools-call-image": _tool("test_image_content"),
    "tools-call-audio": _tool("test_audio_content"),
    "tools-call-embedded-resource": _tool("test_embedded_resource"),
    "tools-call-mixed-content": _tool("test_multiple_content_types"),
    "tools-call-with-logging": _tool("test_tool_with_logging") + ", and declares no logging capability",
    "tools-call-error": _tool("test_error_handling"),
    "tools-call-with-progress": _tool("test_tool_with_progress"),
    "tools-call-sampling": _tool("test_sampling"),
    "tools-call-elicitation": _tool("test_elicitation"),
    "json-schema-2020-12": "looks for the suite's fixture tool json_schema_2020_12_tool; serve-mcp offers run_code only",
    "elicitation-sep1034-defaults": _tool("test_elicitation_sep1034_defaults"),
    "elicitation-sep1330-enums": _tool("test_elicitation_sep1330_enums"),
    "resources-list": _NO_RESOURCES,
    "resources-read-text": _NO_RESOURCES,
    "resources-read-binary": _NO_RESOURCES,
    "resources-templates-read": _NO_RESOURCES,
    "resources-subscribe": _NO_RESOURCES,
    "resources-unsubscribe": _NO_RESOURCES,
    "sep-2164-resource-not-found": (
        _NO_RESOURCES + ", so resources/read of an unknown URI is rightly -32601, not SEP-2164's -32602"
    ),
    "prompts-list": _NO_PROMPTS,
    "prompts-get-simple": _NO_PROMPTS,
    "prompts-get-with-args": _NO_PROMPTS,
    "prompts-get-embedded-resource": _NO_PROMPTS,
    "prompts-get-with-image": _NO_PROMPTS,
    "http-custom-header-server-validation": (
        "needs a tool whose input schema declares x-mcp-header parameters (SEP-2243); run_code declares none"
    ),
    # serve-mcp serves the tasks extension for run_code (tests/serve/test_tasks.py checks these rules on
    # it); the scenarios below reach it only through their fixture tools.
    "tasks-lifecycle": _TASK_FIXTURES.format("greet, slow_compute, failing_job, protocol_error_job"),
    "tasks-wire-fields": _TASK_FIXTURES.format("slow_compute"),
    "tasks-request-state-removal": _TASK_FIXTURES.format("slow_compute"),
    "tasks-mrtr-input": _TASK_FIXTURES.format("confirm_delete, multi_input"),
    "tasks-mrtr-composition": _TASK_FIXTURES.format("test_tool_with_task"),
    "tasks-required-task-error": _TASK_FIXTURES.format("failing_job, which must require a task"),
    "tasks-status-notifications": "the suite skips it itself (pending its subscriptions/listen rewrite)",
    "input-required-result-basic-elicitation": _tool("test_input_required_result_elicitation"),
    "input-required-result-basic-sampling": _tool("test_input_required_result_sampling"),
    "input-required-result-basic-list-roots": _tool("test_input_required_result_list_roots"),
    "input-required-result-request-state": _tool("test_input_required_result_request_state"),
    "input-required-result-multiple-input-requests": _tool("test_input_required_result_multiple_inputs"),
    "input-required-result-multi-round": _tool("test_input_required_result_multi_round"),
    "input-required-result-missing-input-response": _tool("test_input_required_result_elicitation"),
    "input-required-result-non-tool-request": "calls prompts/get for the suite's prompt; " + _NO_PROMPTS,
    "input-required-result-result-type": _tool("test_input_required_result_elicitation"),
    "input-required-result-tampered-state": _tool("test_input_required_result_tampered_state"),
    "input-required-result-capability-check": _tool("test_input_required_result_capabilities"),
    "input-required-result-ignore-extra-params": _tool("test_input_required_result_elicitation"),
}
"""Scenario -> why it does not apply to a server offering the one tool ``run_code`` (skipped)."""

EXCUSED_CHECKS: dict[str, str] = {
    # server-stateless: the suite reports these as FAILURE "Not testable" without its diagnostic tools.
    "sep-2575-server-rejects-undeclared-capability": "needs the suite's diagnostic tool test_missing_capability",
    "sep-2575-missing-capability-http-400": "needs the suite's diagnostic tool test_missing_capability",
    "sep-2575-http-server-no-independent-requests-on-stream": (
        "needs the suite's diagnostic tool test_streaming_elicitation"
    ),
    "sep-2575-server-no-log-without-loglevel": "needs the suite's diagnostic tool test_logging_tool",
    # caching: tools/list carries the hints; the other lists do not exist here.
    "sep-2549-prompts-list-caching-hints": _NO_PROMPTS,
    "sep-2549-resources-list-caching-hints": _NO_RESOURCES,
    "sep-2549-resources-templates-list-caching-hints": _NO_RESOURCES,
    # server-sse-polling: the priming event and retry field are judged on serve-mcp's own stream.
    "server-sse-disconnect-resume": (
        "needs the suite's fixture tool test_reconnection, which closes the stream before its result; "
        "serve-mcp's answer (-32602, no such tool) ends the stream, so a resume after it rightly gets "
        "nothing (tests/serve/test_sse.py resumes run_code cut mid-run)"
    ),
    # the tasks scenarios that also check something serve-mcp can answer without the fixtures
    "sep-2663-server-rejects-undeclared-client": _tool("slow_compute"),
    "tasks-per-request-meta-opt-in": _tool("slow_compute"),
    "tasks-server-directed-creation-no-hint": _tool("failing_job"),
    "sep-2663-legacy-task-param-ignored": _tool("greet"),
    "tasks-immediate-result-shortcut": _tool("slow_compute"),
    "tasks-result-type-complete-on-non-task-responses": _tool("greet"),
    "sep-2663-durable-create-strong-consistency": _tool("slow_compute"),
    "tasks-headers-tolerate-mcp-method-on-tools-call": _tool("greet"),
    "sep-2663-routing-headers-accepted-on-tasks-get": _tool("slow_compute"),
    "sep-2663-server-rejects-mismatched-mcp-name-on-tasks-get": (
        "needs the task created by sep-2663-routing-headers-accepted-on-tasks-get (slow_compute)"
    ),
}
"""Check id -> why its FAILURE or WARNING does not count: it needs a fixture serve-mcp does not offer,
in a scenario whose other checks apply."""

NOT_YET: dict[str, str] = {}
"""``scenario`` or ``scenario@version`` -> why it fails today though it applies to serve-mcp (strict
xfail)."""


def _param(case: Case) -> Any:
    return case_param(case, NOT_APPLICABLE, "not applicable", NOT_YET)


# ---------------------------------------------------------------------------------------------
# Running the suite


@dataclass
class Outcome:
    case: Case
    run: SuiteRun

    def unexcused(self) -> list[dict[str, Any]]:
        return [check for check in self.run.bad_checks() if check.get("id") not in EXCUSED_CHECKS]

    def succeeded(self) -> bool:
        return any(
            check.get("status") == "SUCCESS" and check.get("id") != GENERIC for check in self.run.checks
        )

    def passed(self) -> bool:
        # The suite exits 1 on any FAILURE, excused or not; anything else is a crash or a usage error.
        finished = self.run.status == 0 or (self.run.status == 1 and bool(self.run.checks))
        return finished and self.succeeded() and not self.unexcused()

    def report(self) -> str:
        lines = [f"{self.case.id}: {self._verdict()} in {self.run.seconds:.1f} s"]
        for check in self.run.bad_checks():
            message = check.get("errorMessage") or (check.get("details") or {}).get("message") or ""
            excused = " (excused)" if check.get("id") in EXCUSED_CHECKS else ""
            lines.append(f"  [{check.get('id')}] {check.get('status')}{excused}: {check.get('description')}")
            if message:
                lines.append(f"      {message}")
        if not self.succeeded():
            lines.append(f"  no check but {GENERIC} succeeded")
        if self.run.results is None:
            lines.append("  suite output (last 30 lines):")
            lines.extend(f"    {line}" for line in plain(self.run.output).splitlines()[-30:])
        else:
            lines.append(f"  results: {self.run.results}")
        return "\n".join(lines)

    def _verdict(self) -> str:
        if self.run.status is None:
            return f"the suite did not finish in {RUN_TIMEOUT:.0f} s"
        return f"exit status {self.run.status}"


def run_case(case: Case, url: str, out: Path) -> Outcome:
    """Run one scenario through the suite against ``url`` with its results under ``out``."""
    return Outcome(
        case,
        run_suite(
            ["server", "--url", url, "--timeout", str(int(SCENARIO_TIMEOUT * 1000))], case, out, RUN_TIMEOUT
        ),
    )


SKILLS_SCENARIO = "sep-2640-"
"""The scenarios the serve-mcp with a skill answers."""


def write_skill(root: Path) -> Path:
    """A skills directory holding one skill with a file in a subdirectory (the directory scenario
    needs a child directory to descend into)."""
    skill = root / "pdf-tools"
    (skill / "references").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: pdf-tools\ndescription: Extract the text of PDF documents\n---\nCall extract() on a PDF's bytes.\n"
    )
    (skill / "references" / "FORMS.md").write_text("# Forms\n\nFill a form with fill().\n")
    return root


class Runner:
    """Runs the scenarios of the selected tests in the background, in test order, ``WORKERS`` at a
    time, against the serve-mcp each is for, and hands each test its outcome."""

    def __init__(self, base: Path, url: str, skills_url: str, selected: list[Case]) -> None:
        self.base = base
        self.url = url
        self.skills_url = skills_url
        self.pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="conformance")
        self.futures: dict[Case, Future[Outcome]] = {
            case: self.pool.submit(self._run, case) for case in selected
        }

    def _run(self, case: Case) -> Outcome:
        out = self.base / re.sub(r"[^A-Za-z0-9_.@-]", "_", case.id)
        out.mkdir(parents=True, exist_ok=True)
        url = self.skills_url if case.scenario.startswith(SKILLS_SCENARIO) else self.url
        return run_case(case, url, out)

    def outcome(self, case: Case) -> Outcome:
        if case not in self.futures:
            self.futures[case] = self.pool.submit(self._run, case)
        return self.futures[case].result()

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="module")
def runner(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runner]:
    installed()
    selected = selected_cases(request, test_server_scenario)
    with contextlib.ExitStack() as stack:
        # The suite sends no token; --no-auth wins over one in the environment.
        served = stack.enter_context(
            serve_http("--no-auth", "--mcp-stdio", SIMPLE, env={"HOME": ENV["HOME"]})
        )
        skills = write_skill(tmp_path_factory.mktemp("skills"))
        with_skills = stack.enter_context(
            serve_http("--no-auth", "--mcp-stdio", SIMPLE, "--skills", str(skills), env={"HOME": ENV["HOME"]})
        )
        running = Runner(tmp_path_factory.mktemp("server-conformance"), served.url, with_skills.url, selected)
        stack.callback(running.close)
        yield running


@pytest.mark.timeout(RUN_TIMEOUT * 2)  # the wait for a place, then the run
@pytest.mark.parametrize("case", [_param(case) for case in cases(SCENARIOS)])
def test_server_scenario(case: Case, runner: Runner, request: pytest.FixtureRequest) -> None:
    outcome = runner.outcome(case)
    request.node.user_properties.append(("conformance_seconds", round(outcome.run.seconds, 1)))
    assert outcome.passed(), outcome.report()


def test_the_scenario_table_is_the_suites() -> None:
    """``SCENARIOS`` is what the pinned suite lists (a new pin shows new or changed scenarios here),
    and the classification names only its scenarios."""
    suite = listed_scenarios("Server")
    assert suite == SCENARIOS
    assert [s for s in NOT_APPLICABLE if s not in SCENARIOS] == []
    assert [key for key in NOT_YET if key.split("@")[0] not in SCENARIOS] == []
    assert [key for key in NOT_YET if key.split("@")[0] in NOT_APPLICABLE] == []
    ids = {case.id for case in cases(SCENARIOS)}
    assert [key for key in NOT_YET if "@" in key and key not in ids] == []
