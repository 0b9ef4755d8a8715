"""`list`'s step and time columns: where each run's training is, and how long the run has lasted."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from jobs.common.errors import JobsError
from jobs.runs import metrics, run_step

# The latest attempts' logs are read at once: `list` stays one round trip long, not one per run.
_READERS = 8


def with_steps(
    rows: list[dict[str, Any]],
    logs: Callable[[str], str],
    records: Mapping[str, list[dict[str, Any]]] | None = None,
) -> None:
    """Add `step` (the last step the run logged, and `of` its total when the framework prints
    one) to each row with an attempt: its latest attempt's log, or the step its supervisor
    recorded at an earlier attempt's end when that is further (jobs/runs/run_step.py: a log lost
    with its node, an attempt that has not logged a step yet); `logs(submission_id)` reads one
    log, `records` are the supervised runs' records by run."""

    def step_of(row: dict[str, Any]) -> dict[str, Any] | None:
        numbered = [a for a in row["attempts"] if a.get("attempt")]
        if not numbered:
            return None
        recs = (records or {}).get(row["run"], [])
        try:
            logged = metrics.progress(metrics.parse(logs(numbered[-1]["submission_id"])))
        except (JobsError, OSError, RuntimeError, ValueError):
            # A log Ray cannot read (a job whose driver never started answers 500) shows no
            # step; it never fails the listing.
            logged = None
        return run_step.reached(logged, recs)

    with ThreadPoolExecutor(max_workers=_READERS) as pool:
        for row, progress in zip(rows, pool.map(step_of, rows), strict=True):
            row["step"] = progress["step"] if progress else None
            row["of"] = progress.get("of") if progress else None


def duration_s(started_ms: float | None, ended_ms: float | None, now: float | None = None) -> float:
    """Seconds from the run's start to its end, or to now while it is not over."""
    if not started_ms:
        return 0.0
    end = ended_ms if ended_ms else (time.time() if now is None else now) * 1000
    return max(0.0, (end - started_ms) / 1000)


def human_duration(seconds: float) -> str:
    """`45 s`, `12 min`, `3 h 05 min`, `2 d 04 h`: short enough for a list's line."""
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    return f"{s // 86400} d {s % 86400 // 3600:02d} h"


def step_text(step: int | None, of: int | None) -> str:
    if step is None:
        return ""
    return f"step {step}" + (f"/{of}" if of else "")
