"""Signals and the terminal: SIGTERM and SIGHUP shut down like Ctrl-C (no worker or server left
running), and an interrupted interactive mode leaves the terminal as it found it."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import termios
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.cli.conftest import BIN, SIMPLE
from tests.fakes.openai_server import ScriptedOpenAI

WAIT = 30.0  # a safety net against hangs, never a synchronisation device
SERVER_STOP_WAIT = 15.0  # the MCP SDK gives a server 2 s to exit after its stdin closes
CPU_TICKS = 10  # a worker that has used this much CPU is running the snippet, not starting up
ENV = {**os.environ, "HOME": "/nonexistent-home"}


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:  # the thread ended meanwhile
            continue
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name, or None when the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _running(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")  # a zombie runs nothing


def _cpu_ticks(pid: int) -> int:
    fields = _stat(pid)
    return 0 if fields is None else int(fields[11]) + int(fields[12])  # utime + stime


def _poll(found: Callable[[], list[int]], what: str) -> list[int]:
    """Poll /proc until ``found()`` is not empty; bounded by WAIT."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if result := found():
            return result
        time.sleep(0.02)  # polling the process table for a condition, bounded by the deadline
    raise AssertionError(f"timed out waiting for {what}")


def _busy_workers(process: subprocess.Popen[bytes]) -> list[int]:
    """The monty worker children of ``process`` that are running the snippet."""
    return _poll(
        lambda: [
            child
            for child in _children(process.pid)
            if "monty" in _cmdline(child) and _cpu_ticks(child) >= CPU_TICKS
        ],
        "a busy monty worker",
    )


def _kill_leftovers(pids: list[int]) -> None:
    for pid in pids:
        if _running(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(
    ("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)], ids=["sigterm", "sighup"]
)
def test_a_terminating_signal_mid_snippet_leaves_no_worker_or_server(
    signum: signal.Signals, status: int
) -> None:
    process = subprocess.Popen(
        [
            str(BIN / "asyncai"),
            "run-code",
            "--mcp-stdio",
            SIMPLE,
            "-c",
            "while True: pass",
            "--code-timeout",
            "60",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
    )
    started: list[int] = []
    try:
        started = _busy_workers(process)
        started += [child for child in _children(process.pid) if "asyncai-mcp-simple" in _cmdline(child)]
        process.send_signal(signum)
        returncode = process.wait(timeout=WAIT)
        still_running = [pid for pid in started if _running(pid)]
    finally:
        _kill_leftovers(started)
        if process.poll() is None:
            process.kill()
        _, stderr = process.communicate(timeout=WAIT)
    assert len(started) == 2  # the busy worker and the server
    assert still_running == []
    assert returncode == status
    assert stderr == b""


@pytest.mark.parametrize(
    ("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["sigint", "sigterm"]
)
def test_a_signal_while_a_server_starts_prints_nothing(signum: signal.Signals, status: int) -> None:
    never_answers = f"{BIN / 'python'} -c 'import time; time.sleep(60)'"
    process = subprocess.Popen(
        [str(BIN / "asyncai"), "tools", "--mcp-stdio", never_answers],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
    )
    servers: list[int] = []
    try:
        servers = _poll(
            lambda: [c for c in _children(process.pid) if "time.sleep(60)" in _cmdline(c)],
            "the server process",
        )
        process.send_signal(signum)
        returncode = process.wait(timeout=SERVER_STOP_WAIT)
        still_running = [pid for pid in servers if _running(pid)]
    finally:
        _kill_leftovers(servers)
        if process.poll() is None:
            process.kill()
        stdout, stderr = process.communicate(timeout=WAIT)
    assert still_running == []
    assert returncode == status
    assert (stdout, stderr) == (b"", b"")


# The terminal ----------------------------------------------------------------------------------


class Terminal:
    """A pseudo-terminal as the command's stdin, stdout and stderr; the test reads the screen."""

    def __init__(self, master: int, slave: int) -> None:
        self.master = master
        self.slave = slave
        self.screen = b""

    def attributes(self) -> list[object]:
        return termios.tcgetattr(self.slave)

    def echo(self) -> bool:
        return bool(termios.tcgetattr(self.slave)[3] & termios.ECHO)

    def wait_for(self, text: bytes) -> None:
        deadline = time.monotonic() + WAIT
        while text not in self.screen:
            assert time.monotonic() < deadline, f"no {text!r} on the terminal: {self.screen!r}"
            if select.select([self.master], [], [], 0.5)[0]:
                self.screen += os.read(self.master, 4096)

    def rest(self) -> bytes:
        """What the command wrote after the screen read so far (it has exited: all is buffered)."""
        start = len(self.screen)
        while select.select([self.master], [], [], 0)[0]:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # EIO: nothing more
                break
            if not chunk:
                break
            self.screen += chunk
        return self.screen[start:]


@contextmanager
def _on_a_terminal(args: list[str]) -> Iterator[tuple[subprocess.Popen[bytes], Terminal]]:
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [str(BIN / "asyncai"), *args], stdin=slave, stdout=slave, stderr=slave, env=ENV
    )
    try:
        yield process, Terminal(master, slave)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=WAIT)
        os.close(slave)
        os.close(master)


@pytest.mark.parametrize(
    ("args", "prompt", "signum", "status"),
    [
        (["--model", "m", "--base-url", "{url}"], b"you> ", signal.SIGINT, 130),
        (["run-code", "-i"], b">>> ", signal.SIGINT, 130),
        (["--model", "m", "--base-url", "{url}"], b"you> ", signal.SIGTERM, 143),
    ],
    ids=["chat-ctrl-c", "run-code-i-ctrl-c", "chat-sigterm"],
)
def test_an_interrupted_prompt_restores_the_terminal(
    args: list[str], prompt: bytes, signum: signal.Signals, status: int
) -> None:
    with ScriptedOpenAI([]) as model:
        argv = [arg.format(url=model.base_url) for arg in args]
        with _on_a_terminal(argv) as (process, terminal):
            found = terminal.attributes()
            terminal.wait_for(prompt)
            assert not terminal.echo()  # readline has the terminal while it waits for a line
            process.send_signal(signum)
            returncode = process.wait(timeout=WAIT)
            assert terminal.attributes() == found
            assert terminal.echo()
            assert terminal.rest() == b"\r\n"  # the shell prompt starts on a new line
        requests = model.requests
    assert returncode == status
    assert requests == []
