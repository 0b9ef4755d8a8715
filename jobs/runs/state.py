"""Which runs exist on a cluster and where each stands: the one reading `list`, `status`, `logs`,
`stop` and `submit --resume` share, and what a user can do next.

A run exists as soon as any Ray job carries its name (metadata `run`): an attempt, an export, or
only its supervisor (armed and waiting for GPUs, or killed before it sent attempt 1). So its name
is taken by any of them, and every command reads the run the same way, so no two commands
disagree on whether a run exists or what it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobs.client.types import JobDetails, JobStatus
from jobs.common import commands
from jobs.common.errors import UsageError
from jobs.head import events as run_events
from jobs.head import protocol
from jobs.runs import listing
from jobs.runs.metadata import RecipeRun

# A live supervisor that has not sent the next attempt yet: attempt 1 (waiting for GPUs), or the
# one after an attempt that failed or was stopped (settling, waiting for GPUs after a preemption).
WAITING = "WAITING"
# A supervised run that is not over and whose supervisor is gone (killed, or lost with its head):
# its attempt may still run, nothing restarts it until a re-armer takes the run back.
UNSUPERVISED = "UNSUPERVISED"
# The states a run shows in every view, from the cluster and from the runs root alike (a run
# that gave up is FAILED; its outcome says why). Ray's PENDING shows only on the cluster, for an
# attempt that waits for its resources: the runs root cannot tell it from RUNNING.
RUN_STATES = ("RUNNING", WAITING, "SUCCEEDED", "STOPPED", "FAILED", UNSUPERVISED)
# Every status a run shows in `list` (`list --status` takes these).
STATUSES = (*(s.value for s in JobStatus), WAITING, UNSUPERVISED)


@dataclass(frozen=True)
class Run:
    """One run's Ray jobs: its numbered attempts, its supervisors and the rest (exports)."""

    name: str
    attempts: tuple[JobDetails, ...]  # first to last
    supervisors: tuple[JobDetails, ...]  # oldest first
    others: tuple[JobDetails, ...]  # jobs of the run that are no attempt, by start time

    @property
    def latest(self) -> JobDetails | None:
        return self.attempts[-1] if self.attempts else None

    @property
    def live_supervisor(self) -> JobDetails | None:
        alive = [s for s in self.supervisors if not s.status.is_terminal()]
        return alive[0] if alive else None

    @property
    def status(self) -> str:
        """The latest attempt's status; WAITING while a live supervisor has not sent one or is
        about to send the next (its latest ended without success); else the last supervisor's
        (a supervisor that died before attempt 1: FAILED)."""
        if self.latest is not None:
            ended = self.latest.status.is_terminal()
            if ended and self.latest.status != JobStatus.SUCCEEDED and self._restarting:
                return WAITING
            return self.latest.status.value
        if self.live_supervisor is not None:
            return WAITING
        last = (self.supervisors or self.others)[-1]
        return last.status.value

    @property
    def _restarting(self) -> bool:
        """A live supervisor holds the run and no stop of the user's was recorded."""
        return self.live_supervisor is not None and not self.stop_recorded

    def attempt_metadata(self) -> Mapping[str, str]:
        """What the run's latest attempt records, or what its supervisor would have sent as
        attempt 1 (the hand-off spec's metadata) when it sent none."""
        if self.latest is not None:
            return self.latest.metadata or {}
        for sup in reversed(self.supervisors):
            spec = spec_of(sup)
            if spec is not None:
                return spec.metadata
        return {}

    @property
    def stop_recorded(self) -> bool:
        """A user's stop was recorded on the run's runs root (a `stop` job, jobs/head/stop.py)
        after its last supervisor started: the run is over there, whatever that one logged."""
        since = (self.supervisors[-1].start_time or 0) if self.supervisors else 0
        return any(
            listing.metadata_of(j).kind == protocol.STOP
            and j.status == JobStatus.SUCCEEDED
            and (j.start_time or 0) >= since
            for j in self.others
        )

    @property
    def kind(self) -> str:
        return str(self.attempt_metadata().get("kind", ""))

    @property
    def started(self) -> float:
        return min((j.start_time or 0) for j in (*self.attempts, *self.supervisors, *self.others))

    @property
    def ended(self) -> int | None:
        """When its last job ended (ms); None while any of them (a supervisor too) is live."""
        jobs_ = (*self.attempts, *self.supervisors)
        if not jobs_ or any(not j.status.is_terminal() for j in jobs_):
            return None
        return max((j.end_time or 0) for j in jobs_) or None


