"""The simulation's processes: threads that run one at a time, passing a baton, kept for reuse.

A simulated process (a supervisor, tests/jobs/head/sim/world.py `spawn`) runs the real,
blocking supervisor code, so it needs a thread of its own; exactly one thread holds the baton
(its `Runner.baton` released) at any time, so a schedule stays deterministic. Two costs of the
obvious shape are avoided, both measured as a tenth or more of a schedule's CPU time
(docs/benchmarks.md, "The supervision simulation"): a new thread per process (a schedule starts
two or three supervisors, each start waits for the new thread to be scheduled), and
`threading.Semaphore` as the baton (a Python-level Condition around a lock). Here a process runs
on a parked worker thread when one is free, and the baton is a bare lock, which any thread may
release (`_thread.LockType`, unlike an RLock).
"""

from __future__ import annotations

import _thread
import itertools
import threading
from collections.abc import Callable


class Runner:
    """A simulated process: due at `wake` (or at once when killed or its event is set)."""

    seq = itertools.count()
    __slots__ = ("name", "baton", "wake", "event", "killed", "done", "order")

    def __init__(self, name: str) -> None:
        self.name = name
        self.baton = _thread.allocate_lock()
        self.baton.acquire()  # held: released once, when it is this runner's turn
        self.wake = 0.0
        self.event: threading.Event | None = None
        self.killed = False
        self.done = False
        self.order = next(self.seq)

    def due(self, now: float) -> float:
        if self.killed or (self.event is not None and self.event.is_set()):
            return now
        return self.wake

    def take(self) -> None:
        """Block until another thread hands this runner the baton."""
        self.baton.acquire()

    def give(self) -> None:
        """Hand this runner the baton (from the thread that holds it)."""
        self.baton.release()


class _Worker:
    """A daemon thread that runs one process after another; parked in `_IDLE` between them."""

    def __init__(self) -> None:
        self.go = _thread.allocate_lock()
        self.go.acquire()
        self.job: Callable[[], None] | None = None
        threading.Thread(target=self._loop, name="sim-worker", daemon=True).start()

    def _loop(self) -> None:
        while True:
            self.go.acquire()
            job, self.job = self.job, None
            assert job is not None
            job()


_IDLE: list[_Worker] = []


def start(job: Callable[[Callable[[], None]], None]) -> None:
    """Run `job(park)` on a worker thread. The job must call `park()` before its last hand-off
    of the baton: from then on the worker may be given the next process, which it starts once
    this job has returned (its `go` lock stays released until then)."""
    worker = _IDLE.pop() if _IDLE else _Worker()

    def park() -> None:
        _IDLE.append(worker)

    worker.job = lambda: job(park)
    worker.go.release()
