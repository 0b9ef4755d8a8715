"""The simulation's mutation test: each planted bug (a patch here) must fail the seeded sweep.

`python tests/jobs/head/sim/mutants/kill.py [--schedules N] [NAME ...]` (`make test-mutants`)
copies this checkout's tracked files as they are on disk into a temporary folder, applies one
patch there, and runs the fault sweeps (tests/jobs/head/sim/, static and on-demand GPUs) against
the copy, stopping at the first failing seed, whose replayable schedule it prints. A mutant the
sweep passes survived: the script says which and exits 1. The checkout itself is never changed.
`survivors/` holds the planted bugs the sweep does not kill yet (`--survivors` tries them): a
renewal that ignores a newer lease generation, and a scale-up request never sent again while a
run waits (the sweep drives one run, and the lost request needs two asking at once).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[4]
SWEEPS = ["tests/jobs/head/sim/test_simulation.py", "tests/jobs/head/sim/test_on_demand.py"]


def copy_tree(dest: Path) -> None:
    """The tracked files (and new ones not ignored), as they are in the working tree."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=REPO,
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    for raw in listed:
        rel = raw.decode()
        src = REPO / rel
        if rel and src.is_file() and not src.is_symlink():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def kill(patch: Path, schedules: int) -> bool:
    """True when the sweep fails with the mutant applied (it is killed)."""
    with tempfile.TemporaryDirectory(prefix=f"mutant-{patch.stem}-") as tmp:
        root = Path(tmp)
        copy_tree(root)
        subprocess.run(["patch", "-s", "-p1", "-i", str(patch)], cwd=root, check=True)
        env = {
            **os.environ,
            "PYTHONPATH": str(root),
            "PYTHONDONTWRITEBYTECODE": "1",
            "SIM_SCHEDULES": str(schedules),
            "SIM_ON_DEMAND_SCHEDULES": str(min(schedules, 1000)),
        }
        cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider"]
        cmd += ["-k", "keep_every_invariant", *SWEEPS]
        done = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
        killed = done.returncode == 1
        lines = done.stdout.splitlines()
        replay = [line for line in lines if "replay with" in line or "Failed:" in line]
        print(f"{patch.stem}: {'killed' if killed else 'SURVIVED'} (pytest exit {done.returncode})")
        for line in replay[:2]:
            print(f"    {line.strip()[:300]}")
        if done.returncode not in (0, 1):
            print(done.stdout[-3000:], done.stderr[-3000:], sep="\n")
        return killed


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=5000, help="seeds of the sweep")
    parser.add_argument("--survivors", action="store_true", help="try survivors/ instead")
    parser.add_argument("names", nargs="*", help="patches to try (default: all)")
    args = parser.parse_args(argv)
    patches = sorted((HERE / "survivors" if args.survivors else HERE).glob("*.patch"))
    if args.names:
        patches = [p for p in patches if p.stem in args.names]
    survived = [p.stem for p in patches if not kill(p, args.schedules)]
    print(f"{len(patches) - len(survived)} of {len(patches)} mutants killed")
    if survived:
        print(f"survived: {', '.join(survived)}")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
