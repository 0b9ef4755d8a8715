"""A run's checkpoints as the head sees them: each step's folder, complete or not, its size, and the step a resume or an export takes.

`rl-jobs checkpoints RUN` submits `python -m jobs.head.list_checkpoints DIR --framework F` as a
small job on the head (the CLI reaches the cluster only through the Jobs API, never Lustre) and
reads the one line it prints, `JOBS-CHECKPOINTS {json}`. Completion is jobs/head/checkpoints.py's
rule, the one the supervisor, pruning and export use. What a resume takes is the framework's own
choice: NeMo RL the highest `step_N` (nemo_rl/utils/checkpoint.py `get_latest_checkpoint_path`
at v0.4.0), veRL the step its tracker names (`find_latest_ckpt_path`, checkpoint_manager.py at
0.6.0), which may be one without weights; that is said, never hidden.
Standard library only: it runs on the Ray head.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from jobs.head import checkpoints

PREFIX = "JOBS-CHECKPOINTS "


def _bytes(folder: Path) -> int:
    """Bytes of the regular files under `folder`, symlinks not followed."""
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if not os.path.islink(os.path.join(root, name)):
                total += st.st_size
    return total


def inventory(framework: str | None, checkpoint_dir: Path) -> dict[str, Any]:
    """Every numbered checkpoint folder in `checkpoint_dir` with its completeness and size, the
    half-written ones, and the steps a resume and an export would take (None: none)."""
    out: dict[str, Any] = {
        "dir": str(checkpoint_dir),
        "exists": checkpoint_dir.is_dir(),
        "framework": framework,
        "checkpoints": [],
        "half_written": [],
        "resume_step": None,
        "export_step": None,
    }
    if not out["exists"]:
        return out
    complete = checkpoints.complete_steps(framework, checkpoint_dir)
    patterns = {
        "nemo-rl": (checkpoints.NEMO_STEP,),
        "verl": (checkpoints.VERL_STEP,),
        None: (checkpoints.NEMO_STEP, checkpoints.VERL_STEP),
    }[framework]
    found: dict[int, Path] = {}
    for pattern in patterns:
        found.update(checkpoints.numbered(checkpoint_dir, pattern))
    out["checkpoints"] = [
        {"step": n, "folder": found[n].name, "complete": n in complete, "bytes": _bytes(found[n])}
        for n in sorted(found)
    ]
    out["half_written"] = checkpoints.half_written(checkpoint_dir)
    out["export_step"] = max(complete) if complete else None
    if framework == "verl":
        out["resume_step"] = checkpoints.verl_tracker(checkpoint_dir)
    else:
        out["resume_step"] = max(complete) if complete else None
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jobs.head.list_checkpoints", description=__doc__.splitlines()[0]
    )
    parser.add_argument("dir", help="the run's checkpoint directory, as the head sees it")
    parser.add_argument("--framework", choices=["nemo-rl", "verl"], default=None)
    args = parser.parse_args(argv)
    print(PREFIX + json.dumps(inventory(args.framework, Path(args.dir))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
