"""The simulation's mutation test: each planted bug (a patch here) must fail the seeded sweep.

`python tests/jobs/head/sim/mutants/kill.py [--schedules N] [NAME ...]` (`make test-mutants`)
copies this checkout's tracked files as they are on disk into a temporary folder, applies one
patch there, and runs the fault sweeps (tests/jobs/head/sim/, static and on-demand GPUs) against
the copy, stopping at the first failing seed, whose replayable schedule it prints. A mutant the
sweep passes survived: the script says which and exits 1; so does a patch that no longer applies
to the code it was made against (it is reported as stale, and the other mutants still run). The
checkout itself is never changed.
`survivors/` is for planted bugs the sweep does not kill yet (`--survivors` tries them); none
is there now.
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


def _patch(patch: Path, root: Path, *extra: str) -> str | None:
    """Run patch(1) on the tree at `root`; None when it succeeded, else patch's own reason."""
    cmd = ["patch", "-s", "-p1", "--batch", "-i", str(patch), *extra]
    done = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    if done.returncode == 0:
        return None
    return (done.stdout + done.stderr).strip() or f"patch exited {done.returncode}"


def stale_reason(patch: Path, root: Path) -> str | None:
    """Why `patch` would not apply to the tree at `root` (None: it applies); nothing changes."""
    return _patch(patch, root, "--dry-run")


def apply(patch: Path, root: Path) -> str | None:
    """Apply `patch` to the tree at `root`; None when it applied, else patch's own reason (the
    tree is left unchanged: a dry run comes first, so no hunk lands half-way)."""
    return stale_reason(patch, root) or _patch(patch, root)


def kill(patch: Path, schedules: int) -> bool:
    """True when the sweep fails with the mutant applied (it is killed); False when it survives
    or its patch no longer applies (stale: it tests nothing until it is remade)."""
    with tempfile.TemporaryDirectory(prefix=f"mutant-{patch.stem}-") as tmp:
        root = Path(tmp)
        copy_tree(root)
        stale = apply(patch, root)
        if stale is not None:
            print(f"{patch.stem}: STALE (the patch no longer applies; remake it)")
            for line in stale.splitlines()[:5]:
                print(f"    {line[:300]}")
            return False
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
        print(f"survived or stale: {', '.join(survived)}")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
