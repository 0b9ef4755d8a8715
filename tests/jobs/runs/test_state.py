"""One reading of a run's jobs for every command (jobs/runs/state.py), over the states a run
goes through: its status, whether its name is taken, whether `submit --resume` takes it, and
that `status` suggests a resume exactly when the resume would take it."""

from __future__ import annotations

import json

import pytest

from jobs.client.types import JobDetails, JobStatus
from jobs.common.errors import UsageError
from jobs.head import protocol
from jobs.runs import state

R = JobStatus.RUNNING
RECIPE_META = {
    "run": "r",
    "kind": "recipe",
    "attempt": "1",
    "recipe": "nemo-rl-grpo-math",
    "framework": "nemo-rl",
    "framework_version": "v0.4.0",
    "nodes": "1",
    "gpus_per_node": "8",
    "checkpoint_dir": "/lustre/runs/r/checkpoints",
    "overrides": "[]",
}
COMMAND_META = {"run": "r", "kind": "command", "attempt": "1"}


def _sup(status: JobStatus, attempt_meta: dict[str, str], n: int = 1, start: int = 1) -> JobDetails:
    spec = protocol.Spec(
        run="r",
        first_attempt=1,
        max_restarts=1,
        gpus_needed=8,
        checkpoint_dir="",
        entrypoint="true",
        runtime_env={},
        metadata=attempt_meta,
    )
    return JobDetails(
        status=status,
        entrypoint="python -m jobs.head.supervisor",
        submission_id=f"r-s{n}",
        start_time=start,
        metadata={"run": "r", "kind": "supervisor", "spec": json.dumps(spec.to_dict())},
    )


def _attempt(status: JobStatus, meta: dict[str, str], n: int = 1) -> JobDetails:
    return JobDetails(
        status=status,
        entrypoint="x",
        submission_id=f"r-a{n}",
        start_time=10 + n,
        metadata={**meta, "attempt": str(n)},
    )


def _stop_job() -> JobDetails:
    return JobDetails(
        status=JobStatus.SUCCEEDED,
        entrypoint="python -m jobs.head.stop r",
        submission_id="r-stop1",
        start_time=50,
        metadata={"run": "r", "kind": "stop"},
    )


F, S, OK = JobStatus.FAILED, JobStatus.STOPPED, JobStatus.SUCCEEDED
# (state, jobs, supervisor's outcome, status shown, resumable)
CASES = [
    ("waiting", [_sup(R, RECIPE_META)], None, "WAITING", False),
    ("died before a1 (recipe)", [_sup(F, RECIPE_META)], None, "FAILED", True),
    # A `run` run is resumed as Ray recorded it (jobs/runs/resume_command.py).
    ("died before a1 (command)", [_sup(F, COMMAND_META)], None, "FAILED", True),
    # Refused by its supervisor (a runs root missing on the head): the resume sends it again
    # with its settings and runs root once the cause is fixed (it said "another --name").
    ("refused", [_sup(OK, COMMAND_META)], {"event": "refused"}, "SUCCEEDED", True),
    ("running", [_sup(R, RECIPE_META), _attempt(R, RECIPE_META)], None, "RUNNING", False),
    (
        "unsupervised, attempt running",
        [_sup(F, RECIPE_META), _attempt(R, RECIPE_META)],
        None,
        "RUNNING",
        False,
    ),
    (
        "unsupervised, command running",
        [_sup(F, COMMAND_META), _attempt(R, COMMAND_META)],
        None,
        "RUNNING",
        False,
    ),
    (
        "gave up",
        [_sup(OK, RECIPE_META), _attempt(F, RECIPE_META)],
        {"event": "gave_up"},
        "FAILED",
        True,
    ),
    (
        "stopped by the user",
        [_sup(F, RECIPE_META), _attempt(S, RECIPE_META), _stop_job()],
        None,
        "STOPPED",
        True,
    ),
    (
        "succeeded",
        [_sup(OK, RECIPE_META), _attempt(OK, RECIPE_META)],
        {"event": "finished"},
        "SUCCEEDED",
        False,
    ),
    ("unsupervised failed command", [_attempt(F, COMMAND_META)], None, "FAILED", True),
    (
        "resumed by hand",
        [_attempt(F, RECIPE_META), _attempt(S, RECIPE_META, 2)],
        None,
        "STOPPED",
        True,
    ),
]


@pytest.mark.parametrize(
    ("what", "jobs", "outcome", "shown", "resumable"), CASES, ids=[c[0] for c in CASES]
)
def test_every_command_reads_a_run_alike(what, jobs, outcome, shown, resumable):
    run = state.find(jobs, "r")
    assert run is not None
    assert run.status == shown
    [row] = state.group(jobs)
    assert row["status"] == shown  # `list` says what `status` says
    with pytest.raises(UsageError, match="already exists on this cluster"):
        state.refuse_taken(jobs, "r")  # the name is taken by any job of the run
    refusal = state.not_resumable(run, "r", "")
    assert (refusal is None) == resumable, refusal
    steps = state.next_steps(run, outcome, "")
    suggested = [s for s in steps if "submit --resume r" in s and not s.startswith("once")]
    assert bool(suggested) == resumable, steps  # suggested exactly when it would work


def test_a_free_name_is_free_and_an_unknown_run_is_named():
    state.refuse_taken([_attempt(F, COMMAND_META)], "other")
    refusal = state.not_resumable(state.find([], "other"), "other", "")
    assert refusal is not None and "no run named 'other'" in refusal.message


def test_an_unsupervised_running_attempt_is_followed_and_stopped_not_resumed():
    run = state.find([_sup(F, COMMAND_META), _attempt(R, COMMAND_META)], "r")
    assert run is not None
    steps = state.next_steps(run, None, "")
    assert steps[0] == "r-a1 runs on unsupervised: it is not restarted if it fails"
    assert any("logs r-a1 --follow" in s for s in steps) and any("stop r" in s for s in steps)
    assert not any("--resume" in s for s in steps)
