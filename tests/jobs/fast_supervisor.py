"""The supervisor's timings shortened for tests on a real Ray (jobs/head/protocol.py Settings).

The CLI forwards these variables to the supervisor job at hand-off, so a test sets them in its own
environment before handing a run off.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

FAST = {
    "JOBS_SUPERVISOR_POLL_S": "0.5",
    "JOBS_SUPERVISOR_SETTLE_S": "1",
    "JOBS_SUPERVISOR_PROGRESS_S": "2",
    "JOBS_SUPERVISOR_MAX_WAIT_S": "180",
}


def set_fast(monkeypatch: pytest.MonkeyPatch, **more: str) -> None:
    """FAST (and `more`, e.g. JOBS_SUPERVISOR_GAUGES_S="1") in this test's environment."""
    for key, value in {**FAST, **more}.items():
        monkeypatch.setenv(key, value)


# The supervisor's production settle (jobs/head/protocol.py Settings): a judgement that waits for
# it shows as a 60 s gap, one made without it as a few polls and a probe.
PRODUCTION_SETTLE = {"JOBS_SUPERVISOR_POLL_S": "0.5", "JOBS_SUPERVISOR_SETTLE_S": "60"}
AT_ONCE_S = 15.0


def record_seconds(record: dict[str, Any]) -> float:
    """A run record's time stamp (whole seconds, UTC) as seconds since the epoch."""
    return datetime.strptime(record["t"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def supervise_command(
    ray_url: str, runs_root: Path, prefix: str, command: list[str], timeout: float
) -> tuple[str, list[dict[str, Any]]]:
    """A supervised `run` of `command` (no GPUs, 3 restarts) handed off to the head at `ray_url`
    under `runs_root`; waits for the run's outcome and returns its name and records."""
    from jobs.client.dashboard import Dashboard
    from jobs.head import events as ev
    from jobs.head.run_store import RunStore
    from jobs.runs import handoff, plan
    from tests.jobs.conftest import wait_until

    run = f"{prefix}-{uuid.uuid4().hex[:8]}"
    handoff.hand_off(
        Dashboard(ray_url),
        plan.for_command(command, run, None, None, "test"),
        max_restarts=3,
        gpus=0,
        checkpoint_dir="",
        hint_where="",
        options=handoff.Options(runs_root=str(runs_root), max_preemptions=3),
    )
    store = RunStore(str(runs_root), run)
    wait_until(lambda: ev.outcome(store.events()) is not None, timeout=timeout, what="the end")
    return run, store.events()
