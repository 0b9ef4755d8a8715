"""A supervised attempt whose first step cannot reach the Hub ends the run at once, on a real local Ray.

The attempt exits as jobs/staging/ensure.py does when the Hub does not answer
(`HUB_UNREACHABLE_EXIT`); the real supervisor gives the run up after that one attempt, with its
reason, though restarts are left: no second GPU start into the same wall, no "crash". The settle
time is its production 60 s: the attempt fails before `ray.init`, and the give-up still comes at
once, when the node its driver ran on answers the probe.
"""

from __future__ import annotations

import pytest

from jobs.head import events as ev
from jobs.staging.entry import HUB_UNREACHABLE_EXIT
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


def test_an_attempt_that_cannot_stage_ends_the_run_after_one_try(ray_url, tmp_path):
    command = [
        "python",
        "-c",
        f"import sys; print('error: cannot reach the Hub'); sys.exit({HUB_UNREACHABLE_EXIT})",
    ]
    run, recs = supervise_command(ray_url, tmp_path, "nohub", command, timeout=120)
    end = ev.outcome(recs)
    assert end["event"] == ev.GAVE_UP and end["reason"] == "cannot_stage", end
    assert [r["submission_id"] for r in recs if r["event"] == ev.SUBMITTED] == [f"{run}-a1"]
    [ended] = [r for r in recs if r["event"] == ev.ATTEMPT_ENDED]
    assert ended["exit_code"] == HUB_UNREACHABLE_EXIT
    # Recorded at once after the end (it waited the whole settle, 60 s).
    assert record_seconds(end) - ended["ended_ms"] / 1000 <= AT_ONCE_S, recs
