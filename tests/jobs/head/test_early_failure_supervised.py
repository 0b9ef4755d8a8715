"""A supervised attempt that fails before `ray.init` is judged at once, on a real local Ray.

Such an attempt has no Ray job id (Ray's job record says `job_id: null`), so Ray's state API
cannot say where its actors and tasks ran; its driver's node can (`driver_node_id`), and when
that node answers the probe the failure is judged without waiting out the settle time. Run with
the settle time at its production 60 s: a judgement that waits for it shows as a 60 s gap.
"""

from __future__ import annotations

import pytest

from jobs.head import events as ev
from tests.jobs.fast_supervisor import (
    AT_ONCE_S,
    PRODUCTION_SETTLE,
    record_seconds,
    supervise_command,
)

pytestmark = pytest.mark.ray


@pytest.fixture(autouse=True)
def production_settle(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in PRODUCTION_SETTLE.items():
        monkeypatch.setenv(k, v)  # forwarded to the supervisor job at hand-off


def test_a_failure_before_ray_init_is_judged_without_the_settle_wait(ray_url, tmp_path):
    command = ["python", "-c", "import sys; print('failing before ray.init'); sys.exit(1)"]
    run, recs = supervise_command(ray_url, tmp_path, "early", command, timeout=180)
    submitted = [r for r in recs if r["event"] == ev.SUBMITTED]
    ended = [r for r in recs if r["event"] == ev.ATTEMPT_ENDED]
    assert [r["submission_id"] for r in submitted] == [f"{run}-a1", f"{run}-a2"], recs
    # The second attempt follows the first's end at once (it waited the whole settle, 60 s)...
    assert record_seconds(submitted[1]) - ended[0]["ended_ms"] / 1000 <= AT_ONCE_S, recs
    # ...and the second failure, the same at once, is the crash that ends the run.
    end = ev.outcome(recs)
    assert end is not None and end["reason"] == "crash", end
    assert record_seconds(end) - ended[1]["ended_ms"] / 1000 <= AT_ONCE_S, recs
