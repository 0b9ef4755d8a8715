"""NeMo RL's one-time HF -> Megatron conversion: done once, marked complete, a partial one never reused.

NeMo RL v0.4.0 skips the conversion whenever `<dir>/iter_0000000` exists
(megatron_policy_worker.py L494-508), so a conversion stopped half-way (a preempted node) would be
loaded by every later attempt. Here the conversion writes into a hidden sibling directory that
NeMo RL never looks at, our marker is written into it last, and only then is it renamed into
place: the directory NeMo RL reads exists only when complete. A directory there without our
marker (NeMo RL's own in-run conversion, which may have been cut short: nothing marks its end)
is never trusted: it is moved aside and removed, and the conversion is done again.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

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


def discard(target: Path, say: Say) -> None:
    """Move `target` aside in one rename (no reader sees it half-deleted), then delete it."""
    aside = target.with_name(f".{target.name}.discarded-{time.time_ns()}")
    os.replace(target, aside)
    try:
        shutil.rmtree(aside)
    except OSError as e:
        say(f"warning: could not delete {aside} ({e}); it is out of the way, remove it by hand")


def guard(target: Path, say: Say, commit: str | None = None) -> State:
    """At an attempt's start: a partial conversion is removed so NeMo RL converts again."""
    found = state(target, commit)
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
