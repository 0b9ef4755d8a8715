"""The restart loop: resubmit a failed attempt with the same checkpoint directory.

Both frameworks resume from the newest checkpoint in their checkpoint directory on start
(reference §0.2), so "restart" is simply the same entrypoint under the next attempt's id.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from jobs.job_types import JobStatus


@dataclass
class Outcome:
    """Every attempt's id and final status, in order."""

    attempts: list[tuple[str, JobStatus]] = field(default_factory=list)

    @property
    def status(self) -> JobStatus | None:
        return self.attempts[-1][1] if self.attempts else None

    @property
    def succeeded(self) -> bool:
        return self.status == JobStatus.SUCCEEDED


def should_restart(status: JobStatus, restarts_left: int) -> bool:
    """Restart only failures (a reclaimed spot node, a dead worker), never a job the user
    stopped (STOPPED), and only while restarts are left."""
    return status == JobStatus.FAILED and restarts_left > 0


def run(submit: Callable[[int], str], watch: Callable[[str], JobStatus], max_restarts: int,
        on_restart: Callable[[str, int], object] = lambda _id, _n: None,
        first_attempt: int = 1) -> Outcome:
    """Submit attempt after attempt until one succeeds, is stopped, or restarts run out."""
    outcome = Outcome()
    attempt = first_attempt
    restarts_left = max_restarts
    while True:
        job_id = submit(attempt)
        status = watch(job_id)
        outcome.attempts.append((job_id, status))
        if not should_restart(status, restarts_left):
            return outcome
        restarts_left -= 1
        attempt += 1
        on_restart(job_id, attempt)