# The run's state once its current life has a final record, whatever Ray's jobs say meanwhile (a
# supervisor that gave up is still RUNNING for a moment after its record, then SUCCEEDED).
_BY_OUTCOME = {
    run_events.FINISHED: "SUCCEEDED",
    run_events.GAVE_UP: "FAILED",
    run_events.STOPPED: "STOPPED",
}


def shown_status(r: Run, outcome: str | None) -> str:
    """The run's state as every view shows it, the runs root's included (jobs/runs/record_view.py):
    by its current life's final record (`outcome`, its event) when it has one; UNSUPERVISED
    when it was handed to a supervisor, is not over and none is alive (the re-armer takes it
    back); else as `Run.status` reads Ray's jobs."""
    if outcome in _BY_OUTCOME:
        return _BY_OUTCOME[outcome]
    if r.supervisors and r.live_supervisor is None and not r.stop_recorded:
        return UNSUPERVISED
    return r.status


def spec_of(sup: JobDetails) -> protocol.Spec | None:
    try:
        return protocol.Spec.from_json((sup.metadata or {})[protocol.Spec.METADATA_KEY])
    except (KeyError, ValueError, TypeError):
        return None


def runs(jobs: list[JobDetails]) -> list[Run]:
    """Every run on the cluster, newest first."""
    by_name: dict[str, list[JobDetails]] = {}
    for job in jobs:
        by_name.setdefault(listing.run_of(job), []).append(job)
    found = [_run(name, everyone) for name, everyone in by_name.items()]
    return sorted(found, key=lambda r: r.started, reverse=True)


def group(jobs: list[JobDetails]) -> list[dict[str, Any]]:
    """`list`'s rows: runs newest first, each with its attempts in order, then the jobs of it
    that are no attempt (an export); its status as `status` says it; its supervisor apart."""
    rows = []
    for r in runs(jobs):
        row: dict[str, Any] = {
            "run": r.name,
            "recipe": str(r.attempt_metadata().get("recipe", "")),
            "status": r.status,
            "attempts": [listing.describe(j) for j in (*r.attempts, *r.others)],
            "started": r.started,
            "ended": r.ended,
        }
        if r.supervisors:
            last = r.supervisors[-1]
            row["supervisor"] = {"submission_id": last.submission_id, "status": last.status.value}
        rows.append(row)
    return rows


def find(jobs: list[JobDetails], name: str) -> Run | None:
    """The run named `name`, whatever jobs of it exist; None when there is none."""
    everyone = [j for j in jobs if listing.run_of(j) == name]
    return _run(name, everyone) if everyone else None


def _run(name: str, everyone: list[JobDetails]) -> Run:
    sups = sorted(
        (j for j in everyone if listing.is_supervisor(j)),
        key=lambda j: protocol.supervisor_number(j.submission_id or ""),
    )
    numbered = sorted(
        (j for j in everyone if listing.attempt_of(j) is not None and not listing.is_supervisor(j)),
        key=lambda j: listing.attempt_of(j) or 0,
    )
    others = sorted(
        (j for j in everyone if j not in sups and j not in numbered),
        key=lambda j: j.start_time or 0,
    )
    return Run(name, tuple(numbered), tuple(sups), tuple(others))


def refuse_taken(jobs: list[JobDetails], name: str) -> None:
    """A new run's name must be free: any job of a run (its supervisor included) takes it."""
    found = find(jobs, name)
    if found is None:
        return
    held = (found.attempts or found.supervisors or found.others)[-1]
    raise UsageError(
        f"run {name!r} already exists on this cluster ({held.submission_id} {held.status.value})",
        "pick another --name; a run's name is its checkpoint directory",
    )


