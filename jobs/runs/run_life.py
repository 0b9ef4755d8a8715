"""A run's life without its logs: each attempt's span, the run's GPUs, its length and GPU-hours.

`list` and `cost` tell the duration and GPU-hours `status` does (its goodput's total) without
reading a log: only the split of the life into productive, redone and saves needs step lines
(jobs/runs/run_goodput.py reads them). Kept light: `list` imports it at start-up.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from jobs.client.types import JobDetails
from jobs.head import events as ev
from jobs.runs import goodput, metrics
from jobs.runs.metadata import RecipeRun, Reserve


def trace(job: JobDetails, curves: metrics.Curves) -> goodput.AttemptTrace:
    """One attempt as goodput reads it: Ray's start and end, the steps its log shows."""
    recorded = RecipeRun.of_job(job.metadata)
    framework = recorded.framework if recorded else ""
    return goodput.AttemptTrace(
        submission_id=job.submission_id or job.job_id or "",
        start_ms=job.start_time,
        end_ms=job.end_time,
        steps=goodput.steps_of(curves.points, framework),
    )


def gpus_of(
    attempts: Sequence[JobDetails], records: Sequence[Mapping[str, Any]] = ()
) -> int | None:
    """The run's GPUs: nodes x GPUs per node of its latest attempt that recorded its size (a
    recipe run), else the GPUs its supervisor was told it needs (`run --gpus N`, the `armed`
    record, as the runs root's view reads its spec), else the GPUs its latest attempt reserved
    (`run --gpus N` unsupervised); None when nothing says."""
    for job in reversed(attempts):
        recorded = RecipeRun.of_job(job.metadata)
        if recorded is not None:
            return recorded.nodes * recorded.gpus_per_node
    armed = [
        r["gpus_needed"] for r in records if r.get("event") == ev.ARMED and r.get("gpus_needed")
    ]
    if armed:
        return int(armed[-1])
    # Ray's job record does not give a reservation back: `run` records it in the metadata.
    asked = [Reserve.from_json((j.metadata or {}).get("reserve", "")).gpus for j in attempts]
    given = [g for g in asked if g]
    return int(given[-1]) if given else None


def life_gpu_hours(found: Any, records: Sequence[dict[str, Any]]) -> float | None:
    """The GPU-hours of a run's life (`found`: a jobs/runs/state.py Run), as `status` counts them."""
    hours = life(found.attempts, records, found.ended).gpu_hours()
    return None if hours is None else sum(hours.values())


def life(
    attempts: Sequence[JobDetails],
    records: Sequence[dict[str, Any]],
    now_ms: int | None = None,
) -> goodput.Goodput:
    """The run's life without reading a log: its length and GPU-hours are goodput's total (only
    the split into productive, redone and saves needs the step lines), so `list` and `cost`
    tell the duration and GPU-hours `status` does. `now_ms`: when its last job ended, for a run
    that is over (its life never grows after), else now."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    traces = [trace(job, metrics.Curves()) for job in attempts]
    return goodput.account(traces, records, now, gpus_of(attempts, records))
