"""Checkpoint hygiene between attempts: pruning complete checkpoints beyond keep-N.

Which checkpoints are complete is jobs/head/checkpoints.py's one rule (the supervisor and export
read the same one): each framework's own marker, never the folder's mere existence.
veRL's own "keep the newest N" list lives in the trainer's memory
(verl/utils/checkpoint/checkpoint_manager.py L59, `previous_saved_paths = []`), so checkpoints of
earlier attempts are never pruned by it; NeMo RL's keep_top_k globs the folder and needs no help.
Between attempts (no attempt is writing) the supervisor prunes complete checkpoints beyond
keep-N, oldest first, never the newest complete one, plus the half-written leftovers of dead
attempts; never while an export of the run holds it (the export job is the hold).
Standard library only: it runs in the supervisor on the head.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from jobs.head import checkpoints

VERL_TRACKER = checkpoints.VERL_TRACKER


def complete_steps(directory: str) -> dict[int, str]:
    """step -> folder name of every complete checkpoint (jobs/head/checkpoints.py's one rule)."""
    return {n: p.name for n, p in checkpoints.complete_steps(None, Path(directory)).items()}


def half_written(directory: str) -> list[str]:
    return checkpoints.half_written(Path(directory))


def plan(directory: str, keep: int) -> list[str]:
    """What pruning to keep-N removes: complete checkpoints beyond the newest `keep`, oldest
    first (the newest complete one always stays), then half-written leftovers."""
    if keep <= 0:
        return []
    steps = complete_steps(directory)
    newest_first = sorted(steps, reverse=True)
    old = sorted(newest_first[max(keep, 1) :])
    return [steps[n] for n in old] + half_written(directory)


def prune(directory: str, keep: int, held: bool) -> list[str]:
    """Remove `plan(directory, keep)`; nothing while an export holds the run."""
    if held:
        return []
    removed = []
    for name in plan(directory, keep):
        path = os.path.join(directory, name)
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.exists(path):
            removed.append(name)
    return removed
