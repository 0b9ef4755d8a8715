"""Steps lost where a flex-start node's end was known in advance, over the simulation's sweep.

`python bench/flex_node_end_losses.py [--seeds 0:2000]` runs the sweep's seeded schedules
(tests/jobs/head/sim/world.py `sweep_schedule`) whose recipe run is on flex-start nodes, each
told by its supervisor to save before its nodes end, and counts, at every node end that met a
running attempt, the steps it had made since its last complete save. It prints how many seeds
had such an end, and each seed that lost more than one step with the faults it held (a head
loss makes the rejoined nodes look new to Ray: docs/supervision.md, "Saves before a flex-start
node ends").
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.jobs.head.sim.world import remove_tree, simulate, sweep_schedule


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0:2000", help="first:last (exclusive)")
    args = parser.parse_args(argv)
    first, last = (int(x) for x in args.seeds.split(":"))
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    base = Path(tempfile.mkdtemp(prefix="flexbench-", dir=shm))
    flex = met = 0
    worse: list[str] = []
    try:
        for seed in range(first, last):
            schedule = sweep_schedule(seed)
            if not schedule.node_max_run_s or not schedule.declare_gpus:
                continue  # only a recipe run (GPUs declared) is told to save before the end
            world = simulate(schedule, base / str(seed))
            remove_tree(base / str(seed))
            flex += 1
            if world.node_end_losses:
                met += 1
            if max(world.node_end_losses, default=0) > 1:
                kinds = ", ".join(sorted({f.kind for f in schedule.faults}))
                worse.append(
                    f"  seed {seed} ({schedule.framework}): lost {world.node_end_losses}; {kinds}"
                )
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"{flex} flex-start recipe seeds in {first}:{last}; {met} had a node end on an attempt")
    print(f"{len(worse)} lost more than one step there:", *worse, sep="\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
