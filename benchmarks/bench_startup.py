"""Start-up of whole processes, as ratios measured side by side (issue 12, scenario 7).

    .venv/bin/python benchmarks/bench_startup.py [--runs N]

Rows: ``asyncai --help`` against a bare ``python -c pass``, and ``asyncai run-code --mcp-stdio
asyncai-mcp-simple -c 1`` (an MCP server started, a sandbox worker checked out, one snippet)
against ``python -c "import mcp"``. Runs alternate between the two commands of a row, so drift on
a shared machine hits both alike.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent
ROWS = [
    ("asyncai --help", [str(BIN / "asyncai"), "--help"], "python -c pass", [sys.executable, "-c", "pass"]),
    (
        "asyncai run-code --mcp-stdio asyncai-mcp-simple -c 1",
        [str(BIN / "asyncai"), "run-code", "--mcp-stdio", str(BIN / "asyncai-mcp-simple"), "-c", "1"],
        'python -c "import mcp"',
        [sys.executable, "-c", "import mcp"],
    ),
]


def once(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    print(f"{os.cpu_count()} cores, Python {sys.version.split()[0]}, {runs} runs each, alternating\n")
    print("| command | median | min | max | baseline | baseline median | ratio |")
    print("|---|---|---|---|---|---|---|")
    for label, command, base_label, base in ROWS:
        once(command), once(base)  # warm the file cache
        ours, theirs = [], []
        for _ in range(runs):
            ours.append(once(command))
            theirs.append(once(base))
        mine, baseline = statistics.median(ours), statistics.median(theirs)
        print(
            f"| `{label}` | {mine * 1000:.0f} ms | {min(ours) * 1000:.0f} ms | {max(ours) * 1000:.0f} ms "
            f"| `{base_label}` | {baseline * 1000:.0f} ms | {mine / baseline:.1f}x |"
        )


if __name__ == "__main__":
    main()
