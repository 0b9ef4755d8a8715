"""Checkpoint hygiene between attempts: which checkpoints are complete, and pruning beyond keep-N.

Completion is each framework's own marker, never the folder's mere existence:
- NeMo RL v0.4.0 saves into `tmp_step_N` and renames it to `step_N` when complete
  (nemo_rl/utils/checkpoint.py L109-179, `init_tmp_checkpoint` / `finalize_checkpoint`; a
  replaced step is `old_step_N` for a moment);
- veRL 0.6.0 writes `global_step_N/` and then, as the save's last act,
  `latest_checkpointed_iteration.txt` = N (verl/trainer/ppo/ray_trainer.py L819-824); its
  resume reads that file, so a `global_step_N` above it is half-written.
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
import re
import shutil

NEMO_STEP = re.compile(r"^step_(?P<n>[0-9]+)$")
NEMO_PARTIAL = re.compile(r"^(tmp|old)_step_[0-9]+$")
VERL_STEP = re.compile(r"^global_step_(?P<n>[0-9]+)$")
VERL_TRACKER = "latest_checkpointed_iteration.txt"


def _tracker(directory: str) -> int | None:
    try:
        with open(os.path.join(directory, VERL_TRACKER)) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def complete_steps(directory: str) -> dict[int, str]:
    """step -> folder name of every complete checkpoint (NeMo RL or veRL layout)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return {}
    tracker = _tracker(directory)
    out = {}
    for n in names:
        if (m := NEMO_STEP.match(n)) and os.path.isdir(os.path.join(directory, n)):
            out[int(m["n"])] = n
        elif (m := VERL_STEP.match(n)) and tracker is not None and int(m["n"]) <= tracker:
            out[int(m["n"])] = n
    return out


def half_written(directory: str) -> list[str]:
    """Leftovers of saves that never finished: NeMo RL tmp_/old_step_N, veRL global_step_N
    above its tracker (only when the tracker exists: without it nothing is judged)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    tracker = _tracker(directory)
    out = [n for n in names if NEMO_PARTIAL.match(n)]
    if tracker is not None:
        out += [n for n in names if (m := VERL_STEP.match(n)) and int(m["n"]) > tracker]
    return sorted(out)


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
