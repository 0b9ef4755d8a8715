"""Check: the supervision simulation's seeded lives, this tree against a baseline commit, event by event.

A refactor of the supervisor (or of anything it calls) must not change what a run lives through.
The simulation is deterministic per seed (one simulated process runs at a time, on simulated
time), so the same seed run through the baseline's code and this tree's must give the same
history (what happened, when) and the same records on the run's runs root. This script runs
seeds LO..HI-1 through both, each in its own process with its own tree first on `sys.path`,
and prints how many seeds lived the same life and, for the first that did not, where the two
lives part.

Two things are masked before comparing: the temporary folder names, and wall-clock timestamps
(the supervisor's "waiting since" note reads the real clock, not the simulated one).

Run: .venv/bin/python bench/sim_histories.py --base 0d219d5 [--seeds 0:3000]
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_TMP = re.compile(r"/dev/shm/[\w.-]+|/tmp/[\w.-]+")
_WALL = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
_SIMULATED_YEAR = "2027-"  # the simulation's clock starts in January 2027 (world.T0)


def _mask(line: str) -> str:
    line = _TMP.sub("TMP", line)
    return _WALL.sub(lambda m: m[0] if m[0].startswith(_SIMULATED_YEAR) else "WALL", line)


def dump(lo: int, hi: int) -> None:
    """In a child process whose tree is first on sys.path: one JSON line per seed."""
    import jobs

    print(json.dumps({"code": str(Path(jobs.__file__).parent)}), flush=True)
    from tests.jobs.head.sim import world
    from tests.jobs.head.sim.test_simulation import random_schedule

    held: dict[str, world.World] = {}
    original = world.World.__init__

    def keep(self: world.World, *a: object, **k: object) -> None:
        original(self, *a, **k)
        held["w"] = self

    world.World.__init__ = keep  # type: ignore[method-assign]
    base = Path(tempfile.mkdtemp(prefix="sim-histories-"))
    try:
        for seed in range(lo, hi):
            try:
                world.simulate(random_schedule(seed), base / str(seed))
                error = ""
            except Exception as e:  # a violation is part of the life compared
                error = f"{type(e).__name__}: {e}"
            w = held["w"]
            events = [{k: v for k, v in r.items() if k != "supervisor"} for r in w.store().events()]
            life = [error, *w.history, *(json.dumps(e, sort_keys=True) for e in events)]
            print(json.dumps({"seed": seed, "life": [_mask(x) for x in life]}), flush=True)
            shutil.rmtree(base / str(seed), ignore_errors=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _lives(tree: Path, lo: int, hi: int) -> dict[int, list[str]]:
    # The tree's own code first on the path (PYTHONPATH): nothing of this checkout is imported
    # in the child but this script, which imports nothing of the project at module level.
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, __file__, "--dump", f"{lo}:{hi}"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    records = [json.loads(line) for line in done.stdout.splitlines()]
    # The child must have run the tree's own jobs/ (an editable install could shadow it).
    code = Path(records[0]["code"])
    if not code.is_relative_to(tree):
        raise SystemExit(f"the child for {tree} ran the jobs package at {code}")
    return {r["seed"]: r["life"] for r in records[1:]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="the baseline commit")
    parser.add_argument("--seeds", default="0:3000", help="LO:HI, seeds LO..HI-1")
    parser.add_argument("--dump", metavar="LO:HI", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dump:
        dump(*(int(x) for x in args.dump.split(":")))
        return 0
    if not args.base:
        parser.error("--base COMMIT is required")
    sys.path.insert(0, str(ROOT))
    from bench.git_tree import unpack

    lo, hi = (int(x) for x in args.seeds.split(":"))
    with tempfile.TemporaryDirectory() as scratch:
        old = _lives(unpack(args.base, Path(scratch) / "base"), lo, hi)
        new = _lives(ROOT, lo, hi)
    same = [s for s in range(lo, hi) if old.get(s) == new.get(s)]
    print(f"{len(same)} of {hi - lo} seeds lived the same life in {args.base} and this tree")
    parted = [s for s in range(lo, hi) if s not in same]
    if parted:
        s = parted[0]
        print(f"first seed that parts: {s}")
        diff = difflib.unified_diff(
            old.get(s, []), new.get(s, []), "base", "this tree", lineterm=""
        )
        print("\n".join(list(diff)[:40]))
    return 0 if not parted else 1


if __name__ == "__main__":
    sys.exit(main())
