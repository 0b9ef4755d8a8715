"""Grouping Ray jobs into runs and attempts, and finding a job by submission id or run name."""

from __future__ import annotations

import re
from typing import Any

from jobs.client.dashboard import Dashboard

# re-exported (`as`): the CLI reaches the client only through the runs library
from jobs.client.types import JobDetails as JobDetails
from jobs.common import commands
from jobs.common.errors import UsageError
from jobs.common.redact import redact
from jobs.head import protocol
from jobs.runs.metadata import RunMetadata


def metadata_of(job: JobDetails) -> RunMetadata:
    return RunMetadata.of(job.metadata, job.submission_id or job.job_id or "?")


def run_of(job: JobDetails) -> str:
    return metadata_of(job).run


def is_supervisor(job: JobDetails) -> bool:
    """A run's supervisor job (jobs/runs/handoff.py), not one of its attempts."""
    return metadata_of(job).kind == protocol.SUPERVISOR


def attempt_of(job: JobDetails) -> int | None:
    """The run's attempt number of `job`; None for a supervisor, and for an eval job, whose
    supervisor numbers its tries (`attempt`) but which is never an attempt of the run."""
    meta = metadata_of(job)
    if meta.kind in (protocol.SUPERVISOR, protocol.EVAL):
        return None
    return meta.attempt


def describe(job: JobDetails) -> dict[str, Any]:
    """A JSON-ready view of one job; the message is redacted (Ray may copy env vars into it)."""
    meta = metadata_of(job)
    return {
        "submission_id": job.submission_id,
        "run": meta.run,
        "attempt": meta.attempt,
        "status": job.status.value,
        "recipe": meta.recipe,
        "stack": meta.stack,
        "git_commit": meta.git_commit,
        "entrypoint": redact(job.entrypoint or ""),
        "message": redact(job.message or ""),
        "start_time": job.start_time,
        "end_time": job.end_time,
        "driver_exit_code": job.driver_exit_code,
    }


# An exception's last line in a Python traceback: `ValueError: ...`, `torch.OutOfMemoryError: ...`.
_ERROR_LINE = re.compile(
    r"^\s*(?:[\w.]+(?:Error|Exception|Exit|Interrupt)|Error|error|FATAL|Fatal)\b"
)


def why_it_ended(message: str) -> tuple[str, str | None]:
    """Ray's message split for a person: its first line, and the log tail's last error line.

    A failed job's message is "Job entrypoint command failed with exit code N, last available
    logs (truncated to 20,000 chars):" and then the log's tail (ray/dashboard/modules/job/
    job_supervisor.py L448-455, Ray 2.60): the line a user needs is the exception at its end
    (else the tail's last line), not twenty thousand characters."""
    first, _, tail = message.partition("\n")
    lines = [line.rstrip() for line in tail.splitlines() if line.strip()]
    if not lines:
        return first, None
    errors = [line for line in lines if _ERROR_LINE.match(line)]
    return first, (errors[-1] if errors else lines[-1]).strip()[:300]


_SAYS_ERROR = re.compile(r"^error:\s*", re.IGNORECASE)


def labelled(line: str) -> tuple[str, str]:
    """The line `why_it_ended` found, as `status` shows it: under `error` an error line (one
    that says "error: ..." itself without its own prefix, so it never reads `error: error:`),
    under `log's end` a plain last line, which is no error."""
    if said := _SAYS_ERROR.match(line):
        return "error", line[said.end() :] or line
    return ("error" if _ERROR_LINE.match(line) else "log's end"), line


def find(
    cluster: Dashboard, ident: str, where: str = "", jobs: list[JobDetails] | None = None
) -> JobDetails:
    """The job with submission id `ident`, else the latest attempt of the run named `ident`
    (`jobs`: the cluster's jobs when the caller has listed them already)."""
    jobs = cluster.jobs() if jobs is None else jobs
    for job in jobs:
        if job.submission_id == ident:
            return job
    attempts = [j for j in jobs if run_of(j) == ident and attempt_of(j) is not None]
    if attempts:
        return max(attempts, key=lambda j: attempt_of(j) or 0)
    raise UsageError(
        f"no job or run named {ident!r} on this cluster",
        f"list them with `{commands.command('list', where=where)}`",
    )


def attempts(jobs: list[JobDetails], run: str) -> list[JobDetails]:
    """The attempts of the run named `run`, first to last."""
    found = [j for j in jobs if run_of(j) == run and attempt_of(j) is not None]
    return sorted(found, key=lambda j: attempt_of(j) or 0)
