"""The supervisor's own small rules: what counts as a checkpoint, which errors are retried, knobs.

Its loop is exercised against a real local Ray cluster in tests/jobs/test_supervised.py.
"""

from __future__ import annotations

import requests

from jobs.supervisor import Config, _transient, checkpoint_entries


def test_checkpoint_entries_ignore_half_written_and_hidden_entries(tmp_path):
    assert checkpoint_entries(str(tmp_path / "missing")) == frozenset()
    assert checkpoint_entries("") == frozenset()
    for n in ("step_10", "tmp_step_20", ".lock", "global_step_5"):
        (tmp_path / n).mkdir()
    assert checkpoint_entries(str(tmp_path)) == {"step_10", "global_step_5"}


def test_only_a_missing_dashboard_is_retried_never_a_refusal():
    assert _transient(requests.exceptions.ConnectionError("refused"))
    assert _transient(RuntimeError("Request failed with status code 503: unavailable"))
    # A refused runtime env or a bad request would fail the same way forever.
    assert not _transient(RuntimeError("Request failed with status code 400: bad runtime_env"))
    assert not _transient(RuntimeError("Request failed with status code 500: Job with "
                                       "submission_id r-a2 already exists"))


def test_knobs_come_from_the_environment_with_production_defaults():
    assert Config.from_env({}) == Config(poll_s=1.0, max_wait_s=1800.0, settle_s=60.0,
                                         progress_s=60.0)
    assert Config.from_env({"JOBS_SUPERVISOR_MAX_WAIT_S": "30"}).max_wait_s == 30.0
