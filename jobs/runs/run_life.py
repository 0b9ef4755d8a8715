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
    """The run's GPUs as the cluster tells them: nodes x GPUs per node of its latest attempt
    that recorded its size (a recipe run), else the GPUs its supervisor was told it needs (`run
    --gpus N`, or 0 without it: the `armed` record, as the runs root's view reads its spec), else
    the GPUs its latest attempt reserved (`run --gpus N` unsupervised); then `run_gpus`."""
    declared: int | None = None
    for job in reversed(attempts):
        recorded = RecipeRun.of_job(job.metadata)
        if recorded is not None:
            declared = recorded.nodes * recorded.gpus_per_node
            break
    armed = [r["gpus_needed"] for r in records if r.get("event") == ev.ARMED]
    armed = [g for g in armed if isinstance(g, int)]
    if declared is None and armed:
        declared = armed[-1]
    if declared is None:
        # Ray's job record does not give a reservation back: `run` records it in the metadata.
        asked = [Reserve.from_json((j.metadata or {}).get("reserve", "")).gpus for j in attempts]
        given = [g for g in asked if g]
        declared = int(given[-1]) if given else None
    return run_gpus(declared, records)


def run_gpus(declared: int | None, records: Sequence[Mapping[str, Any]]) -> int | None:
    """The one GPU count of a run in every view (status, list, report, cost, the runs root's):
    what it declares, or more when its supervisor learnt its workers ran on nodes with more
    (`gpus_used`: a `run` without --gpus whose tasks sit on GPU nodes); None when nothing says.
    A run that declares 0 and used none counts 0 GPUs: 0 GPU-hours, not unknown."""
    used = [
        int(r["gpus_used"])
        for r in records
        if r.get("event") == ev.GPUS_USED and isinstance(r.get("gpus_used"), int)
    ]
    if declared is None and not used:
        return None
    return max([declared or 0, *used])


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
