"""The supervisor's own small rules: what counts as a checkpoint, and publishing its code.

Its loop is exercised against a real local Ray cluster in tests/jobs/runs/test_handoff.py and
tests/jobs/head/test_survival.py.
"""

from __future__ import annotations

from jobs.head.protocol import Settings
from jobs.head.supervisor import _publish_code, checkpoint_activity, checkpoint_entries


def test_checkpoint_entries_ignore_half_written_and_hidden_entries(tmp_path):
    assert checkpoint_entries(str(tmp_path / "missing")) == frozenset()
    assert checkpoint_entries("") == frozenset()
    for n in ("step_10", "tmp_step_20", ".lock", "old_step_3"):
        (tmp_path / n / "policy" / "weights").mkdir(parents=True)
        (tmp_path / n / "config.yaml").write_text("{}")
    (tmp_path / "step_30").mkdir()  # no config, no weights: not a complete NeMo RL step
    assert checkpoint_entries(str(tmp_path)) == {"step_10"}


def test_a_verl_step_counts_only_once_its_tracker_points_at_it(tmp_path):
    # veRL writes global_step_N/ first and latest_checkpointed_iteration.txt last
    # (verl/trainer/ppo/ray_trainer.py v0.6.0 L819-824): a step above the tracker is half-written.
    (tmp_path / "global_step_5" / "actor").mkdir(parents=True)
    (tmp_path / "global_step_5" / "actor" / "model_world_size_1_rank_0.pt").write_bytes(b"w")
    assert checkpoint_entries(str(tmp_path)) == frozenset()
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("5")
    (tmp_path / "global_step_10" / "actor").mkdir(parents=True)  # being written
    assert checkpoint_entries(str(tmp_path)) == {"global_step_5"}
    assert "global_step_10" in checkpoint_activity(str(tmp_path))


def test_lease_and_backoff_knobs_come_from_the_environment():
    assert (Settings().lease_s, Settings().backoff_max_s) == (15.0, 60.0)
    assert Settings.from_env({"JOBS_SUPERVISOR_LEASE_S": "3"}).lease_s == 3.0
    assert "JOBS_SUPERVISOR_LEASE_S" in Settings.forwarded({"JOBS_SUPERVISOR_LEASE_S": "3"})


def test_the_jobs_package_is_published_for_the_rearmer_and_current_swaps(tmp_path):
    _publish_code(str(tmp_path))
    first = (tmp_path / ".rearm" / "current").resolve()
    assert (tmp_path / ".rearm" / "current" / "jobs" / "head" / "rearm.py").is_file()
    for _ in range(4):
        _publish_code(str(tmp_path))
    assert (tmp_path / ".rearm" / "current").resolve() != first
    assert len([p for p in (tmp_path / ".rearm").iterdir() if p.name.startswith("v")]) == 3


def test_completed_steps_are_read_from_either_frameworks_step_lines():
    """Issue 24 item 6: the crash rule's progress includes training steps, read from the log."""
    from jobs.head.progress import completed_steps

    nemo = "loading...\n==== Step 11/500 ====\nloss 1\n==== Step 12/500 ====\n"
    verl = "step:7 - actor/loss:0.1\nstep:8 - actor/loss:0.09\nstep:8 - timing_s/gen:3\n"
    assert completed_steps(nemo) == 1  # step 11 done once step 12 started
    assert completed_steps(verl) == 1
    assert completed_steps("==== Step 1/500 ====\nTraceback: CUDA OOM\n") == 0
    assert completed_steps("no steps at all") == 0
