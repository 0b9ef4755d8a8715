"""Continuing a `run` run: its next attempt sent exactly as Ray recorded the last one.

A command run (`rl-jobs run -- COMMAND`) has no recipe to compose again: what it ran is Ray's own
record of its latest attempt (entrypoint, runtime env with the uploaded working dir's `gcs://`
package) with the driver's reservations its metadata recorded (Ray's record lacks them), or, when its supervisor died before attempt 1, the hand-off's
spec. The next attempt is that, numbered on; its checkpoint directory (`run --checkpoint-dir`) is
in its metadata. The uploaded package lives in the head's GCS only: Ray removes a package no job
references for a while, and a new head has none, so a package the head no longer holds is
refused by name (with how to start the command again) rather than submitted to fail in Ray.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jobs.client.dashboard import Dashboard
from jobs.client.types import Submission
from jobs.common import commands
from jobs.common.errors import UsageError
from jobs.head.protocol import attempt_id
from jobs.runs.plan import Reserve
from jobs.runs.state import Run, spec_of


@dataclass(frozen=True)
class NextCommand:
    """The next attempt of a command run, what it needs of the cluster, and what it follows."""

    submission: Submission
    gpus: int
    checkpoint_dir: str
    after: str  # the submission id of the attempt (or supervisor) it follows
    after_status: str
    attempt: int


def next_attempt(dashboard: Dashboard, found: Run, where: str) -> NextCommand:
    """The run's next attempt as Ray recorded its latest one; refused when its package is gone."""
    latest = found.latest
    sup = found.supervisors[-1] if found.supervisors else None
    spec = spec_of(sup) if sup is not None else None
    if latest is not None:
        meta = dict(latest.metadata or {})
        number = int(meta.get("attempt") or len(found.attempts)) + 1
        reserve = Reserve.from_json(meta.get("reserve", ""))
        base: dict[str, Any] = {
            "entrypoint": latest.entrypoint,
            "runtime_env": dict(latest.runtime_env or {}),
            "entrypoint_num_cpus": reserve.cpus,
            "entrypoint_num_gpus": reserve.gpus,
            "entrypoint_resources": reserve.resources,
        }
        after, status = latest.submission_id or found.name, latest.status.value
    elif spec is not None and sup is not None:
        meta, number = dict(spec.metadata), spec.first_attempt
        base = {
            "entrypoint": spec.entrypoint,
            "runtime_env": dict(spec.runtime_env),
            "entrypoint_num_cpus": spec.entrypoint_num_cpus,
            "entrypoint_num_gpus": spec.entrypoint_num_gpus,
            "entrypoint_resources": spec.entrypoint_resources,
        }
        after, status = sup.submission_id or found.name, sup.status.value
    else:
        raise UsageError(f"run {found.name} has no attempt to continue", "start it again with run")
    _check_package(dashboard, found.name, base["runtime_env"], where)
    meta["attempt"] = str(number)
    gpus = spec.gpus_needed if spec is not None else int(base["entrypoint_num_gpus"] or 0)
    checkpoint_dir = meta.get("checkpoint_dir") or (spec.checkpoint_dir if spec else "")
    sub = Submission(submission_id=attempt_id(found.name, number), metadata=meta, **base)
    return NextCommand(sub, gpus, checkpoint_dir, after, status, number)


def _check_package(dashboard: Dashboard, run: str, runtime_env: dict[str, Any], where: str) -> None:
    uris = [runtime_env.get("working_dir"), *(runtime_env.get("py_modules") or [])]
    for uri in [u for u in uris if isinstance(u, str) and u.startswith("gcs://")]:
        if not dashboard.api.package_exists(uri):
            raise UsageError(
                f"run {run}'s uploaded code ({uri}) is no longer on this head (Ray removes "
                "packages no job uses, and a new head has none), so it cannot be sent again",
                "start the command again from its directory: "
                f"{commands.command('run', '--working-dir', 'DIR', where=where)} -- COMMAND ...",
            )
