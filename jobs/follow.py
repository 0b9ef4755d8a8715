"""Watching one job: waiting (with a spinner on stderr), streaming its logs, its final status."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from ray.job_submission import JobStatus
from rich.console import Console

from jobs.cluster import Cluster

POLL_S = 0.5


def wait_for(cluster: Cluster, job_id: str, done: Callable[[JobStatus], bool], err: Console,
             what: str) -> JobStatus:
    """Poll until `done(status)`; the spinner shows on stderr only, never in --json output."""
    status = cluster.status(job_id)
    if done(status):
        return status
    with err.status(f"{job_id}: {what} ({status.value})") as spinner:
        while not done(status):
            time.sleep(POLL_S)
            status = cluster.status(job_id)
            spinner.update(f"{job_id}: {what} ({status.value})")
    return status


def started(status: JobStatus) -> bool:
    return status != JobStatus.PENDING


def terminal(status: JobStatus) -> bool:
    return status.is_terminal()


def follow(cluster: Cluster, job_id: str, err: Console, to_stderr: bool = False) -> JobStatus:
    """Stream the job's logs until it ends and return its final status."""
    wait_for(cluster, job_id, started, err, "waiting to start")
    stream = sys.stderr if to_stderr else sys.stdout

    def write(chunk: str) -> None:
        stream.write(chunk)
        stream.flush()

    cluster.tail(job_id, write)
    # The log stream closes as the job ends; the status can trail it by a moment.
    return wait_for(cluster, job_id, terminal, err, "finishing")
