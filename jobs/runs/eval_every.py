"""`eval RUN --every K`: which of a run's saved steps to evaluate, and why each other one is skipped.

It evaluates what is saved when it is run: every complete checkpoint whose step is a multiple
of K and that has no result yet, one supervised eval per step (jobs/runs/evaluate.py
`supervise`). A step counts as scored, or as being scored, by the run's eval jobs on the cluster
(the CLI never reaches Lustre): a succeeded eval of the step with the same metric, k and n, one
still running, or an eval supervisor still holding one. Run it again (during the run, or after
it) and it takes only the saves that came since.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from jobs.client.dashboard import Dashboard
from jobs.client.types import JobDetails, JobStatus, Submission
from jobs.common.errors import UsageError
from jobs.head import protocol
from jobs.recipes import evals, reward_placement
from jobs.runs import address, evaluate, follow, listing, plan, run_checkpoints, state


def check_flags(every: int | None, step: int | None, base: bool, follow_logs: bool) -> None:
    """`--every` alone chooses the steps: refused with a step, the base model or a follow."""
    if every is None:
        return
    if every < 1:
        raise UsageError(
            f"--every {every}: the step interval must be a whole number of at least 1",
            "e.g. --every 100 evaluates steps 100, 200, ... that are saved and not yet scored",
        )
    given = [f for f, on in (("--step", step is not None), ("--base", base)) if on]
    if follow_logs:
        given.append("--follow")
    if given:
        raise UsageError(
            f"--every {every} with {' and '.join(given)}: --every chooses the steps itself",
            "give --every K alone, or --step N (or --base) without --every"
            + ("; follow each eval with `logs RUN-eval-N-s1 --follow`" if follow_logs else ""),
        )


def select(complete: Iterable[int], evaluated: Iterable[int], every: int) -> list[int]:
    """The steps to evaluate, oldest first: complete, a multiple of `every`, not yet evaluated.
    The newest complete step is not added when it is no multiple: the interval is the user's
    (`eval RUN` alone takes the newest)."""
    if every < 1:
        raise ValueError(f"every must be at least 1, not {every}")
    done = set(evaluated)
    return sorted(s for s in set(complete) if s % every == 0 and s not in done)


def _same_question(meta: dict[str, str], req: evals.Request) -> bool:
    return (meta.get("metric"), meta.get("k"), meta.get("n")) == (
        req.metric,
        str(req.k),
        str(req.n),
    )


def _step_of(meta: dict[str, str]) -> int | None:
    raw = meta.get("step", "")
    return int(raw) if raw.isdigit() else None


def evaluated(jobs: Sequence[JobDetails], run: str, req: evals.Request) -> dict[int, str]:
    """The run's steps already scored or being scored like `req` (same metric, k and n), each
    with the job that says so: a succeeded eval, one not ended, or a live eval supervisor
    (which may be waiting for GPUs before its first try)."""
    found: dict[int, str] = {}
    for job in jobs:
        meta = job.metadata or {}
        sid = job.submission_id or "?"
        if meta.get("kind") == protocol.EVAL and meta.get("run") == run:
            step = _step_of(meta)
            if step is None or not _same_question(meta, req):
                continue
            if job.status == JobStatus.SUCCEEDED:
                found[step] = f"already evaluated by {sid}"
            elif not job.status.is_terminal():
                found.setdefault(step, f"being evaluated by {sid}")
        elif listing.is_supervisor(job) and not job.status.is_terminal():
            spec = state.spec_of(job)
            inner = spec.metadata if spec is not None else {}
            step = _step_of(inner)
            if (
                inner.get("kind") == protocol.EVAL
                and inner.get("run") == run
                and step is not None
                and _same_question(inner, req)
            ):
                found.setdefault(step, f"queued under {sid}")
    return found


@dataclass(frozen=True)
class Plan:
    """The evals to send (step, job) and every other complete step with why it is skipped."""

    queued: list[tuple[int, Submission]]
    skipped: list[tuple[int, str]]
    notes: list[str]
    gpus: int


def skipped(
    complete: list[int], chosen: list[int], done: dict[int, str], every: int
) -> list[tuple[int, str]]:
    return [
        (s, done.get(s) or f"not a multiple of {every}") for s in complete if s not in set(chosen)
    ]


def nothing_left(run: str, every: int, complete: list[int], done: dict[int, str]) -> UsageError:
    listed = ", ".join(map(str, complete)) or "none"
    scored = ", ".join(f"{s} ({why})" for s, why in sorted(done.items())) or "none"
    return UsageError(
        f"--every {every}: nothing to evaluate for run {run}: complete steps: {listed}; "
        f"with a result or an eval under way: {scored}",
        "wait for the next save that is a multiple of the interval, or choose another --every",
    )


def prepare(
    dashboard: Dashboard,
    ask: evaluate.Ask,
    every: int,
    where: address.Where,
    watcher: follow.Watcher,
) -> Plan:
    """The evals `--every` sends, each refusal said before anything is submitted (the same as
    `eval RUN --step N`'s: the run and its recipe, its held-out split, the sandbox, the
    framework's composition of each evaluation)."""
    flags = "" if where.source == "RAY_ADDRESS" else f" {where.describe()}"
    recipe, recorded, number = evaluate.recorded_run(dashboard, ask.run, flags)
    evals.held_out(recipe)
    sandbox = reward_placement.decide(
        recipe, where.outputs(), ask.allow_unsandboxed, where.describe(), dry_run=ask.dry_run
    )
    view: dict[str, Any] = run_checkpoints.inventory(
        dashboard, ask.run, recorded.checkpoint_dir, recorded.framework, watcher
    )
    complete = sorted(int(c["step"]) for c in view.get("checkpoints", []) if c["complete"])
    done = evaluated(dashboard.jobs(), ask.run, ask.req)
    chosen = select(complete, done, every)
    if not chosen:
        raise nothing_left(ask.run, every, complete, done)
    commit = plan.git_commit()
    queued = [
        (
            step,
            evaluate.for_run(
                recipe,
                recorded,
                ask.req,
                evaluate.Target(step, ask.runs_root),
                number + i,
                where.stack,
                commit,
                sandbox.url,
            ),
        )
        for i, step in enumerate(chosen)
    ]
    return Plan(
        queued,
        skipped(complete, chosen, done, every),
        sandbox.notes,
        recorded.nodes * recorded.gpus_per_node,
    )
