"""NeMo RL's one-time HF -> Megatron conversion: done once, marked complete, a partial one never reused.

NeMo RL v0.4.0 skips the conversion whenever `<dir>/iter_0000000` exists
(megatron_policy_worker.py L494-508), so a conversion stopped half-way (a preempted node) would be
loaded by every later attempt. Here the conversion writes into a hidden sibling directory that
NeMo RL never looks at, our marker is written into it last, and only then is it renamed into
place: the directory NeMo RL reads exists only when complete.

A directory there without our marker is NeMo RL's own in-run import. Megatron-Bridge (the
submodule NeMo RL v0.4.0 pins, 62f4704, src/megatron/bridge/training/checkpointing.py L592-623)
writes the sharded weights, waits on a barrier, and only then has rank 0 write the train state
and, last, `iter_0000000/run_config.yaml`, which NeMo RL refuses to load without
(megatron_policy_worker.py L521-532 @v0.4.0). So an import whose run_config.yaml parses, with
its `model` section, and was written after the staged commit was staged, is a complete import
of that commit: it is marked and reused (without the mark, every attempt re-imported). Anything
else there (cut short, or older than the staged commit) is moved aside and removed, and the
conversion is done again.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import yaml

from jobs.staging import layout, record
from jobs.staging.download import Say, StageError

State = Literal["absent", "complete", "partial"]
# Runs the converter into the directory it is given; returns its exit code.
Converter = Callable[[Path], int]


def _marked_commit(target: Path) -> str | None:
    try:
        data = json.loads((target / layout.CONVERTED_MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return str(data.get("commit", "")) if isinstance(data, dict) else None


def state(target: Path, commit: str | None = None) -> State:
    """Complete needs our marker (of `commit`, when given: a conversion of another
    commit of the model is as unusable as a partial one)."""
    if not target.exists():
        return "absent"
    marked = _marked_commit(target)
    complete = marked is not None and (target / layout.MEGATRON_ITERATION).is_dir()
    if complete and commit is not None and marked != commit:
        complete = False
    return "complete" if complete else "partial"


RUN_CONFIG = "run_config.yaml"


def in_run_import_time(target: Path) -> float | None:
    """When NeMo RL's in-run import of `target` completed (its run_config.yaml's mtime), or None
    when that file is absent, unreadable, or not the mapping with a `model` section NeMo RL reads
    (a write cut short). A cut that ends between two lines still parses: the residual risk of
    Megatron-Bridge's unsynced `open(...).write`, which NeMo RL itself would load the same way."""
    path = target / layout.MEGATRON_ITERATION / RUN_CONFIG
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        written = path.stat().st_mtime
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    return written if isinstance(loaded, dict) and isinstance(loaded.get("model"), dict) else None


def adopt(target: Path, model: str, commit: str, staged_since: float, say: Say) -> bool:
    """Mark an unmarked, complete in-run import of `commit` (written since `staged_since`, the
    epoch second the commit was staged) as ours; False when it is not one."""
    done = in_run_import_time(target)
    if done is None or int(done) < int(staged_since) or _marked_commit(target) is not None:
        return False
    record.write_atomic(
        target / layout.CONVERTED_MARKER,
        {
            "model": model,
            "commit": commit,
            "converted_at": record.now(),
            "by": "nemo-rl in-run import",
        },
    )
    say(
        f"{target}: NeMo RL's own import of {model} completed ({RUN_CONFIG} written last, after "
        f"commit {commit} was staged): marked complete and reused"
    )
    return True


def discard(target: Path, say: Say) -> None:
    """Move `target` aside in one rename (no reader sees it half-deleted), then delete it."""
    aside = target.with_name(f".{target.name}.discarded-{time.time_ns()}")
    os.replace(target, aside)
    try:
        shutil.rmtree(aside)
    except OSError as e:
        say(f"warning: could not delete {aside} ({e}); it is out of the way, remove it by hand")


def guard(
    target: Path,
    say: Say,
    commit: str | None = None,
    staged: tuple[str, float] | None = None,
) -> State:
    """At an attempt's start: a complete in-run import of the staged commit (`staged`: the model
    and the epoch second its commit was staged) is adopted; any other partial conversion is
    removed so NeMo RL converts again."""
    found = state(target, commit)
    if (
        found == "partial"
        and commit
        and staged
        and adopt(target, staged[0], commit, staged[1], say)
    ):
        return "complete"
    if found == "partial":
        say(
            f"{target} has no completion marker ({layout.CONVERTED_MARKER}) for the staged "
            "commit: a conversion that may have stopped half-way, or of another commit; "
            "removed, NeMo RL converts again in this attempt"
        )
        discard(target, say)
    return found


def convert(target: Path, model: str, commit: str, converter: Converter, say: Say) -> State:
    """Make `target` a complete conversion of `model`; returns what was there before."""
    found = state(target, commit)
    if found == "complete":
        say(f"Megatron conversion of {model} already complete at {target}: reused")
        return found
    if found == "partial":
        say(
            f"{target} is a partial conversion or one of another commit (no "
            f"{layout.CONVERTED_MARKER} for {commit}): redone"
        )
        discard(target, say)
    work = target.with_name(f".{target.name}.converting")
    if work.exists():
        discard(work, say)
    work.parent.mkdir(parents=True, exist_ok=True)
    say(
        f"converting {model} for Megatron into {target} (one time; a 70B model takes tens of "
        "minutes)"
    )
    code = converter(work)
    if code != 0 or not (work / layout.MEGATRON_ITERATION).is_dir():
        if work.exists():
            discard(work, say)
        raise StageError(
            f"the Megatron conversion of {model} failed (exit {code}); nothing "
            f"was left at {target}; run the stage again"
        )
    record.write_atomic(
        work / layout.CONVERTED_MARKER,
        {"model": model, "commit": commit, "converted_at": record.now()},
    )
    os.replace(work, target)
    say(f"converted {model} for Megatron: {target}")
    return found
