"""Talking to Ray's Jobs API, with its errors turned into the CLI's one-line errors."""

from __future__ import annotations

import asyncio
import copy
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import aiohttp
import requests
from ray.job_submission import JobDetails, JobStatus, JobSubmissionClient

from jobs.errors import JobsError, Unreachable, UsageError
from jobs.redact import redact
from jobs.submission import Submission


class AlreadySubmitted(UsageError):
    """The submission id exists on the cluster (HTTP 500 "already exists", reference §4.4)."""


# Ray's client reports HTTP errors as RuntimeError("Request failed with status code N: body.")
# (ray/dashboard/modules/dashboard_sdk.py `_raise_error`, Ray 2.60).
_STATUS = re.compile(r"Request failed with status code (?P<code>[0-9]{3})\b")
# Gateway errors mean a proxy (kubectl port-forward, a load balancer) lost the dashboard.
_GATEWAY = {"502", "503", "504"}
# RuntimeErrors Ray raises when the connection, not the request, failed: the log websocket
# closing with 1006 or erroring (sdk.py `tail_job_logs`), or the version probe failing.
_CONNECTION_WORDS = ("websocket connection closed unexpectedly", "websocket error",
                     "failed to connect", "connection refused", "connection reset",
                     "cannot connect")


def meaningful_line(text: str) -> str:
    """The line of an error body that says what went wrong: a dashboard 500 carries a
    Python traceback whose first line is "Traceback (most recent call last):" and whose last
    line is the exception."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return ""
    status = _STATUS.match(lines[0])
    if status and len(lines) > 1 and "Traceback" in lines[0]:
        return f"status code {status.group('code')}: {lines[-1].rstrip('.')}"
    if any("Traceback (most recent call last)" in ln for ln in lines):
        return lines[-1]
    return lines[0]


def _unreachable(what: str, why: str) -> Unreachable:
    return Unreachable(f"lost the Ray dashboard while trying to {what}: {why}",
                       "check the cluster and the port-forward, then retry")


@contextmanager
def _translated(what: str) -> Iterator[None]:
    try:
        yield
    except JobsError:
        raise
    except aiohttp.ClientResponseError as e:
        # The log websocket's handshake got an HTTP answer (404 for an unknown job).
        if e.status == 404:
            raise UsageError(f"no such job: {what}",
                             "list jobs with `python -m jobs list`") from None
        raise _unreachable(what, f"HTTP {e.status}") from None
    except (requests.exceptions.RequestException, aiohttp.ClientError, ConnectionError,
            TimeoutError, asyncio.TimeoutError) as e:
        raise _unreachable(what, type(e).__name__) from None
    except RuntimeError as e:
        text = redact(str(e))
        status = _STATUS.search(text)
        code = status.group("code") if status else None
        # "already exists" first: a submission id may itself contain "404" (a uuid, a date).
        if "already exists" in text:
            raise AlreadySubmitted(f"{what}: already exists on this cluster",
                                   "pick another --name") from None
        if code == "404" or (code is None and "does not exist" in text):
            raise UsageError(f"no such job: {what}", "list jobs with `python -m jobs list`") from None
        if code in _GATEWAY or (code is None and any(w in text.lower() for w in _CONNECTION_WORDS)):
            raise _unreachable(what, meaningful_line(text)) from None
        raise JobsError(f"Ray refused to {what}: {meaningful_line(text)}") from None


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
                                          metadata=sub.metadata, submission_id=sub.submission_id,
                                          entrypoint_num_cpus=sub.entrypoint_num_cpus)

    def upload_working_dir(self, runtime_env: dict[str, object]) -> dict[str, object]:
        """A copy of `runtime_env` whose local working_dir is uploaded now and replaced by its
        gcs:// package URI, as submit_job would (dashboard_sdk.py, Ray 2.60): for attempts that
        another process (the run's supervisor) submits later."""
        env = copy.deepcopy(runtime_env)
        with _translated("upload the working dir"):
            self.client._upload_working_dir_if_needed(env)
        return env

    def ray_version(self) -> str | None:
        """The cluster's Ray version from `GET /api/version` (`ray_version`), or None."""
        try:
            r = requests.get(f"{self.url}/api/version", timeout=10)
            r.raise_for_status()
            value = r.json().get("ray_version")
        except (requests.RequestException, ValueError, AttributeError):
            return None
        return value if isinstance(value, str) else None

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
