"""What the CLI reads from Ray's Jobs API: a job's status and its details, without importing Ray.

Ray's own types (ray.job_submission.JobStatus / JobDetails) import all of `ray` (~0.7 s), which
a command that only talks HTTP to the dashboard does not need. These mirror the fields we read;
the values are Ray's (Ray 2.60: ray/dashboard/modules/job/common.py `JobStatus`,
ray/dashboard/modules/job/pydantic_models.py `JobDetails`).
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict


class JobStatus(str, Enum):
    """A job's state (common.py `JobStatus`, Ray 2.60). A `str` enum like Ray's, so it compares
    equal to Ray's member of the same value and to the plain string."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    STOPPED = "STOPPED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"

    def __str__(self) -> str:
        return f"{self.value}"

    def is_terminal(self) -> bool:
        """STOPPED, SUCCEEDED and FAILED are final (common.py `JobStatus.is_terminal`)."""
        return self.value in {"STOPPED", "SUCCEEDED", "FAILED"}


class JobDetails(BaseModel):
    """The fields of one job record (`GET /api/jobs/{id}`, pydantic_models.py `JobDetails`) that
    the CLI reads; the others (driver_info, runtime_env, ...) are ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    status: JobStatus
    entrypoint: str
    job_id: str | None = None
    submission_id: str | None = None
    message: str | None = None
    error_type: str | None = None
    start_time: int | None = None
    end_time: int | None = None
    metadata: dict[str, str] | None = None
    driver_exit_code: int | None = None
    # The node the entrypoint runs on, set once the driver starts, even when it never calls
    # ray.init (then `job_id` stays None): Ray 2.60 dashboard/modules/job/pydantic_models.py
    # L102-105 (JobDetails), common.py L127-129 (JobInfo); the images' Ray has it too (2.46.0 and
    # 2.48.0: pydantic_models.py L97, common.py L107, read from their PyPI wheels).
    driver_node_id: str | None = None
    # What the job was submitted with (a `run` run's next attempt is sent with the same). Ray's
    # job record does not give the driver's reservations back: `run` records them in metadata.
    runtime_env: dict[str, Any] | None = None


class Submission(BaseModel):
    """One attempt of a run, exactly as it is sent to `JobSubmissionClient.submit_job`."""

    model_config = ConfigDict(frozen=True)

    submission_id: str
    entrypoint: str
    runtime_env: dict[str, object]
    # Ray requires str -> str metadata.
    metadata: dict[str, str]
    # CPUs the driver (the entrypoint) reserves; None sends it to the head. The head starts
    # with num-cpus 0 (components/k8s/raycluster.py), so >= 1 puts the driver on a worker.
    entrypoint_num_cpus: float | None = None
    # GPUs and custom resources the driver reserves (`ray job submit --entrypoint-num-gpus`,
    # `--entrypoint-resources`): Ray places the entrypoint on a node that has them and sets
    # CUDA_VISIBLE_DEVICES for it; None reserves none.
    entrypoint_num_gpus: float | None = None
    entrypoint_resources: dict[str, float] | None = None

    @property
    def run(self) -> str:
        return self.metadata["run"]

    @property
    def attempt(self) -> int:
        return int(self.metadata["attempt"])
