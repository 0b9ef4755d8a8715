"""Flex-start GPUs in the simulation: nodes that end at their maximum run duration, and each
trainer saving before the end as the supervisor tells it (jobs/head/node_end.py), NeMo RL's
`checkpoint_must_save_by` (save, then return) and veRL's ESI expiry (a save at every step near
the end, training on until the node ends)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.head import events as ev
from tests.jobs.head.sim.world import Schedule, Violation, World, simulate

pytestmark = pytest.mark.simulation

HOURS = 3600.0


def _flex(framework: str, age: float, keep: int = 2) -> Schedule:
    """A 120-step run (4 h of steps) on 3-hour nodes that were up `age` of a life at the submit,
    each up to that much (drawn per node)."""
    return Schedule(
        seed=1,
        faults=[],
        framework=framework,
        verl_keep=keep if framework == "verl" else 0,
        node_max_run_s=3 * HOURS,
        flex_age=age,
        target_steps=120,
    )


def _attempts(world: World) -> list:
    return sorted(
        (j for j in world.jobs.values() if j.submission_id in world.attempts_seen),
        key=lambda j: j.submitted_at,
    )


@pytest.mark.parametrize("age", [0.0, 0.5, 0.9])
def test_nemo_rl_saves_and_returns_before_its_nodes_end_and_the_run_goes_on(tmp_path, age):
    world = simulate(_flex("nemo-rl", age), tmp_path / "run")
    assert world.succeeded
    assert world.node_end_losses == []  # no attempt was on a node when it ended
    *stopped, last = _attempts(world)
    assert stopped and all(j.stopped_for_node_end for j in stopped)
    recs = world.store().events()
    told = [r for r in recs if r["event"] == ev.SAVE_BEFORE_NODE_END]
    assert len(told) == len(stopped) + 1


@pytest.mark.parametrize("age", [0.0, 0.5, 0.9])
def test_no_nemo_rl_attempt_is_sent_to_nodes_that_leave_it_one_step(tmp_path, age):
    """Once an attempt had saved and returned an hour before its nodes' end, the same nodes
    were capacity again (30 min of margin): each next attempt was told to save at once, loaded,
    made one step, saved and returned, until the nodes ended (12 attempts, age 0)."""
    world = simulate(_flex("nemo-rl", age), tmp_path / "run")
    short = [
        (j.submission_id, j.step - j.start_step)
        for j in _attempts(world)
        if j.stopped_for_node_end and j.step - j.start_step <= 1
    ]
    assert short == []


@pytest.mark.parametrize("age", [0.0, 0.5, 0.9])
def test_verl_saves_every_step_near_its_nodes_end_and_loses_at_most_one(tmp_path, age):
    world = simulate(_flex("verl", age), tmp_path / "run")
    assert world.succeeded
    assert world.node_end_losses and max(world.node_end_losses) <= 1
    # Near an end it saved step after step (its save period is 3).
    assert any(
        b - a == 1 for j in _attempts(world) for a, b in zip(j.saved, j.saved[1:], strict=False)
    )


def test_verl_keeping_one_checkpoint_loses_the_run_to_its_saves_near_a_nodes_end(tmp_path):
    """Why keep >= 2 on flex-start (the product refuses 1): each save near the end deletes the
    previous actor first, the node ends during one, and the tracker names a folder without
    weights, so every later attempt fails at load alike."""
    with pytest.raises(Violation, match='"reason": "crash"'):
        simulate(_flex("verl", 0.9, keep=1), tmp_path / "run")
    ckpt = Path(tmp_path / "run" / "ckpt")
    step = (ckpt / "latest_checkpointed_iteration.txt").read_text()
    assert not (ckpt / f"global_step_{step}" / "actor").exists()
