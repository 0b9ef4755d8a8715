"""The benchmark baseline's restart rule (its loop runs against a real head in the benchmark)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from jobs.client.types import JobStatus

spec = importlib.util.spec_from_file_location(
    "cli_restart_loop", Path(__file__).resolve().parents[2] / "bench" / "cli_restart_loop.py"
)
loop = importlib.util.module_from_spec(spec)
spec.loader.exec_module(loop)


def test_only_a_failure_with_restarts_left_is_restarted():
    assert loop.should_restart(JobStatus.FAILED, 1)
    assert not loop.should_restart(JobStatus.FAILED, 0)
    assert not loop.should_restart(JobStatus.STOPPED, 3)
    assert not loop.should_restart(JobStatus.SUCCEEDED, 3)
