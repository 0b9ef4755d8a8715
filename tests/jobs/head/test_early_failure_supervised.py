"""A supervised attempt that fails before `ray.init` is judged at once, on a real local Ray.

Such an attempt has no Ray job id (Ray's job record says `job_id: null`), so Ray's state API
cannot say where its actors and tasks ran; its driver's node can (`driver_node_id`), and when
that node answers the probe the failure is judged without waiting out the settle time. Run with
the settle time at its production 60 s: a judgement that waits for it shows as a 60 s gap.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from jobs.client.dashboard import Dashboard
from jobs.head import events as ev
from jobs.head.run_store import RunStore
from jobs.runs import handoff, plan
from tests.jobs.conftest import wait_until

pytestmark = pytest.mark.ray

PRODUCTION_SETTLE_S = "60"  # jobs/head/protocol.py Settings: JOBS_SUPERVISOR_SETTLE_S
AT_ONCE_S = 15.0  # a judgement without the settle wait: a few polls and a probe


@pytest.fixture(autouse=True)
def production_settle(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in {
        "JOBS_SUPERVISOR_POLL_S": "0.5",
        "JOBS_SUPERVISOR_SETTLE_S": PRODUCTION_SETTLE_S,
    }.items():
        monkeypatch.setenv(k, v)  # forwarded to the supervisor job at hand-off


def seconds(record: dict[str, Any]) -> float:
    """A record's time stamp (whole seconds, UTC) as seconds since the epoch."""
    return datetime.strptime(record["t"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def test_a_failure_before_ray_init_is_judged_without_the_settle_wait(ray_url, tmp_path):
    run = f"early-{uuid.uuid4().hex[:8]}"
    command = ["python", "-c", "import sys; print('failing before ray.init'); sys.exit(1)"]
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
    wait_until(lambda: ev.outcome(store.events()) is not None, timeout=180, what="the run to end")
    recs = store.events()
    submitted = [r for r in recs if r["event"] == ev.SUBMITTED]
    ended = [r for r in recs if r["event"] == ev.ATTEMPT_ENDED]
    assert [r["submission_id"] for r in submitted] == [f"{run}-a1", f"{run}-a2"], recs
    # The second attempt follows the first's end at once (it waited the whole settle, 60 s)...
    assert seconds(submitted[1]) - ended[0]["ended_ms"] / 1000 <= AT_ONCE_S, recs
    # ...and the second failure, the same at once, is the crash that ends the run.
    end = ev.outcome(recs)
    assert end is not None and end["reason"] == "crash", end
    assert seconds(end) - ended[1]["ended_ms"] / 1000 <= AT_ONCE_S, recs
