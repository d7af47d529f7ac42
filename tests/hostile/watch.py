"""What the hostile tests watch besides the result: the processes under the test process, and the
files and environment variables a snippet must never reach."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Proc:
    pid: int
    parent: int
    state: str
    comm: str
    cmdline: str


def _read(pid: str) -> Proc | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # the process ended while we looked
        return None
    comm = stat[stat.index("(") + 1 : stat.rindex(")")]
    state, parent = stat.rsplit(")", 1)[1].split()[:2]
    return Proc(int(pid), int(parent), state, comm, raw.replace(b"\0", b" ").decode(errors="replace").strip())


def descendants(root: int | None = None) -> list[Proc]:
    """Every process below ``root`` (default: this process), children first."""
    procs = [p for p in (_read(name) for name in os.listdir("/proc") if name.isdigit()) if p is not None]
    by_parent: dict[int, list[Proc]] = {}
    for proc in procs:
        by_parent.setdefault(proc.parent, []).append(proc)
    found: list[Proc] = []
    todo = [root if root is not None else os.getpid()]
    while todo:
        for child in by_parent.get(todo.pop(), []):
            found.append(child)
            todo.append(child.pid)
    return found


def is_monty_worker(proc: Proc) -> bool:
    return proc.comm == "monty" or ("monty" in proc.cmdline and "subprocess" in proc.cmdline)


def foreign_processes(known_servers: tuple[str, ...]) -> list[Proc]:
    """Descendants that are neither a monty worker nor one of the known MCP servers (matched by a
    fragment of their command line). A snippet that started a process would show up here."""
    return [
        proc
        for proc in descendants()
        if not is_monty_worker(proc) and not any(fragment in proc.cmdline for fragment in known_servers)
    ]


def monty_workers() -> list[Proc]:
    return [proc for proc in descendants() if is_monty_worker(proc) and proc.state != "Z"]


def tree_listing(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` with its size and mtime (ns): any write shows up as a difference."""
    listing = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        listing[str(path.relative_to(root))] = (info.st_size, info.st_mtime_ns)
    return listing
