"""A simulated 20-hour run on 2 nodes, interrupted every 8 hours on average,
wastes within 1.1 x the Young/Daly optimum for its C, S and restart time when it saves at the
period `--checkpoint-every auto` chooses (tests/jobs/head/sim/twenty_hours.py; the figures in
docs/benchmarks.md come from `bench/goodput_20h.py`)."""

from __future__ import annotations

import pytest

from tests.jobs.head.sim import twenty_hours

SEEDS = range(60)


@pytest.mark.simulation
def test_the_young_daly_period_wastes_within_1_1_of_the_optimum_and_less_than_another():
    every = twenty_hours.young_daly_every()
    assert every == 15  # C 60 s, M 8 h: sqrt(2 x 60 x 28800) - 60 = 1799 s of 120 s steps
    chosen = twenty_hours.run(every, SEEDS)
    assert chosen.interruptions > len(SEEDS)  # about 2.5 per 20-hour run
    best = twenty_hours.optimum(chosen.restart_each_s)
    print(f"badput {chosen.badput:.4f} at every {every} steps, optimum {best:.4f}")
    assert chosen.badput <= 1.1 * best
    # The period matters: four times longer wastes clearly more in the same world.
    longer = twenty_hours.run(4 * every, SEEDS)
    assert longer.badput > 1.3 * chosen.badput
