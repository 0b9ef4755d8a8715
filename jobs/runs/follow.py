"""Watching one job: waiting for it, streaming its logs, riding out a lost dashboard.

A port-forward drops, a dashboard restarts, a laptop changes network: none of that ends the
job, so the watcher retries status and log calls for a bounded time before it gives up with
exit 3 and the command that checks the job later.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

from jobs.client.dashboard import Dashboard
from jobs.client.types import JobStatus as JobStatus  # the CLI reaches the client only here
from jobs.common.errors import Unreachable
from jobs.common.redact import redact
from jobs.runs.report import Reporter

POLL_S = 0.5
RETRY_S = 1.0
# Long enough to ride out a dashboard restart or a brief network drop; short enough that a
# cluster that is really gone is reported within a minute.
DEFAULT_PATIENCE_S = 60.0

T = TypeVar("T")


def patience_from_env() -> float:
    return float(os.environ.get("JOBS_RECONNECT_TIMEOUT", DEFAULT_PATIENCE_S))


def started(status: JobStatus) -> bool:
    return status != JobStatus.PENDING


def terminal(status: JobStatus) -> bool:
    return status.is_terminal()


def succeeded(status: JobStatus) -> bool:
    return status == JobStatus.SUCCEEDED


class Watcher:
    """Status polls and log tails of one cluster's jobs, retried while the dashboard is away.

    `check_command(job_id)` is the command a user runs later to see the job; it goes in the
    one-line error when the dashboard stays away longer than `patience_s`.
    """

    def __init__(
        self,
        cluster: Dashboard,
        reporter: Reporter,
        check_command: Callable[[str], str],
        patience_s: float | None = None,
    ) -> None:
        self.cluster = cluster
        self.reporter = reporter
        self.check_command = check_command
        self.patience_s = patience_from_env() if patience_s is None else patience_s

    def _lost(self, job_id: str, since: float) -> Unreachable:
        return Unreachable(
            f"lost the Ray dashboard for {time.monotonic() - since:.0f} s while watching {job_id}",
            f"the job may still be running; check it with: {self.check_command(job_id)}",
        )

    def retrying(self, job_id: str, call: Callable[[], T]) -> T:
        """`call()`, retried while the dashboard is away, for at most the patience."""
        since: float | None = None
        while True:
            try:
                return call()
            except Unreachable:
                now = time.monotonic()
                since = now if since is None else since
                if now - since >= self.patience_s:
                    raise self._lost(job_id, since) from None
                time.sleep(RETRY_S)

    def status(self, job_id: str) -> JobStatus:
        return self.retrying(job_id, lambda: self.cluster.status(job_id))

    def wait_for(
        self,
        job_id: str,
        done: Callable[[JobStatus], bool],
        what: str,
        limit_s: float | None = None,
    ) -> JobStatus:
        """Poll until `done(status)`, shown as a visible wait; with `limit_s`, for that long at
        most (then the last status is returned, not done)."""
        status = self.status(job_id)
        if done(status):
            return status
        deadline = None if limit_s is None else time.monotonic() + limit_s
        with self.reporter.waiting(f"{job_id}: {what} ({status.value})") as update:
            while not done(status) and (deadline is None or time.monotonic() < deadline):
                time.sleep(POLL_S)
                status = self.status(job_id)
                update(f"{job_id}: {what} ({status.value})")
        return status

    def follow(self, job_id: str, to_stderr: bool = False) -> JobStatus:
        """Stream the job's logs until it ends and return its final status."""
        self.wait_for(job_id, started, "waiting to start")
        # Ray's log tail starts from the beginning of the driver log every time
        # (job_log_storage_client.tail_logs -> file_tail_iterator), so after a reconnect the
        # characters already shown are skipped instead of printed twice.
        shown = 0

        def write(chunk: str) -> None:
            nonlocal shown, seen
            fresh = chunk[max(0, shown - seen) :]
            seen += len(chunk)
            if fresh:
                self.reporter.log(fresh, to_stderr)
                shown += len(fresh)

        seen = 0
        # The outage clock restarts whenever a reconnect brought new output.
        since: float | None = None
        shown_at_failure = -1
        while True:
            seen = 0
            try:
                self.cluster.tail(job_id, write)
                break  # the stream closed normally: the job ended
            except Unreachable:
                now = time.monotonic()
                if since is None or shown != shown_at_failure:
                    since, shown_at_failure = now, shown
                elif now - since >= self.patience_s:
                    raise self._lost(job_id, since) from None
            # Ended while we were away? Then print what it logged meanwhile, and stop.
            if terminal(self.status(job_id)):
                seen = 0
                write(redact(self.retrying(job_id, lambda: self.cluster.logs(job_id))))
                break
            time.sleep(RETRY_S)
        # The log stream closes as the job ends; the status can trail it by a moment.
        return self.wait_for(job_id, terminal, "finishing")
