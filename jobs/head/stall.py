"""The stall timeout an attempt is held to: the run's configured one, tightened by its own rhythm.

A fixed timeout has to cover the worst case of every run: the first load of a 70B model with a
Megatron conversion and a ~1 TB save on Lustre, hence 7200 s for recipes
(protocol.RECIPE_STALL_TIMEOUT_S). For a run making a step every two minutes that is a hang
costing up to two hours of every GPU. Once the attempt has shown its rhythm
(at least `MIN_INTERVALS` step intervals and one complete save, seen in this supervisor's life),
the timeout becomes `STEP_MULTIPLE` x its median step or `SAVE_MULTIPLE` x its longest save,
whichever is longer, never under `FLOOR_S` and never over the configured timeout (the load
before the first step, and a run that never saved yet, keep the configured one: a save can be
far longer than a step). 0 (off) stays off.
Standard library only: it runs in the supervisor on the head.
"""

from __future__ import annotations

import re
import statistics

MIN_INTERVALS = 3
STEP_MULTIPLE = 10.0
SAVE_MULTIPLE = 2.0
FLOOR_S = 900.0
# A save in progress: NeMo RL's tmp_step_N (checkpoints.py NEMO_PARTIAL); veRL's global_step_N
# before its tracker names it is not told apart here, so a veRL run relies on its steps alone
# until a NeMo-style save is seen, i.e. keeps the configured timeout.
_SAVING = re.compile(r"^tmp_step_(?P<n>[0-9]+)$")


class Rhythm:
    """Step and save times of the attempts one supervisor watched (fed at every poll)."""

    def __init__(self) -> None:
        self.intervals: list[float] = []  # seconds per step
        self.saves: list[float] = []  # seconds from tmp_step_N appearing to it going away
        self._last: tuple[float, int] | None = None  # (when, steps) at the last new step
        self._saving: dict[str, float] = {}

    def new_attempt(self) -> None:
        """A new attempt starts from a load: its first step is not an interval of the last."""
        self._last = None
        self._saving = {}

    def observe(self, now: float, steps: int | None, entries: frozenset[str]) -> None:
        if steps is not None:
            if self._last is not None and steps > self._last[1]:
                self.intervals.append((now - self._last[0]) / (steps - self._last[1]))
            if self._last is None or steps > self._last[1]:
                self._last = (now, steps)
        saving = {n for n in entries if _SAVING.match(n)}
        for name in saving - self._saving.keys():
            self._saving[name] = now
        for name in set(self._saving) - saving:
            self.saves.append(now - self._saving.pop(name))

    def timeout(self, configured: float) -> float:
        """The stall timeout that applies now."""
        if configured <= 0 or len(self.intervals) < MIN_INTERVALS or not self.saves:
            return configured
        derived = max(
            STEP_MULTIPLE * statistics.median(self.intervals),
            SAVE_MULTIPLE * max(self.saves),
            FLOOR_S,
        )
        return min(configured, derived)
