"""Badput of a simulated 20-hour run on 2 nodes, interrupted every 8 hours on average, at the
Young/Daly save period and at others, against the first-order optimum.

    .venv/bin/python bench/goodput_20h.py --seeds 100

The real supervisor in the simulated world (tests/jobs/head/sim/world.py): 120 s steps, 60 s saves,
a preempted node replaced 5 minutes later. Badput is what jobs/runs/goodput.py puts outside
`productive`, summed over the seeds; the optimum is save_period.waste_fraction at sqrt(2CM) - C with
the restart each interruption cost in the same runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.jobs.head.sim import twenty_hours


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    args = parser.parse_args()
    every = twenty_hours.young_daly_every()
    print("save every | badput | optimum | ratio | interruptions | restart each | wall")
    for period in (every, 3, 4 * every):
        started = time.perf_counter()
        out = twenty_hours.run(period, range(args.seeds))
        best = twenty_hours.optimum(out.restart_each_s)
        label = f"{period} (Young/Daly)" if period == every else str(period)
        print(
            f"{label} | {out.badput:.2%} | {best:.2%} | {out.badput / best:.2f} | "
            f"{out.interruptions} | {out.restart_each_s:.0f} s | "
            f"{time.perf_counter() - started:.0f} s"
        )


if __name__ == "__main__":
    main()