def not_resumable(r: Run | None, name: str, where: str) -> UsageError | None:
    """Why `submit --resume` cannot continue the run, or None when it can: the one rule the
    resume itself and `status`'s suggestions follow."""
    if r is None:
        return UsageError(
            f"no run named {name!r} on this cluster",
            f"list runs with `{commands.command('list', where=where)}` (a run name has no "
            "-aN suffix)",
        )
    driving = r.live_supervisor
    if driving is not None:
        return UsageError(
            f"run {name} is already driven by its supervisor "
            f"{driving.submission_id} ({driving.status.value})",
            f"follow it with {commands.command('logs', name, '--follow', where=where)}"
            f", or stop it with {commands.command('stop', name, where=where)}",
        )
    after = r.latest if r.latest is not None else (r.supervisors or (None,))[-1]
    if after is None:
        return UsageError(
            f"run {name} has no attempt to continue", "start a new run with another --name"
        )
    job_id = after.submission_id or name
    if not after.status.is_terminal():
        return UsageError(
            f"run {name} is still {after.status.value} ({job_id})",
            f"follow it with {commands.command('logs', job_id, '--follow', where=where)}"
            ", or stop it first",
        )
    if r.latest is not None and after.status == JobStatus.SUCCEEDED:
        return UsageError(
            f"run {name} already SUCCEEDED ({job_id}); nothing to resume",
            "start a new run with another --name",
        )
    if r.kind not in (protocol.RECIPE, protocol.COMMAND):
        return UsageError(
            f"run {name} was started with {commands.started_with(r.kind)}"
            "; --resume continues recipe and command runs",
            f"start it again with {commands.command('run', where=where)} -- COMMAND ...",
        )
    if r.kind == protocol.RECIPE and RecipeRun.of_job(r.attempt_metadata()) is None:
        return UsageError(
            f"{job_id} has unreadable or incomplete metadata, so it cannot be resumed",
            f"start a new run with {commands.command('submit', 'RECIPE', where=where)}",
        )
    return None


def next_steps(r: Run, outcome: dict[str, Any] | None, where: str) -> list[str]:
    """What will work next for this run, each a command line with what it does."""
    name = r.name
    stop = f"stop it: {commands.command('stop', name, where=where)}"
    if r.live_supervisor is not None:
        return [f"follow it: {commands.command('logs', name, '--follow', where=where)}", stop]
    latest = r.latest
    if (outcome or {}).get("event") == run_events.REFUSED:
        return [
            "nothing ran: fix what the supervisor refused (above), then send the run again "
            f"(its settings and runs root kept): {commands.command('submit', '--resume', name, where=where)}"
        ]
    if latest is not None and not latest.status.is_terminal():
        job_id = latest.submission_id or name
        steps = [f"follow it: {commands.command('logs', job_id, '--follow', where=where)}", stop]
        if r.supervisors and outcome is None and not r.stop_recorded:
            steps.insert(0, f"{job_id} runs on unsupervised: it is not restarted if it fails")
            steps += _rearmer_note(r)
        if r.kind == protocol.RECIPE:
            steps.append(
                "once it has ended, continue the run from its last checkpoint: "
                f"{commands.command('submit', '--resume', name, where=where)}"
            )
        return steps
    rearm = _rearmer_note(r) if r.supervisors and outcome is None and not r.stop_recorded else []
    if not_resumable(r, name, where) is None:
        return rearm + [
            "continue it from its last checkpoint: "
            f"{commands.command('submit', '--resume', name, where=where)}"
        ]
    if latest is not None and latest.status == JobStatus.SUCCEEDED:
        return []
    if r.kind == protocol.COMMAND:
        return [
            "a `run` run is not resumed: start the command again as a new run: "
            f"{commands.command('run', where=where)} -- COMMAND ..."
        ]
    return []


def _rearmer_note(r: Run) -> list[str]:
    """A run kept on a runs root is re-armed by a re-armer watching that root (jobs/head/rearm.py)."""
    roots = sorted(
        {spec.runs_root for s in r.supervisors if (spec := spec_of(s)) and spec.runs_root}
    )
    return [f"a re-armer watching {root} gives it a new supervisor" for root in roots]
