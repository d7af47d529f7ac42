"""Records that expire a fixed time after they were last written, kept in write order so the
expired ones are dropped from the front as new ones are written (a map that only ever grew
otherwise: every stateless run mints a handle, every paused snippet a pause)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Expiring(Generic[T]):
    def __init__(self, ttl: float, clock: Callable[[], float]) -> None:
        self.ttl = ttl
        self.clock = clock
        self._records: OrderedDict[str, tuple[T, float]] = OrderedDict()

    def __len__(self) -> int:
        """Records held, expired ones included until the next write."""
        return len(self._records)

    def put(self, key: str, value: T) -> None:
        now = self.clock()
        self._records[key] = (value, now + self.ttl)
        self._records.move_to_end(key)
        while self._records and next(iter(self._records.values()))[1] < now:
            self._records.popitem(last=False)

    def get(self, key: str) -> T | None:
        found = self._records.get(key)
        if found is None or found[1] < self.clock():
            self._records.pop(key, None)
            return None
        return found[0]

    def pop(self, key: str) -> T | None:
        value = self.get(key)
        self._records.pop(key, None)
        return value
