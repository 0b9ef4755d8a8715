"""A run's GPU count is one number in every view: the cluster's (its jobs and its supervisor's
records) and the runs root's (its record alone), for a `run` that declares no GPU too."""

from __future__ import annotations

from jobs.client.types import JobDetails, JobStatus
from jobs.head import events as ev
from jobs.head.run_store import RunStore
from jobs.runs import run_goodput, run_life


def _attempt() -> JobDetails:
    # `run` without --gpus: no reservation in its metadata.
    return JobDetails(
        status=JobStatus.RUNNING,
        entrypoint="python train.py",
        submission_id="r-a1",
        start_time=1_800_000_000_000,
        metadata={"run": "r", "attempt": "1"},
    )


def _both_views(tmp_path, records) -> tuple[int | None, int | None]:
    store = RunStore(tmp_path, "r")
    store.write_spec({"run": "r", "gpus_needed": 0})
    for r in records:
        store.append(r)
    cluster = run_life.life([_attempt()], records).gpus
    runs_root = run_goodput.of_record(store, store.events())[0].gpus
    return cluster, runs_root


def test_a_run_that_declares_no_gpu_counts_zero_gpus_in_every_view(tmp_path):
    """It read `null` GPU-hours from the cluster and 0.00 GPU-h from the runs root."""
    records = [
        ev.record(ev.ARMED, "r", "armed", gpus_needed=0, fresh=True, attempt=1),
        ev.record(ev.SUBMITTED, "r", "a1", attempt=1, submission_id="r-a1"),
    ]
    assert _both_views(tmp_path, records) == (0, 0)


def test_the_gpus_its_workers_used_count_in_every_view(tmp_path):
    """Its supervisor learnt the nodes its tasks ran on had 8 GPUs: those are what it used."""
    records = [
        ev.record(ev.ARMED, "r", "armed", gpus_needed=0, fresh=True, attempt=1),
        ev.record(ev.SUBMITTED, "r", "a1", attempt=1, submission_id="r-a1"),
        ev.record(ev.GPUS_USED, "r", "used", submission_id="r-a1", gpus_used=8),
    ]
    assert _both_views(tmp_path, records) == (8, 8)


def test_a_plain_unsupervised_job_has_no_gpu_count():
    assert run_life.gpus_of([_attempt()], []) is None
