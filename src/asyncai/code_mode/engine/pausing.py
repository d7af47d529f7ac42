"""Snippets that pause for an approval and resume anywhere.

Under the stateless protocol serve-mcp cannot ask its client a question in the middle of a
request; it answers ``input_required`` and the client retries with the answer, maybe on another
instance. So a snippet run there is driven snapshot by snapshot (``feed_start``) instead of in
one ``feed_run``: a mutating call that needs a person's decision is *held* (answered with a
future), the read-only calls around it run on, and once only held calls remain the snippet's
paused state (Monty's snapshot ``dump()``) becomes the REPL's parked state and a ``PausedSnippet``
says what it waits on. Its ``resume`` in a fresh worker settles each held call (run, or
``PermissionError``) and drives the rest the same way.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import pydantic_monty as pm

from asyncai.activity import NestedCall
from asyncai.approvals.gate import ApprovalRequest
from asyncai.state.stores import StateDiscarded, monty_version

MAGIC = b"asyncai-paused\n"
FORMAT = 1
PAUSE_PREFIX = "pause-"


@dataclass(frozen=True)
class HeldCall:
    """A mutating call waiting for a person: its arguments are the MCP arguments that will run."""

    call_id: int
    function: str
    """The Python name the snippet called."""
    tool: str
    arguments: dict[str, Any]

    def request(self) -> ApprovalRequest:
        return ApprovalRequest(self.tool, self.function, self.arguments)


@dataclass(frozen=True)
class PausedSnippet:
    """What a snippet stopped at its held calls waits on, and what its resumption carries on
    (its snapshot is the REPL's own parked state: ``ReplScope.resume``)."""

    id: str
    held: tuple[HeldCall, ...]
    calls: tuple[NestedCall, ...] = ()
    """Nested calls made before the pause, for the audit and the report."""
    suspensions: int = 0
    printed: str = ""
    printed_dropped: int = 0
    elapsed: float = 0.0
    """Wall-clock seconds it ran before pausing (the wait for the person does not count)."""
    bound: tuple[str, ...] = ()
    kept_as_last_value: bool = False
    value_at: tuple[int, int] | None = None
    assigned: str | None = None
    """What its closing assignment assigned, when that is its value (``SnippetScan.assigned``)."""
    owner: str = ""
    """Who may resume it (``serve.handles.caller_identity``)."""
    repl: str = ""
    """The REPL it belongs to (the scope key)."""


def new_pause_id() -> str:
    return PAUSE_PREFIX + secrets.token_urlsafe(18)


def looks_like_pause_id(text: str) -> bool:
    return text.startswith(PAUSE_PREFIX) and 8 < len(text) < 80 and text.isascii()


def pack_paused(paused: PausedSnippet) -> bytes:
    header = {
        "format": FORMAT,
        "pydantic_monty": monty_version(),
        "id": paused.id,
        "held": [asdict(call) for call in paused.held],
        "calls": [asdict(call) for call in paused.calls],
        "suspensions": paused.suspensions,
        "printed": paused.printed,
        "printed_dropped": paused.printed_dropped,
        "elapsed": paused.elapsed,
        "bound": list(paused.bound),
        "kept_as_last_value": paused.kept_as_last_value,
        "value_at": list(paused.value_at) if paused.value_at is not None else None,
        "assigned": paused.assigned,
        "owner": paused.owner,
        "repl": paused.repl,
    }
    return MAGIC + json.dumps(header).encode()


def unpack_paused(data: bytes) -> PausedSnippet:
    """The ``PausedSnippet`` packed in ``data``; ``StateDiscarded`` for anything else."""
    if not data.startswith(MAGIC):
        raise StateDiscarded("not a paused snippet (corrupt or foreign bytes)")
    try:
        header = json.loads(data[len(MAGIC) :])
        if header["format"] != FORMAT:
            raise StateDiscarded(f"it has an unknown format ({header['format']!r})")
        if header["pydantic_monty"] != monty_version():
            raise StateDiscarded(f"it was saved by pydantic-monty {header['pydantic_monty']}")
        return PausedSnippet(
            id=str(header["id"]),
            held=tuple(HeldCall(**call) for call in header["held"]),
            calls=tuple(NestedCall(**call) for call in header["calls"]),
            suspensions=int(header["suspensions"]),
            printed=str(header["printed"]),
            printed_dropped=int(header["printed_dropped"]),
            elapsed=float(header["elapsed"]),
            bound=tuple(str(name) for name in header["bound"]),
            kept_as_last_value=bool(header["kept_as_last_value"]),
            value_at=_value_at(header.get("value_at")),
            assigned=_assigned(header.get("assigned")),
            owner=str(header["owner"]),
            repl=str(header["repl"]),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise StateDiscarded(f"its header is corrupt ({type(exc).__name__})") from None


class SnippetHeld(Exception):
    """The snippet is blocked on held calls only: ``snapshot`` is its paused state."""

    def __init__(self, snapshot: pm.AsyncFutureSnapshot, held: dict[int, HeldCall]) -> None:
        super().__init__(f"{len(held)} calls wait for approval")
        self.snapshot = snapshot
        self.held = held


Holder = Callable[[pm.AsyncFunctionSnapshot], HeldCall | None]
"""Decides whether a call is held (the ``HeldCall``) or runs now (``None``)."""
Snapshot = pm.AsyncFunctionSnapshot | pm.AsyncNameLookupSnapshot | pm.AsyncFutureSnapshot | pm.MontyComplete


async def drive(snapshot: Snapshot, hold: Holder, held: dict[int, HeldCall]) -> Any:
    """Run a started feed to its end (its value), holding what ``hold`` picks; raises
    ``SnippetHeld`` once nothing but held calls is left to wait for. ``held`` collects the calls
    held so far (a resumed snippet's own still wait in it)."""
    while True:
        if isinstance(snapshot, pm.MontyComplete):
            return snapshot.output
        if isinstance(snapshot, pm.AsyncFunctionSnapshot) and not snapshot.is_os_function:
            call = hold(snapshot)
            if call is not None:
                held[snapshot.call_id] = call
                snapshot = await snapshot.resume({"future": ...})
                continue
        if isinstance(snapshot, pm.AsyncFutureSnapshot):
            pending = set(snapshot.pending_call_ids)
            if pending and pending <= held.keys():
                raise SnippetHeld(snapshot, {i: held[i] for i in pending})
        snapshot = await snapshot.resume_auto()


def settled(outcome: Any) -> pm.ExternalSettledResult:
    """A held call's answer as a future's settlement: a host reply, or an exception to raise."""
    if isinstance(outcome, BaseException):
        return {"exception": outcome}
    return {"return_value": outcome}


def _assigned(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _value_at(listed: object) -> tuple[int, int] | None:
    if isinstance(listed, list) and len(listed) == 2 and all(type(n) is int for n in listed):
        return listed[0], listed[1]
    return None
