"""A clock for unit tests of head code: time moves only when the test (or a wait) moves it."""

from __future__ import annotations

import threading

from jobs.head.clock import Clock


class StepClock(Clock):
    """Wall and monotonic time are one number, `now`; a wait adds its seconds to it."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now

    def wait(self, event: threading.Event, seconds: float) -> bool:
        self.now += seconds
        return event.is_set()
