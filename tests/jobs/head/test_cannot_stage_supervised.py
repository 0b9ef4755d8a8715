"""A supervised attempt whose first step cannot reach the Hub ends the run at once, on a real local Ray.

The attempt exits as jobs/staging/ensure.py does when the Hub does not answer
(`HUB_UNREACHABLE_EXIT`); the real supervisor gives the run up after that one attempt, with its
reason, though restarts are left: no second GPU start into the same wall, no "crash". The settle
time is its production 60 s: the attempt fails before `ray.init`, and the give-up still comes at
once, when the node its driver ran on answers the probe.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from jobs.client.dashboard import Dashboard
from jobs.head import events as ev
from jobs.head.run_store import RunStore
from jobs.runs import handoff, plan
from jobs.staging.entry import HUB_UNREACHABLE_EXIT
from tests.jobs.conftest import wait_until

pytestmark = pytest.mark.ray


@pytest.fixture(autouse=True)
def fast_supervisor(monkeypatch) -> None:
    for k, v in {"JOBS_SUPERVISOR_POLL_S": "0.5", "JOBS_SUPERVISOR_SETTLE_S": "60"}.items():
        monkeypatch.setenv(k, v)  # forwarded to the supervisor job at hand-off


def test_an_attempt_that_cannot_stage_ends_the_run_after_one_try(ray_url, ray_client, tmp_path):
    run = f"nohub-{uuid.uuid4().hex[:8]}"
    command = [
        "python",
        "-c",
        f"import sys; print('error: cannot reach the Hub'); sys.exit({HUB_UNREACHABLE_EXIT})",
    ]
    handoff.hand_off(
        Dashboard(ray_url),
        plan.for_command(command, run, None, None, "test"),
        max_restarts=3,
        gpus=0,
        checkpoint_dir="",
        hint_where="",
        options=handoff.Options(runs_root=str(tmp_path), max_preemptions=3),
    )
    store = RunStore(str(tmp_path), run)
    wait_until(lambda: ev.outcome(store.events()) is not None, timeout=120, what="the run to end")
    recs = store.events()
    end = ev.outcome(recs)
    assert end["event"] == ev.GAVE_UP and end["reason"] == "cannot_stage", end
    assert [r["submission_id"] for r in recs if r["event"] == ev.SUBMITTED] == [f"{run}-a1"]
    [ended] = [r for r in recs if r["event"] == ev.ATTEMPT_ENDED]
    assert ended["exit_code"] == HUB_UNREACHABLE_EXIT
    # Recorded at once after the end (it waited the whole settle, 60 s).
    gave_up_at = datetime.strptime(end["t"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert gave_up_at.timestamp() - ended["ended_ms"] / 1000 <= 15.0, recs
