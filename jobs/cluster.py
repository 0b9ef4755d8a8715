"""Talking to Ray's Jobs API, with its errors turned into the CLI's one-line errors."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import requests
from ray.job_submission import JobDetails, JobStatus, JobSubmissionClient

from jobs.errors import JobsError, Unreachable, UsageError
from jobs.redact import redact
from jobs.submission import Submission


class AlreadySubmitted(UsageError):
    """The submission id exists on the cluster (HTTP 500 "already exists", reference §4.4)."""


@contextmanager
def _translated(what: str) -> Iterator[None]:
    try:
        yield
    except JobsError:
        raise
    except (requests.exceptions.ConnectionError, ConnectionError) as e:
        raise Unreachable(f"lost the Ray dashboard while trying to {what}: {type(e).__name__}",
                          "check the cluster and the port-forward, then retry") from None
    except RuntimeError as e:
        text = redact(str(e))
        if "404" in text or "does not exist" in text:
            raise UsageError(f"no such job: {what}", "list jobs with `python -m jobs list`") from None
        if "already exists" in text:
            raise AlreadySubmitted(f"{what}: already exists on this cluster",
                                   "pick another --name") from None
        raise JobsError(f"Ray refused to {what}: {text.splitlines()[0] if text else ''}") from None


@contextmanager
def _without_address_env() -> Iterator[None]:
    # JobSubmissionClient lets RAY_API_SERVER_ADDRESS / RAY_ADDRESS override the address it is
    # given (ray/dashboard/utils.py get_address_for_submission_client, Ray 2.60): with a stale
    # variable, --address or a port-forward URL would be silently ignored. We have already
    # chosen the URL, so hide both while the client resolves it.
    saved = {k: os.environ.pop(k) for k in ("RAY_API_SERVER_ADDRESS", "RAY_ADDRESS")
             if k in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


class Cluster:
    """One Ray dashboard."""

    def __init__(self, url: str) -> None:
        self.url = url
        with _translated("connect"), _without_address_env():
            self.client = JobSubmissionClient(url)

    def submit(self, sub: Submission) -> str:
        with _translated(f"submit {sub.submission_id}"):
            return self.client.submit_job(entrypoint=sub.entrypoint, runtime_env=sub.runtime_env,
                                          metadata=sub.metadata, submission_id=sub.submission_id)

    def status(self, job_id: str) -> JobStatus:
        with _translated(f"get the status of {job_id}"):
            return self.client.get_job_status(job_id)

    def info(self, job_id: str) -> JobDetails:
        with _translated(f"describe {job_id}"):
            return self.client.get_job_info(job_id)

    def jobs(self) -> list[JobDetails]:
        with _translated("list jobs"):
            return list(self.client.list_jobs())

    def logs(self, job_id: str) -> str:
        with _translated(f"read the logs of {job_id}"):
            return self.client.get_job_logs(job_id)

    def stop(self, job_id: str) -> bool:
        with _translated(f"stop {job_id}"):
            return bool(self.client.stop_job(job_id))

    def tail(self, job_id: str, write: Callable[[str], object]) -> None:
        """Stream logs to `write` until the job ends (Ray's tail is an async generator)."""

        async def pump() -> None:
            async for chunk in self.client.tail_job_logs(job_id):
                write(redact(chunk))

        with _translated(f"follow the logs of {job_id}"):
            asyncio.run(pump())
