"""Checkpoint hygiene: completion by each framework's marker, keep-N oldest first, the newest
complete one never pruned, nothing while an export holds the run."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from jobs.head import hygiene


def _verl(root, steps, tracker):
    for n in steps:
        (root / f"global_step_{n}" / "actor").mkdir(parents=True, exist_ok=True)
        (root / f"global_step_{n}" / "actor" / "model_world_size_1_rank_0.pt").write_bytes(b"w")
    if tracker is not None:
        (root / hygiene.VERL_TRACKER).write_text(f"{tracker}\n")


def _nemo(step):
    (step / "policy" / "weights").mkdir(parents=True)
    (step / "config.yaml").write_text("{}")


def test_a_half_written_verl_step_is_not_complete_and_is_cleared(tmp_path):
    _verl(tmp_path, [10, 20, 30], tracker=20)  # global_step_30 was being written
    assert hygiene.complete_steps(str(tmp_path)) == {10: "global_step_10", 20: "global_step_20"}
    assert hygiene.half_written(str(tmp_path)) == ["global_step_30"]


def test_without_its_tracker_no_verl_step_is_complete_and_none_is_deleted(tmp_path):
    _verl(tmp_path, [10], tracker=None)
    assert hygiene.complete_steps(str(tmp_path)) == {}
    assert hygiene.plan(str(tmp_path), keep=1) == []


def test_nemo_rl_tmp_steps_are_leftovers(tmp_path):
    for n in ("step_1", "step_2", "tmp_step_3", "old_step_2"):
        _nemo(tmp_path / n)
    assert hygiene.plan(str(tmp_path), keep=1) == ["step_1", "old_step_2", "tmp_step_3"]


def test_after_restarts_exactly_keep_n_complete_checkpoints_remain(tmp_path):
    # Three attempts each saved two steps; veRL's in-memory keep list forgot the earlier ones.
    _verl(tmp_path, [2, 4, 6, 8, 10, 12], tracker=12)
    (tmp_path / "global_step_14" / "actor").mkdir(parents=True)  # cut by the last failure
    removed = hygiene.prune(str(tmp_path), keep=3, held=False)
    assert removed == ["global_step_2", "global_step_4", "global_step_6", "global_step_14"]
    assert sorted(hygiene.complete_steps(str(tmp_path))) == [8, 10, 12]
    assert not (tmp_path / "global_step_14").exists()


def test_an_export_in_progress_holds_every_checkpoint(tmp_path):
    _verl(tmp_path, [2, 4, 6], tracker=6)
    assert hygiene.prune(str(tmp_path), keep=1, held=True) == []
    assert sorted(hygiene.complete_steps(str(tmp_path))) == [2, 4, 6]


@given(st.sets(st.integers(1, 40), max_size=12), st.integers(0, 6))
def test_the_newest_complete_checkpoint_is_never_planned_away(steps, keep):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        for n in steps:
            _nemo(root / f"step_{n}")
        planned = hygiene.plan(d, keep)
        if steps:
            assert f"step_{max(steps)}" not in planned
        if keep > 0:
            assert len(steps) - len(planned) == min(len(steps), keep)
