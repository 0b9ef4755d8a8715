"""Starting a run's supervisor job: a start that Ray failed before our code ran told apart from
one our code refused or failed, and sent once more.

A supervisor that never ran took no lease and wrote no record, so sending the next one is safe;
anything else (a refusal, a crash of ours, a timeout) goes to the user as it is.
"""

from __future__ import annotations

from collections.abc import Callable

from jobs.client.types import JobDetails
from jobs.common.errors import UsageError

# Ray 2.60 tags a job whose JobSupervisor actor died with these (ray/dashboard/modules/job/
# common.py L77-85, job_manager.py L305); an actor that could not be scheduled is not among them:
# sending it again would meet the same full head.
RAY_SUPERVISOR_ACTOR_LOST = ("JOB_SUPERVISOR_ACTOR_DIED", "JOB_SUPERVISOR_ACTOR_UNKNOWN_FAILURE")


class SupervisorNeverRan(UsageError):
    """Ray failed the supervisor's job before its driver started, for a fault of Ray's own."""


def submit_until_armed(
    first: int, submit: Callable[[int], str], wait_armed: Callable[[str], None]
) -> str:
    """Submit supervisor number `first` and wait until it holds the run; one that Ray failed
    before our code ran (`SupervisorNeverRan`) is sent once more as the next number. It never
    took the run's lease, so the next one cannot meet it; a second such failure is the user's
    to see."""
    sid = submit(first)
    try:
        wait_armed(sid)
    except SupervisorNeverRan:
        sid = submit(first + 1)
        wait_armed(sid)
    return sid


def ray_lost_the_job_supervisor(info: JobDetails, log: str) -> bool:
    """Ray ended the job because its own JobSupervisor actor died before the entrypoint started
    (nothing logged, no driver node). Ray 2.46.0 under load can fail to load that actor's class
    from the GCS (function_manager.py `_load_actor_class_from_gcs`, `ensure_str(None)`), reported
    by job_manager.py L281-285 as "Unexpected error occurred: ... class_name: JobSupervisor";
    Ray 2.60 tags such ends with an error type (dashboard/modules/job/common.py L77-85)."""
    if log.strip() or info.driver_node_id is not None:
        return False
    if info.error_type in RAY_SUPERVISOR_ACTOR_LOST:
        return True
    message = info.message or ""
    return "Unexpected error occurred" in message and "class_name: JobSupervisor" in message
