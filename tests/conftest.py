from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# Speed is for benchmarks: a per-example deadline fails generated tests on a loaded 2-core machine.
settings.register_profile("asyncai", deadline=None)
settings.load_profile("asyncai")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _no_writes_to_the_real_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Interactive modes keep input history under XDG_STATE_HOME and sessions are recorded under
    CLAUDE_CONFIG_DIR; tests keep both in temp dirs (the CLI subprocesses inherit them)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path_factory.mktemp("claude")))


def _leftover_workers() -> list[str]:
    """``monty`` worker processes whose parent is this test process."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == os.getpid() and "monty" in cmdline and "subprocess" in cmdline:
            found.append(f"{proc.name}: {cmdline.strip()}")
    return found


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The suite must leave no sandbox worker running (the issue's "Done when")."""
    leftovers = _leftover_workers()
    if leftovers:
        print("\nmonty worker processes left behind by the tests:\n  " + "\n  ".join(leftovers))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
