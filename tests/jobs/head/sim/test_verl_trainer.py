"""The simulation's veRL trainer (tests/jobs/head/sim/world.py `_save_verl`, `_verl_resume`): its
checkpoint layout, tracker and keep rule, driven with the real supervisor and hygiene.

A preemption lands inside a save at a moment the save itself names: the run's first schedule
without faults says when each save began (`saves global_step_N` in the world's history)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from jobs.head import events as ev
from tests.jobs.head.sim import world as world_module
from tests.jobs.head.sim.world import (
    SAVE_S,
    VERL_TRACKER,
    VERL_WEIGHTS,
    VERL_WEIGHTS_AT,
    Fault,
    Schedule,
    Violation,
    simulate,
)

pytestmark = pytest.mark.simulation


def _save_started(base: Path, keep: int, n: int) -> float:
    """When the fault-free run began saving global_step_`n` (seconds after the submit)."""
    world = simulate(Schedule(seed=1, faults=[], framework="verl", verl_keep=keep), base)
    for line in world.history:
        found = re.match(rf"t\+\s*(\d+)s .* saves global_step_{n}$", line)
        if found:
            return float(found[1])
    raise AssertionError(f"no save of global_step_{n} in {world.history}")


def _verl(keep: int, *faults: Fault, hygiene_keep: int = 2) -> Schedule:
    return Schedule(
        seed=1, faults=list(faults), framework="verl", verl_keep=keep, keep=hygiene_keep
    )


def test_a_fault_free_verl_run_leaves_its_tracker_on_its_last_save(tmp_path):
    world = simulate(_verl(2), tmp_path / "run")
    assert world.succeeded
    ckpt = tmp_path / "run" / "ckpt"
    last = int((ckpt / VERL_TRACKER).read_text())
    assert last == world.newest_complete == 27  # saves every 3 steps, target 30
    assert (ckpt / f"global_step_{last}" / "actor" / VERL_WEIGHTS).is_file()
    # Its own keep rule left two saves with weights.
    with_weights = sorted(
        p.name for p in ckpt.glob("global_step_*") if (p / "actor" / VERL_WEIGHTS).exists()
    )
    assert with_weights == ["global_step_24", "global_step_27"]


def test_keep_one_and_a_preemption_mid_save_leave_nothing_to_resume_from(tmp_path):
    """Why the product refuses `trainer.max_actor_ckpt_to_keep=1` (jobs/recipes/catalogue.py,
    tests/jobs/recipes/test_recipes.py): veRL deleted step 3's actor before writing step 6's, a
    preemption cut that write, and its tracker still names step 3, whose folder has no weights:
    every later attempt fails at load alike, and the run ends as a crash."""
    at = _save_started(tmp_path / "clean", keep=1, n=6) + 10
    with pytest.raises(Violation, match="did not finish") as failed:
        simulate(_verl(1, Fault(at, "preempt", 600)), tmp_path / "run")
    assert '"reason": "crash"' in str(failed.value)
    ckpt = tmp_path / "run" / "ckpt"
    assert (ckpt / VERL_TRACKER).read_text() == "3"
    assert not (ckpt / "global_step_3" / "actor").exists()


def test_keep_two_resumes_from_the_previous_save_after_the_same_preemption(tmp_path):
    at = _save_started(tmp_path / "clean", keep=2, n=6) + 10
    world = simulate(_verl(2, Fault(at, "preempt", 600)), tmp_path / "run")
    assert world.succeeded
    second = next(j for j in world.jobs.values() if j.submission_id == "sim-a2")
    assert second.start_step == 3


def test_a_preemption_between_the_shards_and_the_tracker_resumes_from_the_tracker(tmp_path):
    """Step 6's weights are on disk, its tracker is not: veRL resumes from step 3 (the tracker
    is written last), and hygiene removes the step above the tracker as half-written rather
    than keeping it as complete."""
    at = _save_started(tmp_path / "clean", keep=2, n=6) + SAVE_S * VERL_WEIGHTS_AT + 5
    world = simulate(_verl(2, Fault(at, "preempt", 600)), tmp_path / "run")
    assert world.succeeded
    second = next(j for j in world.jobs.values() if j.submission_id == "sim-a2")
    assert second.start_step == 3
    pruned = [r for r in world.store().events() if r["event"] == ev.PRUNED]
    assert any("global_step_6" in r["message"] for r in pruned), pruned


def test_a_lost_tracker_is_progress_lost_and_the_world_says_so(tmp_path, monkeypatch):
    """The invariant the veRL model adds: no attempt resumes behind the newest complete save.
    A prune that also removed veRL's tracker (its name matches no step) leaves every save in
    place, yet veRL then trains from scratch (`find_latest_ckpt_path`: no tracker, None)."""
    real = world_module._REAL_PRUNE

    def prune_with_the_tracker(directory: str, keep: int, held: bool) -> list[str]:
        (Path(directory) / VERL_TRACKER).unlink(missing_ok=True)
        return real(directory, keep, held)

    monkeypatch.setattr(world_module, "_REAL_PRUNE", prune_with_the_tracker)
    at = _save_started(tmp_path / "clean", keep=2, n=6) + 10
    with pytest.raises(Violation, match="resumed from step 0, behind the newest complete"):
        simulate(_verl(2, Fault(at, "preempt", 600)), tmp_path / "run")
