"""A run's goodput read from the head: its attempts' records and logs, its supervisors' records."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from jobs.client.types import JobDetails
from jobs.runs import goodput, metrics
from jobs.runs.metadata import RecipeRun


def trace(job: JobDetails, log: str) -> goodput.AttemptTrace:
    """One attempt as goodput reads it: Ray's start and end, the steps its log shows."""
    recorded = RecipeRun.of_job(job.metadata)
    framework = recorded.framework if recorded else ""
    return goodput.AttemptTrace(
        submission_id=job.submission_id or job.job_id or "",
        start_ms=job.start_time,
        end_ms=job.end_time,
        steps=goodput.steps_of(metrics.parse(log).points, framework),
    )


def gpus_of(attempts: Sequence[JobDetails]) -> int | None:
    """Nodes x GPUs per node of the run's latest attempt that recorded its size."""
    for job in reversed(attempts):
        recorded = RecipeRun.of_job(job.metadata)
        if recorded is not None:
            return recorded.nodes * recorded.gpus_per_node
    return None


def of_run(
    attempts: Sequence[JobDetails],
    records: Sequence[dict[str, Any]],
    logs: Callable[[str], str],
    now_ms: int | None = None,
) -> goodput.Goodput:
    """The run's goodput; `logs(submission_id)` reads one attempt's log (Dashboard.logs)."""
    traces = [trace(job, logs(job.submission_id or "")) for job in attempts]
    now = int(time.time() * 1000) if now_ms is None else now_ms
    return goodput.account(traces, records, now, gpus_of(attempts))
