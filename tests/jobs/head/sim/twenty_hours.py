"""A 20-hour run on 2 nodes, interrupted every 8 hours on average, in the simulated world: its
badput at a save period against the Young/Daly optimum for its C, S and restart time.

The real supervisor drives the run (tests/jobs/head/sim/world.py); a preempted node's replacement
joins `REPLACE_S` later; badput is what the real goodput accounting (jobs/runs/goodput.py) puts
outside `productive`, summed over seeded schedules; the optimum is the first-order waste
(jobs/runs/save_period.waste_fraction) at sqrt(2CM) - C, with R the restart each interruption
cost in the same runs (capacity, settle and restart buckets of goodput's interruptions).
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from jobs.runs import goodput, save_period
from tests.jobs.head.sim.world import (
    NODES,
    SAVE_S,
    STEP_S,
    Fault,
    Schedule,
    attempt_traces,
    simulate,
)

HOURS = 20.0
MTBI_S = 8 * 3600.0
REPLACE_S = 300.0  # a spot node's replacement: minutes when capacity is there
TARGET_STEPS = int(HOURS * 3600 / STEP_S)


@dataclass
class Outcome:
    """Badput over all seeds at one save period, and the restart each interruption cost."""

    save_every: int
    total_s: float
    badput_s: float
    interruptions: int
    restart_s: float  # summed over interruptions

    @property
    def badput(self) -> float:
        return self.badput_s / self.total_s

    @property
    def restart_each_s(self) -> float:
        return self.restart_s / max(1, self.interruptions)


def schedule(seed: int, save_every: int) -> Schedule:
    """Preemptions at exponential gaps of mean MTBI_S, over more than the run can last."""
    rng = random.Random(seed)
    faults, t = [], 0.0
    while True:
        t += rng.expovariate(1 / MTBI_S)
        if t > 3 * HOURS * 3600:
            break
        faults.append(Fault(round(t), "preempt", REPLACE_S))
    return Schedule(seed, faults, save_every=save_every, target_steps=TARGET_STEPS)


def run(save_every: int, seeds: range) -> Outcome:
    shm = Path("/dev/shm")  # the trainer's checkpoints are real files: on tmpfs when there is one
    where = shm if shm.is_dir() and os.access(shm, os.W_OK) else None
    base = Path(tempfile.mkdtemp(prefix="sim20h-", dir=where))
    out = Outcome(save_every, 0.0, 0.0, 0, 0.0)
    try:
        for seed in seeds:
            world = simulate(schedule(seed, save_every), base / str(seed))
            spent = goodput.account(
                attempt_traces(world), world.store().events(), int(world.now * 1000), NODES * 8
            )
            assert world.succeeded, f"seed {seed}: the run did not finish"
            out.total_s += spent.total_s
            out.badput_s += spent.total_s - spent.seconds["productive"]
            out.interruptions += len(spent.interruptions)
            out.restart_s += sum(
                i["capacity"] + i["settle"] + i["restart"] for i in spent.interruptions
            )
            shutil.rmtree(base / str(seed), ignore_errors=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return out


def young_daly_every() -> int:
    return save_period.period_steps(save_period.young_daly_s(SAVE_S, MTBI_S), STEP_S)


def optimum(restart_s: float) -> float:
    """The least first-order badput for this C, M and R."""
    best = save_period.young_daly_s(SAVE_S, MTBI_S)
    return save_period.waste_fraction(best, SAVE_S, MTBI_S, restart_s)
