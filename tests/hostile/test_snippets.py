"""The hostile corpus (``corpus.py``) through one code-mode executor over the real stdio test server.

Per case: the result is the expected error or a harmless value, it came back within its deadline,
it never carries a canary (a secret file's contents, two secret environment variables), nothing
was written next to the canary file or in /tmp, no process was started, and the next snippet in the
same REPL (``1 + 1``) works.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from asyncai.code_mode import CodeMode
from asyncai.tools import McpServers, ToolCallOutput, stdio_spec
from tests.fakes.servers import SERVER_SCRIPT, server_command
from tests.hostile.corpus import ABSENT, CORPUS, FAST, HEAVY, LIMITS, Case
from tests.hostile.watch import foreign_processes, monty_workers, tree_listing

pytestmark = pytest.mark.anyio

CANARY_ENV = "HOSTILE_CANARY"
"""Set in the test process; its value is passed as a secret value (like the model API key)."""
SECRET_ENV = "ASYNCAI_HOSTILE_CANARY_SECRET"
"""Set in the test process; its name marks it as one of asyncai's secrets."""
TMP_TARGET = Path("/tmp/asyncai-hostile-pwned")
"""Where snippets try to write outside any test directory."""
RESULT_SLACK = 1_000
"""Error results may carry a hint and a reset note after the clipped traceback."""
MAX_WORKERS = 4


@dataclass
class Hostile:
    executor: CodeMode
    canary_dir: Path
    canary_file: Path
    canaries: tuple[str, ...]
    listing: dict[str, tuple[int, int]]
    tmp_target_existed: bool
    baseline_foreign: set[int]
    outputs: list[str] = field(default_factory=list)

    def substitute(self, code: Any) -> Any:
        if not isinstance(code, str):
            return code
        for token, value in {
            "CANARY_FILE": str(self.canary_file),
            "CANARY_DIR": str(self.canary_dir),
            "CANARY_ENV": CANARY_ENV,
            "SECRET_ENV": SECRET_ENV,
        }.items():
            code = code.replace(token, value)
        return code

    async def run(self, code: Any, *, restart: bool = False) -> ToolCallOutput:
        arguments: dict[str, Any] = {"restart": True} if restart else {}
        if code is not ABSENT:
            arguments["code"] = self.substitute(code)
        output = await self.executor.call_tool("run_code", arguments)
        self.outputs.append(output.content + json.dumps(output.audit, default=repr))
        return output


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def hostile(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Hostile]:
    canary_dir = tmp_path_factory.mktemp("hostile-canary")
    canary_file = canary_dir / "secret.txt"
    file_secret = f"hostile-file-canary-{secrets.token_hex(12)}"
    canary_file.write_text(file_secret + "\n")
    env_secret = f"hostile-env-canary-{secrets.token_hex(12)}"
    named_secret = f"hostile-secret-canary-{secrets.token_hex(12)}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CANARY_ENV, env_secret)
        patch.setenv(SECRET_ENV, named_secret)
        spec = stdio_spec(f"hostile={server_command('hostile')}")
        async with (
            McpServers([spec], tool_timeout=LIMITS.tool_timeout, secrets=[env_secret]) as mcp,
            CodeMode(mcp, LIMITS) as executor,
        ):
            yield Hostile(
                executor=executor,
                canary_dir=canary_dir,
                canary_file=canary_file,
                canaries=(file_secret, env_secret, named_secret),
                listing=tree_listing(canary_dir),
                tmp_target_existed=_tmp_target_exists(),
                baseline_foreign={proc.pid for proc in foreign_processes((str(SERVER_SCRIPT),))},
            )


def _tmp_target_exists() -> bool:
    return TMP_TARGET.exists()


def assert_no_trace(hostile: Hostile) -> None:
    """No file written next to the canary or in /tmp, the canary intact, no process started (only
    the test server and monty workers run below this process), and no pile of workers."""
    assert tree_listing(hostile.canary_dir) == hostile.listing
    assert hostile.canary_file.read_text().startswith("hostile-file-canary-")
    assert _tmp_target_exists() is hostile.tmp_target_existed
    started = [
        proc for proc in foreign_processes((str(SERVER_SCRIPT),)) if proc.pid not in hostile.baseline_foreign
    ]
    assert started == []
    assert len(monty_workers()) <= MAX_WORKERS, monty_workers()


def _param(case: Case) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=f"bug: {case.bug}")] if case.bug else []
    return pytest.param(case, id=case.id, marks=marks)


def test_the_corpus_is_large_and_its_ids_are_unique() -> None:
    assert len(CORPUS) >= 80
    assert len({case.id for case in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("case", [_param(case) for case in CORPUS])
async def test_hostile_snippet(hostile: Hostile, case: Case) -> None:
    for number, snippet in enumerate(case.setup):
        await hostile.run(snippet, restart=number == 0)
    started = time.perf_counter()
    output = await hostile.run(case.code, restart=not case.setup)
    elapsed = time.perf_counter() - started
    text = output.content

    # The outcome.
    if case.expect != "any":
        assert output.is_error is (case.expect == "error"), text[:2000]
    assert re.search(case.pattern, text), f"{case.pattern!r} not in:\n{text[:2000]}"
    assert elapsed <= case.deadline, f"took {elapsed:.2f}s, deadline {case.deadline}s"
    assert len(text) <= LIMITS.max_result_chars + RESULT_SLACK
    text.encode("utf-8")  # what goes to the model is text a JSON encoder accepts

    # Nothing leaked, nothing was written, nothing was started.
    audit = json.dumps(output.audit, default=repr)
    assert [canary for canary in hostile.canaries if canary in text or canary in audit] == []
    assert_no_trace(hostile)

    # The same REPL (reset or not) takes the next snippet.
    started = time.perf_counter()
    after = await hostile.run("1 + 1")
    assert (after.content, after.is_error) == ("2", False)
    assert time.perf_counter() - started <= FAST

    # The audit (recorded in sessions, sent by serve-mcp) is JSON.
    json.dumps(output.audit, allow_nan=True)


async def test_an_error_result_stays_within_the_result_cap(hostile: Hostile) -> None:
    started = time.perf_counter()
    output = await hostile.run("raise ValueError('x' * 50_000_000)", restart=True)
    assert time.perf_counter() - started <= HEAVY
    assert output.is_error
    assert len(output.content) <= LIMITS.max_result_chars


async def test_no_output_of_the_whole_corpus_carries_a_canary(hostile: Hostile) -> None:
    """Runs after the corpus (file order): one last sweep over everything the executor returned,
    and over the process tree and the canary directory."""
    joined = "\n".join(hostile.outputs)
    assert [canary for canary in hostile.canaries if canary in joined] == []
    assert_no_trace(hostile)
    assert os.environ.get(CANARY_ENV) is not None  # the canaries were really set meanwhile
