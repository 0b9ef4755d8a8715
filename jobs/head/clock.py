"""Time as the supervisor, the run store and the re-armer see it: wall clock, monotonic clock, waits.

Production uses `REAL` (the `time` module and `threading.Event.wait`). The deterministic
simulation of supervision (tests/jobs/head/sim/) passes its own clock, whose `wait` advances a
simulated world instead of sleeping, so hours of capacity waits run in microseconds with the
real supervisor code. Standard library only: it runs on the Ray head.
"""

from __future__ import annotations

import threading
import time


class Clock:
    """The real clock; a simulation subclasses it."""

    def time(self) -> float:
        """Seconds since the epoch (lease times, Ray's node table times are in ms of this)."""
        return time.time()

    def monotonic(self) -> float:
        """Seconds for durations (settle, waits, stall)."""
        return time.monotonic()

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """Sleep up to `seconds`, returning early (True) when `event` is set."""
        return event.wait(seconds)


REAL = Clock()
