"""Starting an attempt: sent to Ray as is, or handed to the run's supervisor when it may restart.

With restarts the run goes to a supervisor on the Ray head (jobs/runs/handoff.py), which outlives
the caller; without, the attempt is submitted once. Either way Ray's unique submission ids make a
second command starting the same attempt collide instead of running it twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from jobs.client.dashboard import AlreadySubmitted, Dashboard
from jobs.client.types import Submission
from jobs.common import commands
from jobs.common.errors import UsageError
from jobs.runs import handoff, state


@dataclass(frozen=True)
class Started:
    """What now drives the run: its supervisor, or the one attempt submitted."""

    run: str
    submission_id: str
    supervisor: str | None = None
    # False: the supervisor was submitted and not waited for; it may yet refuse.
    armed: bool = True
    # Why it was not waited for: an earlier supervisor of the same code that took its run
    # under the same runs root here (handoff.vouching_supervisor); None: --no-wait asked.
    vouched_by: str | None = None


def start(
    dashboard: Dashboard,
    sub: Submission,
    *,
    max_restarts: int,
    gpus: int,
    checkpoint_dir: str,
    where: str,
    options: handoff.Options = handoff.Options(),
    stall_default_s: float = 0.0,
    check_name_free: bool = True,
) -> Started:
    """Send `sub` (attempt N of its run), or hand the run over when it may restart (restarts,
    preemptions, a stall watchdog or a runs root asked for). With `check_name_free` (a new
    run named by the user) the name must be free: any job of a run, its supervisor alone
    included, takes it: a second run of that name would be read as the first's."""
    cluster_jobs = None
    if check_name_free:
        cluster_jobs = dashboard.jobs()
        state.refuse_taken(cluster_jobs, sub.run)
    if options.supervised(max_restarts):
        handed = handoff.hand_off(
            dashboard,
            sub,
            max_restarts=max_restarts,
            gpus=gpus,
            checkpoint_dir=checkpoint_dir,
            hint_where=where,
            options=options,
            stall_default_s=stall_default_s,
            cluster_jobs=cluster_jobs,
        )
        return Started(
            sub.run,
            sub.submission_id,
            supervisor=handed.supervisor,
            armed=handed.armed,
            vouched_by=handed.vouched_by,
        )
    try:
        return Started(sub.run, dashboard.submit(sub))
    except AlreadySubmitted:
        if sub.attempt == 1:
            raise UsageError(
                f"run {sub.run!r} already exists on this cluster (its attempt 1 is there)",
                "pick another --name; a run's name is its checkpoint directory",
            ) from None
        raise UsageError(
            f"{sub.submission_id} already exists on this cluster",
            f"another command resumed run {sub.run} first; follow it with "
            f"{commands.command('logs', sub.submission_id, '--follow', where=where)}",
        ) from None
