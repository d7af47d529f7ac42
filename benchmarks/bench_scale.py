"""Scale (issue 12, scenario 6): many threads through ``asyncai --jsonl`` against a zero-latency model.

    .venv/bin/python benchmarks/bench_scale.py [--threads 64] [--compare 8,16,200] [--reps 3] [--no-save]

The real command line as a user runs it: ``asyncai --jsonl --no-session`` with the bench stdio
server (``benchmarks/bench_server.py``) as its one MCP server, and a scripted OpenAI-compatible
model on loopback (``tests/fakes/openai_server.py``) that answers at once. Every thread's run is
three model requests: ``run_code`` (``sales`` of one region, its total kept in a variable),
``run_code`` again (``ping`` plus the variables of the first snippet), then the text of the second
result as the reply. So each reply checks that both snippets ran and that the thread's REPL kept
its state between them.

Each repetition starts a fresh ``asyncai`` process, waits for one warm-up run (the MCP server
started, the first sandbox worker up, the HTTP connection to the model open), then writes all the
threads' lines at once and times until the last reply line. A sampler thread sums the RSS of the
whole process tree (asyncai, its sandbox workers, the MCP server) every 20 ms and counts the
workers (``monty`` children). A repetition whose replies are not all correct is reported as such
and not repeated.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import psutil  # type: ignore[import-untyped]

from report import Row, Stats, save_section

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes.openai_server import ScriptedOpenAI, call, text_reply, tool_reply

from bench_server import REGIONS

BIN = Path(sys.executable).parent
SERVER = f"{sys.executable} {Path(__file__).resolve().with_name('bench_server.py')}"
SAMPLE_SECONDS = 0.02
REPLY_TIMEOUT = 150.0  # a burst that takes longer is reported as missing replies
WARM = "warm"
MIB = 2**20

FIRST = (
    "n = {n}\n"
    's = await sales(region="{region}")\n'
    'total = round(sum(o["total"] for o in s["orders"]), 2)\n'
    "total"
)
SECOND = '[n, total, (await ping())["ok"]]'


def thread_number(thread: str) -> int:
    return -1 if thread == WARM else int(thread.removeprefix("t"))


def region(n: int) -> str:
    return REGIONS[n % len(REGIONS)]


def expected_reply(n: int) -> list[Any]:
    """What the second snippet returns, computed as bench_server.sales does."""
    seed = REGIONS.index(region(n))
    total = round(sum(round(10.5 * (i + 1) + seed, 2) for i in range(20)), 2)
    return [n, total, True]


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """The scripted model: run_code, run_code, then the second result as the reply. The thread is
    read from the user message (``thread tN``), the step from the tool results already sent."""
    messages = body["messages"]
    user = next(m["content"] for m in messages if m["role"] == "user")
    n = thread_number(user.split()[1])
    results = [m for m in messages if m["role"] == "tool"]
    if not results:
        return tool_reply(call("run_code", {"code": FIRST.format(n=n, region=region(n))}))
    if len(results) == 1:
        return tool_reply(call("run_code", {"code": SECOND}))
    content = results[-1]["content"]
    return text_reply(content if isinstance(content, str) else json.dumps(content))


@dataclass
class TreeSampler:
    """Peak RSS of a process and all its descendants, and the peak number of sandbox workers."""

    root: int
    peak_rss: int = 0
    peak_workers: int = 0
    peak_processes: int = 0
    samples: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def sample(self) -> tuple[int, int, int]:
        try:
            root = psutil.Process(self.root)
            processes = [root, *root.children(recursive=True)]
        except psutil.Error:
            return 0, 0, 0
        rss = workers = 0
        for process in processes:
            with contextlib.suppress(psutil.Error):
                rss += process.memory_info().rss
                if "monty" in " ".join(process.cmdline()):
                    workers += 1
        return rss, workers, len(processes)

    def _loop(self) -> None:
        while not self._stop.is_set():
            rss, workers, processes = self.sample()
            self.peak_rss = max(self.peak_rss, rss)
            self.peak_workers = max(self.peak_workers, workers)
            self.peak_processes = max(self.peak_processes, processes)
            self.samples += 1
            self._stop.wait(SAMPLE_SECONDS)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="tree-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


@dataclass
class Burst:
    threads: int
    seconds: float
    correct: int
    wrong: list[str]
    baseline_rss: int
    peak_rss: int
    peak_workers: int
    peak_processes: int
    samples: int

    @property
    def ok(self) -> bool:
        return self.correct == self.threads


class Agent:
    """One ``asyncai --jsonl`` process; replies are read by a thread into a queue-like list."""

    def __init__(self, base_url: str, home: Path) -> None:
        command = [
            str(BIN / "asyncai"),
            "--jsonl",
            "--no-session",
            "--model",
            "scripted",
            "--base-url",
            base_url,
            "--mcp-stdio",
            SERVER,
        ]
        env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.replies: list[tuple[float, dict[str, Any]]] = []
        self.stderr: list[str] = []
        self._arrived = threading.Condition()
        assert self.process.stdout is not None and self.process.stderr is not None
        self._readers = [
            threading.Thread(target=self._read_replies, args=(self.process.stdout,), daemon=True),
            threading.Thread(target=self._read_stderr, args=(self.process.stderr,), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read_replies(self, stream: IO[str]) -> None:
        for line in stream:
            with self._arrived:
                self.replies.append((time.perf_counter(), json.loads(line)))
                self._arrived.notify_all()
        with self._arrived:
            self._arrived.notify_all()

    def _read_stderr(self, stream: IO[str]) -> None:
        for line in stream:
            self.stderr.append(line.rstrip())

    def send(self, threads: list[str]) -> float:
        assert self.process.stdin is not None
        lines = "".join(json.dumps({"thread": t, "text": f"thread {t} go"}) + "\n" for t in threads)
        start = time.perf_counter()
        self.process.stdin.write(lines)
        self.process.stdin.flush()
        return start

    def wait_replies(self, count: int, timeout: float) -> None:
        with self._arrived:
            self._arrived.wait_for(
                lambda: len(self.replies) >= count or self.process.poll() is not None, timeout
            )

    def close(self) -> None:
        """EOF on stdin ends ``--jsonl``; a process that does not exit is killed."""
        with contextlib.suppress(OSError):
            assert self.process.stdin is not None
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for reader in self._readers:
            reader.join(timeout=5)


def check(reply: dict[str, Any]) -> str | None:
    """``None`` when the reply is the thread's expected answer, else what is wrong."""
    thread = str(reply.get("thread"))
    if reply.get("error"):
        return f"{thread}: error {reply['error']}"
    try:
        value = json.loads(reply.get("reply", ""))
    except ValueError:
        value = None
    if value != expected_reply(thread_number(thread)):
        return f"{thread}: {str(reply.get('reply'))[:160]}"
    return None


