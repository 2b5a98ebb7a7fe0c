"""MemoryBudget: the bytes of object bodies one process holds at once, shared by every reader and writer.

Each reader bounds itself to `range_size * (1 + prefetch)` and each writer to
`part_size * (in_flight + 1)`, but a job runs dozens of them at once: 32 worker
threads each reading and writing large objects would hold 32 x 80 MiB, more than a
1 GiB Lambda has. The budget caps what they hold together. What it caps is the
extra: prefetched ranges (skipped when the budget is short) and parts beyond the
first on the wire (the writer waits). A caller holding nothing may always take one
unit, so every object still progresses and nobody waits on a range another thread
holds: no deadlock, and memory stays under `limit + threads * (range + part)`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class MemoryBudget:
    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("a memory budget needs at least one byte")
        self.limit = limit
        self.used = 0
        self.peak = 0
        self._cond = threading.Condition()

    def take(self, n: int, *, holding: Callable[[], bool], wait: bool) -> bool:
        """Reserve n bytes. A caller holding nothing (`holding()`, asked again after each wake-up) gets them at once;
        otherwise it waits for room (or, with wait=False, gives up)."""
        with self._cond:
            while self.used + n > self.limit and holding():
                if not wait:
                    return False
                self._cond.wait()
            self.used += n
            self.peak = max(self.peak, self.used)
            return True

    def give(self, n: int) -> None:
        with self._cond:
            self.used -= n
            self._cond.notify_all()


def nothing() -> bool:
    return False


def something() -> bool:
    return True
