"""Submitting a run's next attempt: waiting out an export that holds the run, pruning to keep-N,
the flex-start save before the nodes' end, and adopting an attempt already submitted whose
answer was lost.

Standard library and Ray only: this runs on the Ray head inside the framework's image.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jobs.client import errors
from jobs.head import events as ev
from jobs.head import hygiene, node_end, protocol, tracking
from jobs.head.restart_policy import Decision
from jobs.head.run_state import RunState

if TYPE_CHECKING:
    from jobs.head.supervisor_port import SupervisorPort

_STOPPED = object()  # a wait ended by a stop (SIGTERM) rather than by an answer


def submit(sup: SupervisorPort, attempt: int, wandb_id: str = "") -> str | None:
    """The attempt's id once Ray has it, or None when a stop came while the dashboard was
    away (nothing was submitted, so there is nothing to watch or stop)."""
    spec = sup.spec
    job_id = spec.attempt_id(attempt)
    meta = {**spec.metadata, "attempt": str(attempt), "supervisor": sup.own_id}
    entrypoint, runtime_env = _with_node_end(sup, job_id)
    if wandb_id:
        runtime_env = tracking.with_run_id(runtime_env, wandb_id)
    try:
        submitted = sup.retry(
            lambda: sup.client.submit_job(
                entrypoint=entrypoint,
                runtime_env=runtime_env,
                metadata=meta,
                submission_id=job_id,
                **spec.reservations(),
            )
        )
    except RuntimeError as e:
        if not errors.is_duplicate(e):
            raise
        submitted = job_id  # submitted before (a resubmit whose answer was lost)
    return None if submitted is None else job_id


def _with_node_end(sup: SupervisorPort, job_id: str) -> tuple[str, dict[str, Any]]:
    """The attempt's entrypoint and runtime env; on flex-start GPUs, with the save before the
    first of its nodes reaches its maximum run duration (jobs/head/node_end.py)."""
    spec = sup.spec
    if spec.node_max_run_s <= 0 or spec.save_before_node_end not in node_end.FRAMEWORKS:
        return spec.entrypoint, spec.runtime_env
    now = sup.clock.time()
    ends_at = node_end.nodes_end_at(sup.cluster.lasting_nodes(), spec.node_max_run_s, now)
    entrypoint, env, said = node_end.for_attempt(
        spec.save_before_node_end, spec.entrypoint, spec.runtime_env, ends_at, now
    )
    if said:
        sup.record(
            ev.SAVE_BEFORE_NODE_END,
            f"{job_id} saves before its flex-start nodes end: {said}",
            submission_id=job_id,
            nodes_end_at=round(ends_at, 1),
        )
    return entrypoint, env


def _export_hold(sup: SupervisorPort) -> str | None:
    """A live job of this run that reads one of its checkpoints: an export (`rl-jobs export`,
    metadata kind=export) or an eval (`rl-jobs eval`, kind=eval)."""
    jobs = sup.retry(sup.client.list_jobs) or []
    run = sup.spec.run
    live = [
        *protocol.live_job_ids(jobs, protocol.EXPORT, run),
        *protocol.live_job_ids(jobs, protocol.EVAL, run),
    ]
    return live[0] if live else None


def _between_attempts(sup: SupervisorPort, state: RunState) -> bool:
    """Wait while an export holds the run (no pruning, no attempt), then prune to keep-N;
    False when a stop came meanwhile."""
    noted = False
    while (holder := _export_hold(sup)) is not None:
        if not noted:
            noted = True
            sup.record(
                ev.HELD,
                f"{holder} is reading this run's checkpoints: no checkpoint is pruned "
                "and no attempt started until it ends",
                export=holder,
            )
        if sup.pause(sup.config.poll_s):
            return False
    spec = sup.spec
    if state.situation is not None and spec.keep > 0 and spec.checkpoint_dir:
        removed = hygiene.prune(spec.checkpoint_dir, spec.keep, held=False)
        if removed:
            sup.record(
                ev.PRUNED,
                f"pruned {', '.join(removed)} (keeps the newest "
                f"{spec.keep} complete checkpoint(s))",
                removed=removed,
            )
    return True


def _earlier_submit(sup: SupervisorPort, attempt: int) -> Any:
    """Ray's record of the attempt when it is already there (a submit whose answer was
    lost, then an error before the retry learnt it was taken), `_STOPPED` on a stop, else
    None (404: not submitted)."""
    job_id = sup.spec.attempt_id(attempt)
    try:
        info = sup.retry(lambda: sup.client.get_job_info(job_id))
    except RuntimeError as e:
        if not errors.is_not_found(e):
            raise
        return None
    return _STOPPED if info is None else info


def next_exists(sup: SupervisorPort, state: RunState) -> bool:
    """Ray already has the run's next attempt (submitted before an error hid it from us)."""
    found = _earlier_submit(sup, state.attempt + 1)
    return found is not None and found is not _STOPPED


def _submit_new(sup: SupervisorPort, state: RunState, attempt: int) -> tuple[str, int] | None:
    """Prune between attempts and submit: (its id, its start ms), or None on a stop."""
    if not _between_attempts(sup, state):
        return None
    try:
        submitted = submit(sup, attempt, state.wandb_id)
    except (RuntimeError, OSError) as e:
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        raise RuntimeError(
            f"Ray refused attempt {attempt}: {lines[-1] if lines else type(e).__name__}"
        ) from e
    if submitted is None:
        return None
    return submitted, int(sup.clock.time() * 1000)


def submit_next(sup: SupervisorPort, state: RunState, d: Decision) -> bool:
    """Submit (or adopt) the run's next attempt and record it; False on a stop."""
    attempt = state.attempt + 1
    # Found by the simulation (seeds 169, 244, 487): the attempt may be running already,
    # unknown to us; pruning "between attempts" would delete its save in progress, and
    # judging it from now would miss a node it lost before.
    earlier = _earlier_submit(sup, attempt)
    if earlier is _STOPPED:
        return False
    note = ""
    if earlier is not None:
        job_id = sup.spec.attempt_id(attempt)
        started_ms = int(earlier.start_time or sup.clock.time() * 1000)
        note = f"; it was submitted earlier ({earlier.status.value}), its answer was lost"
    else:
        new = _submit_new(sup, state, attempt)
        if new is None:
            return False
        job_id, started_ms = new
    state.attempt, state.current, state.watching = attempt, job_id, True
    state.started_ms = started_ms
    spent = []
    if state.restarts:
        spent.append(f"restart {state.restarts} of {sup.spec.max_restarts}")
    if state.preemptions:
        spent.append(f"preemption {state.preemptions} of {sup.spec.max_preemptions}")
    sup.record(
        ev.SUBMITTED,
        f"submitted {job_id} ({d.message})" + (f", {', '.join(spent)}" if spent else "") + note,
        attempt=attempt,
        submission_id=job_id,
        restarts_used=state.restarts,
        preemptions_used=state.preemptions,
        started_ms=state.started_ms,
        baseline=sorted(state.baseline),
        has_baseline=state.has_baseline,
        prev_progressed=state.prev_progressed,
        prev_failure=state.prev_failure,
        gpus_used=state.gpus_used,
        **({tracking.FIELD: state.wandb_id} if state.wandb_id else {}),
    )
    return True
