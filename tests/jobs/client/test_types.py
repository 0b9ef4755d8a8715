"""Our JobStatus / JobDetails against Ray's own: the same states, the same terminal ones."""

from __future__ import annotations

from ray.job_submission import JobDetails as RayJobDetails
from ray.job_submission import JobStatus as RayJobStatus

from jobs.client.types import JobDetails, JobStatus


def test_the_states_and_their_terminality_are_rays():
    assert {s.value for s in JobStatus} == {s.value for s in RayJobStatus}
    for ray_status in RayJobStatus:
        ours = JobStatus(ray_status.value)
        assert ours == ray_status and ours.is_terminal() == ray_status.is_terminal()
        assert str(ours) == str(ray_status)


def test_every_field_we_read_is_a_field_of_rays_job_details():
    assert set(JobDetails.model_fields) <= set(RayJobDetails.model_fields)
    for name, field in JobDetails.model_fields.items():
        # A field we require must be one every answer has (Ray requires it too), or a valid
        # job record would fail to parse.
        assert not field.is_required() or RayJobDetails.model_fields[name].is_required(), name
