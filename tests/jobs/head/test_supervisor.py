"""The supervisor's own small rules: what counts as a checkpoint.

Its loop is exercised against a real local Ray cluster in tests/jobs/runs/test_handoff.py.
"""

from __future__ import annotations

from jobs.head.supervisor import checkpoint_entries


def test_checkpoint_entries_ignore_half_written_and_hidden_entries(tmp_path):
    assert checkpoint_entries(str(tmp_path / "missing")) == frozenset()
    assert checkpoint_entries("") == frozenset()
    for n in ("step_10", "tmp_step_20", ".lock", "global_step_5"):
        (tmp_path / n).mkdir()
    assert checkpoint_entries(str(tmp_path)) == {"step_10", "global_step_5"}
