"""A program that never closes its code mode still exits cleanly.

pydantic-monty 1.4 aborts the interpreter (SIGABRT, exit status 134) when a worker pool is still
open at exit, and leaves the workers of sessions never released running. The sandbox's guard
(``code_mode/sandbox/guard.py``) closes the pool when the event loop shuts down. Each run is started in a session of its own: a
worker keeps that session when it outlives its parent, so whatever is left is attributable.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

RUNS = 20

SCRIPT = textwrap.dedent(
    """
    import asyncio
    import os
    import sys
    from pathlib import Path

    import asyncai


    async def main():
        code_mode = asyncai.CodeMode(asyncai.FunctionTools(), asyncai.CodeModeLimits(max_memory=256 * 2**20))
        result = await code_mode.call_tool("run_code", {"code": "1 + 1"})
        print(result.content, flush=True)
        # no aclose(): the user forgot


    def monty_children():
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                name, rest = stat.read_text().rsplit(")", 1)
            except OSError:
                continue
            if name.endswith("(monty") and int(rest.split()[1]) == os.getpid():
                found.append(stat.parent.name)
        return found


    asyncio.run(main())
    # The pool is closed with the loop, not at exit: no worker is left, not even one to reap.
    if monty_children():
        sys.exit(f"monty workers left after asyncio.run returned: {monty_children()}")
    """
)


def _session_members(sid: int) -> list[tuple[int, str]]:
    """pid and description of every process in session ``sid``. A zombie counts: a worker the
    script did not reap outlived it (orphaned, it waits for init)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            comm = (proc / "comm").read_text().strip()
        except OSError:
            continue
        if int(fields[3]) == sid:
            found.append((int(proc.name), f"{proc.name} {comm} (state {fields[0]}, parent {fields[1]})"))
    return found


def _status(code: int) -> str:
    return f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="attributes processes through /proc")
def test_a_program_that_never_closes_code_mode_exits_cleanly(tmp_path: Path) -> None:
    script = tmp_path / "forgets_to_close.py"
    script.write_text(SCRIPT)
    failures: list[str] = []
    for run in range(RUNS):
        proc = subprocess.Popen(
            [sys.executable, str(script)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # the run's sid is its pid; its workers keep it
        )
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        left = _session_members(proc.pid)  # at once: nothing of the run may outlive it
        for pid, _ in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        problems = []
        if proc.returncode != 0:
            problems.append(_status(proc.returncode))
        if out != "2\n":
            problems.append(f"stdout {out!r}")
        if err:
            problems.append(f"stderr {err[-500:]!r}")
        if left:
            problems.append("left behind: " + ", ".join(description for _, description in left))
        if problems:
            failures.append(f"run {run + 1}: " + "; ".join(problems))
    if failures:
        pytest.fail(f"{len(failures)} of {RUNS} runs did not exit cleanly:\n" + "\n".join(failures))


REUSED = textwrap.dedent(
    """
    import asyncio

    import asyncai

    code_mode = asyncai.CodeMode(asyncai.FunctionTools(), asyncai.CodeModeLimits(max_memory=256 * 2**20))


    async def run(code):
        print((await code_mode.call_tool("run_code", {"code": code})).content, flush=True)


    asyncio.run(run("x = 1\\nx"))
    asyncio.run(run("2"))  # the pool went with the first loop: a fresh REPL, and it says so
    asyncio.run(code_mode.aclose())
    """
)


def test_one_code_mode_used_under_two_event_loops_restarts_its_repl_and_says_so(tmp_path: Path) -> None:
    script = tmp_path / "two_loops.py"
    script.write_text(REUSED)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (0, "")
    assert (
        done.stdout == "1\n[the sandbox was restarted: variables from earlier run_code calls are gone]\n2\n"
    )
