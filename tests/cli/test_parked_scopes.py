"""200 threads over ``--jsonl`` on 8 workers: every thread keeps its variables (idle REPLs are
parked and restored), and no more than 8 worker processes are ever alive."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

from tests.cli.conftest import BIN, SIMPLE
from tests.fakes.openai_server import ScriptedOpenAI, call, text_reply, tool_reply

THREADS = 200
WORKERS = 8


def _answer(body: dict[str, Any]) -> dict[str, Any]:
    """run_code, then the result as the reply: ``bind N`` binds ``v = N``, ``read`` returns ``v``."""
    messages = body["messages"]
    if messages[-1]["role"] == "tool":
        return text_reply(messages[-1]["content"])
    text = messages[-1]["content"]
    code = f"v = {int(text.split()[-1])}\nv" if text.startswith("bind") else "v"
    return tool_reply(call("run_code", {"code": code}))


def _workers_of(pid: int) -> int:
    """Live ``monty`` worker processes whose parent is ``pid``."""
    count = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z" and b"monty" in cmdline:
            count += 1
    return count


def test_200_threads_on_8_workers_keep_their_variables(tmp_path: Path) -> None:
    with ScriptedOpenAI([_answer] * (4 * THREADS)) as model:
        process = subprocess.Popen(
            [str(BIN / "asyncai"), "--jsonl", "--no-session", "--base-url", model.base_url, "--model", "m",
             "--mcp-stdio", SIMPLE, "--code-max-workers", str(WORKERS)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "HOME": str(tmp_path)},
        )  # fmt: skip
        assert process.stdin is not None and process.stdout is not None
        peak = 0
        sampling = threading.Event()

        def sample() -> None:  # a measurement alongside the run, not a synchronisation
            nonlocal peak
            while not sampling.wait(0.01):
                peak = max(peak, _workers_of(process.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            replies: dict[str, list[Any]] = {}
            for phase in ("bind", "read"):
                for number in range(THREADS):
                    text = f"bind {number}" if phase == "bind" else "read"
                    process.stdin.write(json.dumps({"thread": f"t{number}", "text": text}) + "\n")
                process.stdin.flush()
                for _ in range(THREADS):
                    line = json.loads(process.stdout.readline())
                    replies.setdefault(line["thread"], []).append(line["reply"])
            process.stdin.close()
            assert process.wait(timeout=60) == 0, process.stderr.read() if process.stderr else ""
        finally:
            sampling.set()
            sampler.join()
            if process.poll() is None:
                process.kill()
    assert replies == {f"t{n}": [str(n), str(n)] for n in range(THREADS)}
    assert 0 < peak <= WORKERS, f"{peak} worker processes were alive at once"
