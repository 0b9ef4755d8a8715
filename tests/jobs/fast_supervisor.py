"""The supervisor's timings shortened for tests on a real Ray (jobs/head/protocol.py Settings).

The CLI forwards these variables to the supervisor job at hand-off, so a test sets them in its own
environment before handing a run off.
"""

from __future__ import annotations

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
