"""One Ray dashboard's Jobs API for callers: uploads, calls, and failures turned into jobs' errors."""

from __future__ import annotations

import copy
import http.client
import logging
import os
import re
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from jobs.client import errors
from jobs.client.api import JobsAPI
from jobs.client.types import JobDetails, JobStatus, Submission
from jobs.common.errors import JobsError, NotFound, Unreachable, UsageError
from jobs.common.redact import redact


class AlreadySubmitted(UsageError):
    """The submission id exists on the cluster (jobs.client.errors.is_duplicate)."""


class LogUnreadable(JobsError):
    """Ray could not read a job's log from its driver's node. Ray keeps a job's log on the node
    its driver ran on and the dashboard asks that node's agent for it, answering HTTP 500 with
    the traceback when it cannot (job_head.py `get_job_logs`, Ray 2.46/2.48/2.60)."""

    def __init__(self, job_id: str, message: str) -> None:
        super().__init__(message)
        self.job_id = job_id


class LogLost(LogUnreadable):
    """The job's log went with its driver's node (a reclaimed spot VM): Ray's node table holds
    that node DEAD, and nothing on the cluster has the log any more."""


def meaningful_line(text: str) -> str:
    """The line of an error body that says what went wrong: a dashboard 500 carries a
    Python traceback whose first line is "Traceback (most recent call last):" and whose last
    line is the exception."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return ""
    status = _RAY_PREFIX.match(lines[0])
    if status and len(lines) > 1 and "Traceback" in lines[0]:
        return f"status code {status.group('code')}: {lines[-1].rstrip('.')}"
    if any("Traceback (most recent call last)" in ln for ln in lines):
        return lines[-1]
    return lines[0]


# RuntimeErrors with no HTTP status that Ray raises when the connection, not the request,
# failed: the log websocket closing with 1006 or erroring (sdk.py `tail_job_logs`).
_CONNECTION_WORDS = (
    "websocket connection closed unexpectedly",
    "websocket error",
    "failed to connect",
    "connection refused",
    "connection reset",
    "cannot connect",
)
_RAY_PREFIX = re.compile(r"Request failed with status code (?P<code>[0-9]{3})\b")


def _unreachable(what: str, why: str) -> Unreachable:
    return Unreachable(
        f"lost the Ray dashboard while trying to {what}: {why}",
        "check the cluster and the port-forward, then retry",
    )


def _loaded(module: str, *names: str) -> tuple[type[BaseException], ...]:
    """Exception classes of `module` if something imported it, else none: aiohttp (the log
    tail) and requests (Ray's upload client) are imported only by the commands that use them,
    and an error of a module never imported cannot be raised."""
    mod = sys.modules.get(module)
    return tuple(getattr(mod, n) for n in names) if mod is not None else ()


@contextmanager
def _translated(what: str) -> Iterator[None]:
    try:
        yield
    except JobsError:
        raise
    except Exception as e:
        _translate(what, e)
        raise


def _translate(what: str, e: Exception) -> None:
    """Raise the caller's error for `e`, or return to let `e` propagate unchanged."""
    ws_answer = _loaded("aiohttp", "ClientResponseError")
    if ws_answer and isinstance(e, ws_answer):
        # The log websocket's handshake got an HTTP answer (404 for an unknown job).
        status = getattr(e, "status", None)
        if status == 404:
            raise NotFound(f"no such job: {what}") from None
        raise _unreachable(what, f"HTTP {status}") from None
    # No answer: refused, reset, timed out, name not resolved, a broken HTTP answer, and the
    # same from requests (Ray's upload client) or aiohttp (the log tail).
    lost: tuple[type[BaseException], ...] = (
        ConnectionError,
        TimeoutError,
        socket.gaierror,
        http.client.HTTPException,
        *_loaded("aiohttp", "ClientError"),
        *_loaded("asyncio", "TimeoutError"),
        *_loaded("requests", "RequestException"),
    )
    if isinstance(e, lost):
        raise _unreachable(what, type(e).__name__) from None
    if isinstance(e, RuntimeError):
        _translate_answer(what, e)


def _translate_answer(what: str, e: RuntimeError) -> None:
    """An HTTP answer other than 200, sorted by its status (jobs/client/errors.py)."""
    status = errors.http_status(e)
    text = redact(errors.body(e) if status is not None else str(e))
    if errors.is_duplicate(e):
        raise AlreadySubmitted(f"{what}: already exists on this cluster") from None
    if errors.is_not_found(e):
        raise NotFound(f"no such job: {what}") from None
    if status in errors.GATEWAY or (
        status is None and any(w in text.lower() for w in _CONNECTION_WORDS)
    ):
        raise _unreachable(what, meaningful_line(redact(str(e)))) from None
    raise JobsError(f"Ray refused to {what}: {meaningful_line(redact(str(e)))}") from None


@contextmanager
def _quiet_ray_logs() -> Iterator[None]:
    """Ray's client logs every package it zips and uploads at INFO on stderr ("Uploading
    package gcs://...", dashboard_sdk.py L371 and packaging.py L785, Ray 2.60), in its own
    format between our lines; its warnings and errors still show. (dashboard_sdk.py sets its
    logger to INFO itself, so the level is cut for the upload's duration, process-wide.)"""
    before = logging.root.manager.disable
    logging.disable(max(before, logging.INFO))
    try:
        yield
    finally:
        logging.disable(before)


@contextmanager
def _without_address_env() -> Iterator[None]:
    # JobSubmissionClient lets RAY_API_SERVER_ADDRESS / RAY_ADDRESS override the address it is
    # given (ray/dashboard/utils.py get_address_for_submission_client, Ray 2.60): with a stale
    # variable, --address or a port-forward URL would be silently ignored. We have already
    # chosen the URL, so hide both while the client resolves it.
    saved = {
        k: os.environ.pop(k) for k in ("RAY_API_SERVER_ADDRESS", "RAY_ADDRESS") if k in os.environ
    }
    try:
        yield
    finally:
        os.environ.update(saved)


def _is_local(value: object) -> bool:
    # Ray treats a value with a scheme (gcs://, s3://, https://) as a URI, anything else as a
    # local path to package (ray/_private/runtime_env/packaging.py `is_uri`, Ray 2.60).
    return isinstance(value, str) and "://" not in value


def has_local_packages(runtime_env: dict[str, Any]) -> bool:
    """True when the env names a local working_dir or py_modules path, which must be zipped
    and uploaded before the job is submitted."""
    modules = runtime_env.get("py_modules") or []
    return _is_local(runtime_env.get("working_dir")) or any(
        _is_local(m) for m in (modules if isinstance(modules, list) else [modules])
    )


class Dashboard:
    """One Ray dashboard, through its Jobs REST API (jobs/client/api.py)."""

    def __init__(self, url: str) -> None:
        self.url = url
        try:
            self.api = JobsAPI(url)
        except ValueError:
            raise UsageError(
                f"address {url!r} is not a dashboard URL",
                "use the dashboard address, e.g. http://HOST:8265",
            ) from None

    def _upload(self, runtime_env: dict[str, Any]) -> dict[str, Any]:
        """A copy of `runtime_env` whose local working_dir and py_modules are zipped and
        uploaded (`PUT /api/packages/...`) by Ray's own client and replaced by their gcs://
        URIs, as its submit_job does (ray/dashboard/modules/dashboard_sdk.py
        `_upload_working_dir_if_needed` / `_upload_py_modules_if_needed`, Ray 2.60): its
        packaging (excludes, .gitignore, hashing) is what the cluster unpacks. Ray is imported
        here only, by the commands that upload."""
        env = copy.deepcopy(runtime_env)
        if not has_local_packages(env):
            return env
        from ray.job_submission import JobSubmissionClient

        with _without_address_env():
            client = JobSubmissionClient(self.url)
        with _quiet_ray_logs():
            client._upload_working_dir_if_needed(env)
            client._upload_py_modules_if_needed(env)
        return env

    def submit(self, sub: Submission) -> str:
        with _translated(f"submit {sub.submission_id}"):
            env = self._upload(sub.runtime_env)
            return self.api.submit_job(
                entrypoint=sub.entrypoint,
                runtime_env=env,
                metadata=sub.metadata,
                submission_id=sub.submission_id,
                entrypoint_num_cpus=sub.entrypoint_num_cpus,
                entrypoint_num_gpus=sub.entrypoint_num_gpus,
                entrypoint_resources=sub.entrypoint_resources,
            )

    def upload_working_dir(self, runtime_env: dict[str, object]) -> dict[str, object]:
        """A copy of `runtime_env` whose local working_dir and py_modules are uploaded now and
        replaced by their gcs:// package URIs: for attempts that another process (the run's
        supervisor, on the head, where the caller's files are not) submits later."""
        with _translated("upload the working dir"):
            return self._upload(runtime_env)

    def ray_version(self) -> str | None:
        """The cluster's Ray version from `GET /api/version` (`ray_version`), or None."""
        try:
            value = self.api.get_version().get("ray_version")
        except (RuntimeError, OSError, ValueError, http.client.HTTPException):
            return None
        return value if isinstance(value, str) else None

    def nodes(self) -> list[dict[str, Any]]:
        """Every node in Ray's node table, alive and dead (JobsAPI.list_nodes)."""
        with _translated("list the cluster's nodes"):
            return self.api.list_nodes()

    def status(self, job_id: str) -> JobStatus:
        with _translated(f"get the status of {job_id}"):
            return self.api.get_job_status(job_id)

    def info(self, job_id: str) -> JobDetails:
        with _translated(f"describe {job_id}"):
            return self.api.get_job_info(job_id)

    def jobs(self) -> list[JobDetails]:
        with _translated("list jobs"):
            return self.api.list_jobs()

    def logs(self, job_id: str) -> str:
        """The job's whole log; LogUnreadable (LogLost when its node is dead) where Ray answers
        500 because the driver's node cannot serve it."""
        what = f"read the logs of {job_id}"
        try:
            return self.api.get_job_logs(job_id)
        except Exception as e:  # sorted below, as _translated does
            if errors.http_status(e) == 500 and not errors.is_duplicate(e):
                raise self._unreadable(job_id, e) from None
            _translate(what, e)
            raise

    def _unreadable(self, job_id: str, e: Exception) -> JobsError:
        """Why the driver's node could not give the log: gone with its node, or not answering
        (Ray holds a hard-lost node ALIVE for up to ~50 s before it marks it DEAD)."""
        reason = meaningful_line(redact(errors.body(e))) or "HTTP 500 with no reason given"
        try:
            node_id = self.api.get_job_info(job_id).driver_node_id
            nodes = self.api.list_nodes() if node_id else []
        except (RuntimeError, OSError, ValueError, http.client.HTTPException):
            return LogUnreadable(job_id, f"Ray could not read the log of {job_id}: {reason}")
        node = next((n for n in nodes if n.get("node_id") == node_id), None)
        if node_id and (node is None or node.get("state") == "DEAD"):
            return LogLost(
                job_id,
                f"the log of {job_id} was lost with its node {node_id[:12]} (Ray keeps a "
                "job's log on its driver's node)",
            )
        return LogUnreadable(
            job_id, f"Ray could not read the log of {job_id} from its driver's node: {reason}"
        )

    def stop(self, job_id: str) -> bool:
        with _translated(f"stop {job_id}"):
            return self.api.stop_job(job_id)

    def tail(self, job_id: str, write: Callable[[str], object]) -> None:
        """Stream logs to `write` until the job ends (the tail is an async generator)."""
        import asyncio

        async def pump() -> None:
            async for chunk in self.api.tail_job_logs(job_id):
                write(redact(chunk))

        with _translated(f"follow the logs of {job_id}"):
            asyncio.run(pump())
