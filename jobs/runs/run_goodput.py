"""A run's goodput and progress: read from the head (its attempts' records and logs, its
supervisors' records), or from the run's record on the runs root alone (`of_record`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from jobs.client.types import JobDetails
from jobs.head import events as ev
from jobs.head.run_store import RunStore
from jobs.recipes.overrides import parse
from jobs.runs import goodput, metrics, save_period
from jobs.runs.metadata import RecipeRun
from jobs.runs.run_life import gpus_of, run_gpus, trace


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
    return goodput.account(traces, records, now, gpus_of(attempts, records)), merged


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
    if recorded is None:
        return None
    from jobs.recipes.catalogue import RECIPES  # lazy, for start-up time: recipe runs only

    recipe = RECIPES.get(recorded.recipe)
    if recipe is None:
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


def record_ms(record: Mapping[str, Any]) -> int | None:
    """When a record was written, in ms (records before `ended_ms` carry only their stamp)."""
    if record.get("ended_ms"):
        return int(record["ended_ms"])
    try:
        return int(datetime.strptime(str(record["t"]), "%Y-%m-%dT%H:%M:%S%z").timestamp() * 1000)
    except (KeyError, ValueError):
        return None


def of_record(
    store: RunStore, records: Sequence[dict[str, Any]], now_ms: int | None = None
) -> tuple[goodput.Goodput, metrics.Curves]:
    """The run's goodput and curves from its record on the runs root: each attempt's start and
    end as the supervisor recorded them, its steps from the lines kept at its end (an attempt
    whose lines were not kept, a head lost mid-attempt, shows no step: its time is restart)."""
    spec = store.spec() or {}
    recorded = RecipeRun.of_job(spec.get("metadata"))
    framework = recorded.framework if recorded else ""
    declared = recorded.nodes * recorded.gpus_per_node if recorded else spec.get("gpus_needed")
    gpus = run_gpus(declared if isinstance(declared, int) else None, records)
    final = ev.outcome(list(records))
    starts: dict[str, int | None] = {}
    ends: dict[str, int | None] = {}
    for r in records:
        sid = r.get("submission_id")
        if not sid:
            continue
        if r["event"] == ev.SUBMITTED:
            starts[sid] = int(r["started_ms"]) if r.get("started_ms") else record_ms(r)
        elif r["event"] == ev.ATTEMPT_ENDED:
            ends[sid] = record_ms(r)
    merged = metrics.Curves()
    traces = []
    for sid, start in starts.items():
        curves = metrics.parse(store.progress(sid))
        # An attempt without its end on the record ended with the run, if the run is over.
        end = ends.get(sid) or (record_ms(final) if final else None)
        traces.append(
            goodput.AttemptTrace(sid, start, end, goodput.steps_of(curves.points, framework))
        )
        merged.merge(curves)
    # A run that is over lives until its final record, whenever it is read.
    over = record_ms(final) if final else None
    now = over or (int(time.time() * 1000) if now_ms is None else now_ms)
    return goodput.account(traces, records, now, gpus), merged
