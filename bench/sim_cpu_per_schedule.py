"""Benchmark: schedules per CPU-second of the supervision simulation, this tree against a baseline.

The simulation (tests/jobs/head/sim/) drives the real supervisor, run store and re-armer through
seeded fault schedules; `make test-fast` runs 5,000 of them and must take under a minute
(two workers). This runs seeds `0..N-1` in a child process per repetition, for this tree and for
a `git archive` of BASELINE_COMMIT (the simulation before its speed-ups), alternating which goes
first, and reports the CPU time (user + system) per schedule of each and their ratio. CPU time,
not wall time: the machine's other work changes the second far more than the first.
Run: .venv/bin/python bench/sim_cpu_per_schedule.py [--schedules 400] [--reps 3]
[--baseline COMMIT] [--sweep] (`--sweep`: the sweep's own schedules, `sweep_schedule`, with lease
races and slow submits, which both trees must have; default: `random_schedule`)
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import git_tree  # noqa: E402

BASELINE_COMMIT = "7adf001"  # 5,000 schedules in the fast tests, before the speed-ups

CHILD = """
import gc, resource, shutil, sys, tempfile
from pathlib import Path
sys.path.insert(0, {tree!r})
from tests.jobs.head.sim.world import {make} as make, simulate
gc.freeze(); gc.set_threshold(100_000, 50, 50)  # as the sweep's chunks run
base = Path(tempfile.mkdtemp(dir={tmp!r}))
before = resource.getrusage(resource.RUSAGE_SELF)
for seed in range({n}):
    simulate(make(seed), base / str(seed))
    shutil.rmtree(base / str(seed), ignore_errors=True)
after = resource.getrusage(resource.RUSAGE_SELF)
cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
print(cpu / {n} * 1000)
"""


def baseline_tree(tmp: Path, commit: str) -> Path:
    return git_tree.unpack(commit, tmp / "baseline")


def cpu_ms_per_schedule(tree: Path, n: int, tmp: Path, make: str = "random_schedule") -> float:
    shm = Path("/dev/shm")
    where = str(shm if shm.is_dir() else tmp)
    done = subprocess.run(
        [sys.executable, "-c", CHILD.format(tree=str(tree), tmp=where, n=n, make=make)],
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--schedules", type=int, default=400)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--baseline", default=BASELINE_COMMIT, help="the commit to compare with")
    parser.add_argument("--sweep", action="store_true", help="the sweep's schedules")
    args = parser.parse_args()
    make = "sweep_schedule" if args.sweep else "random_schedule"
    tmp = Path(tempfile.mkdtemp(prefix="sim-bench-"))
    base_label = f"baseline {args.baseline}"
    results: dict[str, list[float]] = {"this tree": [], base_label: []}
    try:
        trees = {"this tree": ROOT, base_label: baseline_tree(tmp, args.baseline)}
        for i in range(args.reps):
            order = list(trees) if i % 2 == 0 else list(reversed(trees))
            for label in order:
                ms = cpu_ms_per_schedule(trees[label], args.schedules, tmp, make)
                results[label].append(ms)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{make} seeds 0..{args.schedules - 1}, {args.reps} repetitions, alternating order")
    print("| tree | CPU ms per schedule (median) | min | max | schedules per CPU-second |")
    print("|---|---|---|---|---|")
    for label, xs in results.items():
        med = statistics.median(xs)
        print(f"| {label} | {med:.2f} | {min(xs):.2f} | {max(xs):.2f} | {1000 / med:.1f} |")
    new, old = (statistics.median(xs) for xs in results.values())
    print(f"CPU per schedule, this tree / baseline: {new / old:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
