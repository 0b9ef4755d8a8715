"""What `rl-jobs checkpoints` reads on the head: every step folder, complete or not, its size, and
the step a resume and an export take, by the frameworks' own rules (jobs/head/checkpoints.py)."""

from __future__ import annotations

import json
from pathlib import Path

from jobs.head import list_checkpoints
from jobs.head.checkpoints import VERL_TRACKER


def _verl_step(d: Path, n: int, weights: bool, size: int = 1000) -> None:
    actor = d / f"global_step_{n}" / "actor"
    actor.mkdir(parents=True)
    if weights:
        (actor / "model_world_size_1_rank_0.pt").write_bytes(b"w" * size)


def test_a_verl_run_whose_tracker_names_a_step_without_weights(tmp_path: Path) -> None:
    """With max_actor_ckpt_to_keep=1 a cut save leaves the tracker on a folder
    without weights: a resume would take it, an export takes the last complete one."""
    _verl_step(tmp_path, 10, weights=True, size=4096)
    _verl_step(tmp_path, 20, weights=True)
    (tmp_path / VERL_TRACKER).write_text("20")
    # veRL deleted step 20's weights before writing step 30's, then the node went
    (tmp_path / "global_step_20" / "actor" / "model_world_size_1_rank_0.pt").unlink()
    _verl_step(tmp_path, 30, weights=False)
    (tmp_path / VERL_TRACKER).write_text("20")
    found = list_checkpoints.inventory("verl", tmp_path)
    assert [(c["step"], c["complete"], c["bytes"]) for c in found["checkpoints"]] == [
        (10, True, 4096),
        (20, False, 0),
        (30, False, 0),
    ]
    assert (found["resume_step"], found["export_step"]) == (20, 10)


def test_a_nemo_rl_run_resumes_and_exports_its_highest_complete_step(tmp_path: Path) -> None:
    for n in (2, 4):
        (tmp_path / f"step_{n}" / "policy" / "weights").mkdir(parents=True)
        (tmp_path / f"step_{n}" / "config.yaml").write_text("{}")
    (tmp_path / "tmp_step_6" / "policy").mkdir(parents=True)
    found = list_checkpoints.inventory("nemo-rl", tmp_path)
    assert [c["step"] for c in found["checkpoints"] if c["complete"]] == [2, 4]
    assert found["half_written"] == ["tmp_step_6"]
    assert (found["resume_step"], found["export_step"]) == (4, 4)


def test_a_missing_directory_is_said_not_raised(tmp_path: Path, capsys) -> None:
    assert list_checkpoints.main([str(tmp_path / "none"), "--framework", "verl"]) == 0
    line = capsys.readouterr().out
    assert line.startswith(list_checkpoints.PREFIX)
    found = json.loads(line[len(list_checkpoints.PREFIX) :])
    assert found["exists"] is False and found["checkpoints"] == []


def test_a_symlink_in_a_checkpoint_is_not_followed_for_its_size(tmp_path: Path) -> None:
    _verl_step(tmp_path, 5, weights=True, size=10)
    (tmp_path / "global_step_5" / "actor" / "link").symlink_to("/dev/zero")
    (tmp_path / VERL_TRACKER).write_text("5")
    (c,) = list_checkpoints.inventory("verl", tmp_path)["checkpoints"]
    assert c["bytes"] == 10
