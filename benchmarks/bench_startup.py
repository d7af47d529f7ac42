"""Start-up of whole processes, as ratios measured side by side (issue 12, scenario 7).

    .venv/bin/python benchmarks/bench_startup.py [--runs N]

Rows: ``asyncai --help`` against a bare ``python -c pass``, and ``asyncai run-code --mcp-stdio
asyncai-mcp-simple -c 1`` (an MCP server started, a sandbox worker checked out, one snippet)
against ``python -c "import mcp"``. Runs alternate between the two commands of a row, so drift on
a shared machine hits both alike.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from report import Row, Stats, save_section

BIN = Path(sys.executable).parent
ROWS = [
    (
        "asyncai --help",
        [str(BIN / "asyncai"), "--help"],
        "python -c pass",
        [sys.executable, "-c", "pass"],
        "≤ 8x",
    ),
    (
        "asyncai run-code --mcp-stdio asyncai-mcp-simple -c 1",
        [str(BIN / "asyncai"), "run-code", "--mcp-stdio", str(BIN / "asyncai-mcp-simple"), "-c", "1"],
        'python -c "import mcp"',
        [sys.executable, "-c", "import mcp"],
        "≤ 1.4x",
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
    rows = []
    for label, command, base_label, base, target in ROWS:
        once(command), once(base)  # warm the file cache
        ours, theirs = [], []
        for _ in range(runs):
            ours.append(once(command))
            theirs.append(once(base))
        rows.append(
            Row("7 start-up", f"`{label}`", Stats.of(ours), f"`{base_label}`", Stats.of(theirs), target)
        )
    notes = "Whole processes, alternating between the two commands of a row."
    save_section("startup", "Start-up of whole processes (scenario 7)", rows, notes)


if __name__ == "__main__":
    main()
