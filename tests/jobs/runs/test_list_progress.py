"""`list`'s step and time columns (jobs/runs/list_progress.py)."""

from __future__ import annotations

import pytest

from jobs.common.errors import UsageError
from jobs.runs import list_progress


def _row(run: str, attempt: int | None) -> dict:
    attempts = [{"submission_id": f"{run}-a{attempt}", "attempt": attempt}] if attempt else []
    return {"run": run, "attempts": attempts}


def test_a_log_ray_cannot_read_shows_no_step_and_the_listing_goes_on() -> None:
    """The final CI of this change: Ray answered 500 for a job whose driver never started, and
    `list` failed for every run."""
    logs = {"good-a2": "step:6 - timing_s/step:1.0\nstep:7 - timing_s/step:1.0\n"}

    def read(submission_id: str) -> str:
        if submission_id not in logs:
            raise UsageError(f"Ray refused to read the logs of {submission_id}: status code 500")
        return logs[submission_id]

    rows = [_row("good", 2), _row("broken", 1), _row("waiting", None)]
    list_progress.with_steps(rows, read)
    assert [(r["run"], r["step"]) for r in rows] == [
        ("good", 7),
        ("broken", None),
        ("waiting", None),
    ]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(5, "5 s"), (125, "2 min"), (3725, "1 h 02 min"), (2 * 86400 + 4 * 3600, "2 d 04 h")],
)
def test_durations_read_short(seconds: float, text: str) -> None:
    assert list_progress.human_duration(seconds) == text


def test_a_run_not_over_lasts_until_now() -> None:
    assert list_progress.duration_s(1_000_000, None, now=1_100.0) == 100.0
    assert list_progress.duration_s(1_000_000, 1_060_000, now=5_000.0) == 60.0
    assert list_progress.duration_s(None, None) == 0.0
