"""Schedules per second of the simulation of supervision: the runs root in memory against real files.

`python bench/sim_throughput.py [--seeds 0:200]` runs the same seeded fault schedules
(tests/jobs/head/sim/world.py) twice in this process: once with the run store on real files
(`jobs.head.files.LOCAL` on a tmpfs when there is one: O_EXCL, rename, fsync per record), once
with the in-memory runs root the tests use (tests/jobs/head/sim/memfs.py, the same contract).
It prints wall and CPU seconds for each and the ratio; both runs must keep every invariant.
CPU seconds (every thread of this process) say more than wall time on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jobs.head.files import LOCAL, Files
from tests.jobs.head.sim.world import random_schedule, simulate


def measure(seeds: range, files: Files | None) -> tuple[float, float]:
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    base = Path(tempfile.mkdtemp(prefix="simbench-", dir=shm))
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        for seed in seeds:
            simulate(random_schedule(seed), base / str(seed), files=files)
            shutil.rmtree(base / str(seed), ignore_errors=True)
        return time.perf_counter() - wall, time.process_time() - cpu
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0:200", help="first:end (end excluded)")
    args = parser.parse_args(argv)
    first, _, end = args.seeds.partition(":")
    seeds = range(int(first), int(end))
    n = len(seeds)
    rows = [("real files", measure(seeds, LOCAL)), ("in memory", measure(seeds, None))]
    for name, (wall, cpu) in rows:
        print(
            f"{name:>10}: {n} schedules, {wall:6.2f} s wall ({n / wall:6.1f}/s), "
            f"{cpu:6.2f} s CPU ({n / cpu:6.1f}/CPU-s)"
        )
    (w0, c0), (w1, c1) = rows[0][1], rows[1][1]
    print(f"in memory / real files: {w0 / w1:.2f}x wall, {c0 / c1:.2f}x CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
