"""The executor's memory budget: boxes start only while the memory they may hold fits in it.

Each box is bounded per process (RLIMIT_AS) and by its tmpfs size, but the executor runs many at
once: compiles for the service's concurrent solutions and test boxes from its worker pool. Without
a total, three hostile compiles held 5 GiB in an 8 GiB pod. With no cgroup to
bound them together (this machine, and gVisor pods, delegate no memory controller), the executor
adds up what each box may hold at most and starts one only while the sum stays within the budget:
the pod's memory stays an upper bound by construction, whatever the boxes do.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class MemoryBudget:
    """Bytes the running boxes may hold together; `None` total: unbounded (no accounting)."""

    def __init__(self, total: int | None) -> None:
        if total is not None and total <= 0:
            raise ValueError(f"memory budget {total} bytes: expected a positive number")
        self.total = total
        self.held = 0
        self.peak = 0
        self._changed = threading.Condition()

    def acquire(
        self, need: int, give_up: Callable[[], bool] = lambda: False, poll_s: float = 0.05
    ) -> bool:
        """Wait until `need` bytes fit beside what the running boxes hold, and take them; False
        when `give_up()` turned true first (a deadline passed, the client went away). A need
        larger than the whole budget is refused at once: it could never fit."""
        if self.total is None:
            return True
        if need > self.total:
            raise ValueError(
                f"a box that may hold {need} bytes cannot fit in the executor's memory budget "
                f"of {self.total} bytes"
            )
        with self._changed:
            while self.held + need > self.total:
                if give_up():
                    return False
                self._changed.wait(poll_s)
            self.held += need
            self.peak = max(self.peak, self.held)
            return True

    def release(self, need: int) -> None:
        if self.total is None:
            return
        with self._changed:
            self.held -= need
            self._changed.notify_all()


def past(deadline: float | None) -> Callable[[], bool]:
    """A give-up test for `acquire`: the monotonic deadline has passed."""
    return lambda: deadline is not None and time.monotonic() >= deadline
