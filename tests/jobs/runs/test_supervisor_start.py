"""A supervisor job Ray failed before our code ran is sent once more; any other failure is not."""

from __future__ import annotations

import pytest

from jobs.client.types import JobDetails, JobStatus
from jobs.common.errors import UsageError
from jobs.runs.supervisor_start import (
    SupervisorNeverRan,
    ray_lost_the_job_supervisor,
    submit_until_armed,
)

# What Ray 2.46.0's job manager recorded for a supervisor whose JobSupervisor actor failed to
# load its class from the GCS (seen in this project's CI, 2026-12-06, load average ~14).
RAY_2_46_CLASS_LOAD = (
    "Unexpected error occurred: The actor died unexpectedly before finishing this task. "
    "class_name: JobSupervisor actor_id: 6b97949223827d1c5a62594201000000 pid: 22402 "
    "name: _ray_internal_job_actor_crash-a08bb21d-s1 namespace: SUPERVISOR_ACTOR_RAY_NAMESPACE "
    "ip: 192.0.2.2 The actor is dead because its worker process has died. Worker exit type: "
    "SYSTEM_ERROR Worker exit detail: Worker exits unexpectedly. ... AssertionError: Expected "
    "str or bytes, got <class 'NoneType'>"
)


def _job(message: str | None = None, **fields: object) -> JobDetails:
    return JobDetails(
        status=JobStatus.FAILED,
        entrypoint="python -m jobs.head.supervisor r-s1",
        submission_id="r-s1",
        message=message,
        **fields,  # type: ignore[arg-type]
    )


def test_rays_own_supervisor_actor_lost_before_the_driver_is_told_apart():
    assert ray_lost_the_job_supervisor(_job(RAY_2_46_CLASS_LOAD), "")
    assert ray_lost_the_job_supervisor(_job("x", error_type="JOB_SUPERVISOR_ACTOR_DIED"), "")


@pytest.mark.parametrize(
    "job, log",
    [
        # Our driver ran (it logged, or Ray placed it): whatever ended it is ours to report.
        (_job(RAY_2_46_CLASS_LOAD), '{"event": "refused"}\n'),
        (_job(RAY_2_46_CLASS_LOAD, driver_node_id="abc"), ""),
        # A head with no room for the actor stays full: sending again would fail the same way.
        (_job("could not be scheduled", error_type="JOB_SUPERVISOR_ACTOR_UNSCHEDULABLE"), ""),
        (_job("Failed to set up runtime environment: pip install failed"), ""),
        (_job(None), ""),
    ],
)
def test_any_other_failure_is_not_rays_supervisor_actor_lost(job, log):
    assert not ray_lost_the_job_supervisor(job, log)


def test_a_supervisor_ray_failed_before_it_ran_is_sent_once_more_as_the_next_number():
    sent: list[str] = []

    def submit(n: int) -> str:
        sent.append(f"r-s{n}")
        return sent[-1]

    def wait(sid: str) -> None:
        if sid == "r-s3":
            raise SupervisorNeverRan("r-s3 ended FAILED before it took the run")

    assert submit_until_armed(3, submit, wait) == "r-s4"
    assert sent == ["r-s3", "r-s4"]


def test_a_second_such_failure_and_any_other_failure_reach_the_user():
    sent: list[int] = []

    def submit(n: int) -> str:
        sent.append(n)
        return f"r-s{n}"

    def never_runs(sid: str) -> None:
        raise SupervisorNeverRan(f"{sid} ended FAILED before it took the run")

    with pytest.raises(SupervisorNeverRan, match="r-s2"):
        submit_until_armed(1, submit, never_runs)
    assert sent == [1, 2]

    sent.clear()

    def refuses(sid: str) -> None:
        raise UsageError(f"the supervisor {sid} refused the run: no runs root")

    with pytest.raises(UsageError, match="refused"):
        submit_until_armed(1, submit, refuses)
    assert sent == [1]  # a refusal of ours is never sent again
