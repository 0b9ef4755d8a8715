"""The step a run reached, told alike by every view: what its readable step lines show, or what its
supervisor recorded at each attempt's end when those lines are gone.

A spot reclaim takes the log of a driver on a GPU node with the node, and the cluster's views
read logs; the runs root keeps each attempt's step lines. The supervisor writes the highest step
an attempt logged into its `attempt_ended` record (jobs/head/attempt_end.py), which both sources
read, so `list` and `status` from the cluster and from the runs root give one step.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from jobs.head import events as ev


def recorded(records: Iterable[Mapping[str, Any]]) -> int | None:
    """The highest step any ended attempt of the run logged, by its supervisor's records."""
    steps = [
        int(r["last_step"])
        for r in records
        if r.get("event") == ev.ATTEMPT_ENDED and isinstance(r.get("last_step"), int)
    ]
    return max(steps, default=None)


def reached(
    progress: dict[str, Any] | None, records: Iterable[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """`progress` (jobs/runs/metrics.py `progress`) with the step the records hold when that
    is further: the run's progress as every view tells it."""
    step = recorded(records)
    if step is None or (progress is not None and progress["step"] >= step):
        return progress
    return {**(progress or {"of": None, "epoch": None, "seconds_per_step": None}), "step": step}