def burst(model: ScriptedOpenAI, threads: int) -> Burst:
    model.add(*[answer] * (4 * (threads + 1)))
    home = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    agent = Agent(model.base_url, home)
    sampler = TreeSampler(agent.process.pid)
    sampler.start()
    try:
        agent.send([WARM])
        agent.wait_replies(1, 60)
        if len(agent.replies) < 1 or check(agent.replies[0][1]) is not None:
            tail = "\n".join(agent.stderr[-5:])
            raise RuntimeError(f"the warm-up run failed: {agent.replies[:1]} {tail}")
        baseline_rss = sampler.sample()[0]
        names = [f"t{i}" for i in range(threads)]
        start = agent.send(names)
        agent.wait_replies(threads + 1, REPLY_TIMEOUT)
        replies = agent.replies[1:]
        end = max((at for at, _ in replies), default=time.perf_counter())
        problems = [problem for _, reply in replies if (problem := check(reply)) is not None]
        answered = {str(reply.get("thread")) for _, reply in replies}
        problems += [f"{name}: no reply" for name in names if name not in answered]
    finally:
        sampler.stop()
        children = _descendants(agent.process.pid)
        agent.close()
        _reap(children)
        shutil.rmtree(home, ignore_errors=True)
    return Burst(
        threads=threads,
        seconds=end - start,
        correct=threads - len(problems),
        wrong=problems,
        baseline_rss=baseline_rss,
        peak_rss=sampler.peak_rss,
        peak_workers=sampler.peak_workers,
        peak_processes=sampler.peak_processes,
        samples=sampler.samples,
    )


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        children: list[psutil.Process] = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []
    return children


