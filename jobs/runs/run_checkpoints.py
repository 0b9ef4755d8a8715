"""`rl-jobs checkpoints RUN`: the run's checkpoint folders, read on the head by a small job (the CLI never reaches Lustre)."""

from __future__ import annotations

import json
import shlex
from typing import Any

from jobs.client.dashboard import Dashboard
from jobs.client.types import JobStatus
from jobs.common import commands
from jobs.common.errors import UsageError
from jobs.head import protocol
from jobs.head.list_checkpoints import PREFIX
from jobs.runs import follow, handoff, state
from jobs.runs.metadata import RecipeRun


def where_saved(found: state.Run | None, run: str, where: str) -> tuple[str, str | None]:
    """The run's checkpoint directory and framework (None: a `run` command's, either layout)."""
    if found is None:
        raise UsageError(
            f"no run named {run} on this cluster", f"see {commands.command('list', where=where)}"
        )
    recorded = RecipeRun.of_job(found.attempt_metadata())
    if recorded is not None and recorded.checkpoint_dir:
        return recorded.checkpoint_dir, recorded.framework
    for sup in reversed(found.supervisors):
        spec = state.spec_of(sup)
        if spec is not None and spec.checkpoint_dir:
            return spec.checkpoint_dir, None
    raise UsageError(
        f"run {run} records no checkpoint directory",
        "a recipe run records its own; a `run` command records one only when given "
        "--checkpoint-dir",
    )


def inventory(
    cluster: Dashboard,
    run: str,
    checkpoint_dir: str,
    framework: str | None,
    watcher: follow.Watcher,
) -> dict[str, Any]:
    """What jobs/head/list_checkpoints.py found in `checkpoint_dir` on the head."""
    flag = f" --framework {framework}" if framework else ""
    sid = handoff.submit_on_head(
        cluster,
        run,
        protocol.CHECKPOINTS,
        "ckpts",
        f"{protocol.CHECKPOINTS_MODULE} {shlex.quote(checkpoint_dir)}{flag}",
    )
    status = watcher.wait_for(sid, follow.terminal, "reading the checkpoints")
    log = cluster.logs(sid)
    found = [
        line[line.index(PREFIX) + len(PREFIX) :] for line in log.splitlines() if PREFIX in line
    ]
    if status != JobStatus.SUCCEEDED or not found:
        tail = " | ".join(log.strip().splitlines()[-3:])
        raise UsageError(
            f"could not read the checkpoints of run {run} ({sid} {status.value}): {tail}",
            f"see {commands.command('logs', sid)}",
        )
    return {"run": run, **json.loads(found[-1])}


def human_bytes(n: int) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def lines(view: dict[str, Any]) -> list[str]:
    """The human view: one line per checkpoint, then what a resume and an export take."""
    framework = view["framework"] or "either framework's layout"
    out = [f"checkpoints of run {view['run']} in {view['dir']} ({framework})"]
    if not view["exists"]:
        return [*out, "  the directory does not exist on the head: no checkpoint was saved yet"]
    if not view["checkpoints"]:
        out.append("  no checkpoint folder yet")
    for c in view["checkpoints"]:
        marks = [
            m
            for m, step in (("resume", view["resume_step"]), ("export", view["export_step"]))
            if step == c["step"]
        ]
        state_ = "complete" if c["complete"] else "incomplete"
        out.append(
            f"  step {c['step']:>6}  {state_:<10}  {human_bytes(c['bytes']):>10}  {c['folder']}"
            + (f"  <- {', '.join(marks)}" if marks else "")
        )
    for name in view["half_written"]:
        out.append(f"  {name}: being written or left by a cut save (never resumed from)")
    resume, export = view["resume_step"], view["export_step"]
    complete = {c["step"] for c in view["checkpoints"] if c["complete"]}
    if resume is not None and resume not in complete:
        out.append(
            f"  resume would take step {resume}, which is not complete: veRL's tracker names it "
            "(the supervisor's hygiene points the tracker back before a resume)"
        )
    out.append(
        f"  resume takes: {'step ' + str(resume) if resume is not None else 'nothing (starts over)'}"
        f"; export takes: {'step ' + str(export) if export is not None else 'nothing yet'}"
    )
    return out
