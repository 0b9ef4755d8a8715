"""The restart loop's decisions (the real-cluster path is in test_cli_cluster.py)."""

from __future__ import annotations

from ray.job_submission import JobStatus

from jobs import attempts

S, F, X = JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.STOPPED


def drive(results: list[JobStatus], max_restarts: int) -> tuple[attempts.Outcome, list[int]]:
    submitted: list[int] = []
    statuses = iter(results)

    def submit(n: int) -> str:
        submitted.append(n)
        return f"run-a{n}"

    outcome = attempts.run(submit, lambda _id: next(statuses), max_restarts)
    return outcome, submitted


def test_failure_then_success_uses_the_next_attempt():
    outcome, submitted = drive([F, S], 1)
    assert submitted == [1, 2] and outcome.succeeded
    assert outcome.attempts == [("run-a1", F), ("run-a2", S)]


def test_a_stopped_job_is_never_restarted():
    outcome, submitted = drive([X], 5)
    assert submitted == [1] and outcome.status == X and not outcome.succeeded


def test_restarts_are_bounded():
    outcome, submitted = drive([F, F, F], 2)
    assert submitted == [1, 2, 3] and outcome.status == F


def test_no_restarts_by_default():
    _, submitted = drive([F], 0)
    assert submitted == [1]