def _reap(children: list[psutil.Process]) -> None:
    """After asyncai exits none of its children may be left; any that is gets reported and killed."""
    _, alive = psutil.wait_procs(children, timeout=10)
    for process in alive:
        print(f"left behind after exit: pid {process.pid} {process.name()}", file=sys.stderr)
        with contextlib.suppress(psutil.Error):
            process.kill()


def measure(model: ScriptedOpenAI, threads: int, reps: int) -> Row:
    bursts: list[Burst] = []
    for _ in range(reps):
        result = burst(model, threads)
        bursts.append(result)
        print(
            f"  {threads} threads: {result.seconds:.2f} s, {result.correct}/{threads} correct, "
            f"peak {result.peak_rss / MIB:.0f} MiB, {result.peak_workers} workers",
            file=sys.stderr,
        )
        if not result.ok:
            break  # a failing burst costs timeouts; once is enough to report it
    good = [b for b in bursts if b.ok]
    failed = [b for b in bursts if not b.ok]
    stats = Stats.of([b.seconds for b in bursts])
    rates = sorted(threads / b.seconds for b in bursts)
    peak = max(b.peak_rss for b in bursts)
    runs_per_s = threads / stats.median
    values: dict[str, Any] = {
        "threads": threads,
        "runs_per_s": round(runs_per_s, 1),
        "runs_per_s_min_max": [round(rates[0], 1), round(rates[-1], 1)],
        "peak_tree_rss_mib": round(peak / MIB, 1),
        "peak_tree_rss_mib_per_rep": [round(b.peak_rss / MIB, 1) for b in bursts],
        "tree_rss_after_warmup_mib": round(min(b.baseline_rss for b in bursts) / MIB, 1),
        "peak_workers": max(b.peak_workers for b in bursts),
        "peak_processes": max(b.peak_processes for b in bursts),
        "correct_replies": [b.correct for b in bursts],
        "rss_samples": sum(b.samples for b in bursts),
    }
    note = (
        f"{runs_per_s:.1f} runs/s; peak tree RSS {peak / MIB:.0f} MiB; "
        f"{values['peak_workers']} workers at most"
    )
    if failed:
        wrong = failed[0].wrong
        values["wrong_replies"] = wrong[:10]
        note = (
            f"FAILED: {failed[0].correct} of {threads} replies correct ({len(wrong)} wrong, e.g. "
            f"{wrong[0]}); {note}"
        )
        if good:
            note += f"; {len(good)} earlier repetition(s) were all correct"
    return Row(
        scenario="6 scale",
        case=f"{threads} threads, 2 run_code each, asyncai --jsonl",
        stats=stats,
        target="",
        note=note,
        values=values,
    )


NOTES = """\
Each thread is one run of three model requests against a scripted model on loopback that answers
at once: `run_code` (`s = await sales(region=...)`, the total kept in `total`), `run_code`
(`[n, total, (await ping())["ok"]]`, using the first snippet's variables), then that result as
the reply, which is checked against the expected value for every thread. The command is
`asyncai --jsonl --no-session --mcp-stdio "python benchmarks/bench_server.py"` with the default
`--code-max-workers 8`: a REPL per thread, at most 8 holding a worker, idle ones parked and
restored (so 200 threads run on 8 workers and keep their variables). Each repetition is a fresh
process and one warm-up run; the time is from writing all the lines to the last reply line, and
runs/s is threads over the median time. Memory is the sum of RSS over the whole process tree
(asyncai, its `monty` workers, the MCP server), sampled every 20 ms (shared pages count once per
process); "after warm-up" is the same sum before the burst. The scripted model runs in the
benchmark's own process and is not counted. A repetition with a wrong or missing reply is
reported and not repeated."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=64)
    parser.add_argument(
        "--compare", default="8,16,200", help="thread counts for comparison rows, comma-separated"
    )
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--no-save", action="store_true", help="print only; leave results.json alone")
    args = parser.parse_args()
    counts = [args.threads] + [int(c) for c in args.compare.split(",") if c.strip()]
    rows: list[Row] = []
    with ScriptedOpenAI(model="scripted") as model:
        for threads in counts:
            rows.append(measure(model, threads, args.reps))
            model.requests.clear()
            model.raw_requests.clear()
            model.request_headers.clear()
    title = "Scale: threads through asyncai --jsonl (scenario 6)"
    save_section("scale", title, rows, NOTES, save=not args.no_save)


if __name__ == "__main__":
    main()
