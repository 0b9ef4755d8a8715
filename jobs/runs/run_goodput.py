"""A run's goodput and progress read from the head: its attempts' records and logs, its
supervisors' records."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from jobs.client.types import JobDetails
from jobs.recipes.catalogue import RECIPES
from jobs.recipes.overrides import parse
from jobs.runs import goodput, metrics, save_period
from jobs.runs.metadata import RecipeRun


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
) -> tuple[goodput.Goodput, metrics.Curves]:
    """The run's goodput and its curves (attempts merged in order, a later attempt's value for a
    step winning); `logs(submission_id)` reads one attempt's log (Dashboard.logs)."""
    merged = metrics.Curves()
    traces = []
    for job in attempts:
        curves = metrics.parse(logs(job.submission_id or ""))
        traces.append(trace(job, curves))
        merged.merge(curves)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    return goodput.account(traces, records, now, gpus_of(attempts)), merged


def save_advice(
    attempts: Sequence[JobDetails],
    spent: goodput.Goodput,
    curves: metrics.Curves,
    provisioning: str | None,
) -> dict[str, Any] | None:
    """The run's configured save period beside the Young/Daly one for what it has shown (its
    median step and save, its interruptions; jobs/runs/save_period.py), or None for a run that
    is not a recipe run or has not timed a step and a save yet."""
    recorded = next(
        (r for r in (RecipeRun.of_job(j.metadata) for j in reversed(attempts)) if r), None
    )
    recipe = RECIPES.get(recorded.recipe) if recorded else None
    if recorded is None or recipe is None:
        return None
    user = {o.key: o.value for o in parse([str(i) for i in recorded.overrides])}
    restarts = [float(i["settle"]) + float(i["restart"]) for i in spent.interruptions]
    ran_s = spent.total_s - spent.seconds["capacity"] - spent.seconds["settle"]
    seen = save_period.measured(
        goodput.steps_of(curves.points, recorded.framework), restarts, ran_s
    )
    # The alignment composes the framework's config: only worth it once there is advice to give.
    timed = bool(seen.step_s and seen.save_s)
    align = recipe.save_alignment(user) if timed else None
    advice = save_period.advise(seen, provisioning, recorded.nodes, align) if timed else None
    configured = recipe.value_of(recipe.save_key, user)
    return {
        "key": recipe.save_key,
        "configured_steps": int(configured) if configured and configured.isdigit() else None,
        "young_daly": advice.as_json() if advice else None,
    }
