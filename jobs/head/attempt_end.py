"""An attempt's end: the facts gathered and recorded when it ends, and the judgement of a failure
as a preemption once Ray's node table shows a node lost during it.

What the facts mean (progress, a node-end stop, the death window) is jobs/head/restart_policy.py's;
this module gathers them and writes the records. Standard library and Ray only: this runs on the
Ray head inside the framework's image.
"""

from __future__ import annotations

import http.client
from dataclasses import replace
from typing import TYPE_CHECKING

from jobs.client import errors
from jobs.head import checkpoints, node_events, progress
from jobs.head import events as ev
from jobs.head import restart_policy as policy
from jobs.head.restart_policy import Situation
from jobs.head.run_state import RunState

if TYPE_CHECKING:
    from jobs.head.supervisor_port import SupervisorPort

_CHECKPOINT_NEWS = {
    None: "no earlier failure to compare checkpoints with",
    True: "new checkpoint since the previous failure",
    False: "no new checkpoint since the previous failure",
}


def record_end(
    sup: SupervisorPort, state: RunState, ended: str, for_node_end: bool | None = None
) -> None:
    """Record how the attempt ended; the judgement (preemption or not) comes in `judge`.
    `for_node_end`: the attempt stopped after saving before its flex-start nodes' end (read
    from its log when None); the run goes on as after a preemption."""
    job_id, spec = state.current or "", sup.spec
    if for_node_end is None:
        for_node_end = sup.cluster.stopped_for_node_end(job_id, ended)
    # Watching ends with the record below: an error before it (the dashboard answering
    # badly while the end is read) is retried from the attempt's end, never skips it.
    state.charged = False
    state.ended_ms = int(sup.clock.time() * 1000)
    state.hosts = sup.cluster.hosts(job_id)
    state.ended_at = sup.clock.monotonic()
    state.end_entries = checkpoints.entries(spec.checkpoint_dir)
    new_ckpt = policy.new_checkpoint(state.end_entries, state.baseline, state.has_baseline)
    stepped = sup.cluster.steps(job_id)
    state.own_progress = policy.own_progress(new_ckpt, stepped)
    gpus, _ = sup.cluster.observe()
    # What its workers had, kept from the last attempt that reached a GPU node (one that failed
    # at placement reached none).
    state.gpus_used = node_events.gpus_on(sup.cluster.nodes, state.hosts) or state.gpus_used
    needed = policy.gpus_to_wait_for(spec.gpus_needed, state.gpus_used)
    failure = None if for_node_end else read_failure(sup, job_id, ended)
    state.failure = failure
    exit_code = None if failure is None else failure[0]
    keep_progress(sup, job_id)
    sup.record(
        ev.ATTEMPT_ENDED,
        _end_message(job_id, ended, for_node_end, exit_code, (gpus, needed), new_ckpt, stepped),
        attempt=state.attempt,
        submission_id=job_id,
        status=ended,
        gpus=gpus,
        new_checkpoint=new_ckpt,
        steps_completed=stepped,
        ended_ms=state.ended_ms,
        exit_code=exit_code,
        last_step=_last_step(sup, job_id),
        last_exception=None if failure is None else failure[1] or None,
        gpus_used=state.gpus_used,
        **({"saved_for_node_end": True} if for_node_end else {}),
    )
    state.watching = False
    state.situation = Situation(
        ended=policy.policy_end(ended, for_node_end),  # type: ignore[arg-type]
        restarts_used=state.restarts,
        max_restarts=spec.max_restarts,
        gpus_needed=needed,
        gpus_at_end=gpus,
        gpus_now=gpus,
        progressed=policy.progressed(state.own_progress, state.prev_progressed),
        max_wait_s=spec.capacity_deadline_s,
        preemptions_used=state.preemptions,
        max_preemptions=spec.max_preemptions,
        settle_s=sup.config.settle_s,
        stepped=stepped > 0,
        preempted=for_node_end,
        exit_code=exit_code,
        same_failure=policy.same_failure(failure, state.prev_failure),
    )


def _end_message(
    job_id: str,
    ended: str,
    for_node_end: bool,
    exit_code: int | None,
    capacity_now: tuple[float, int],
    new_ckpt: bool | None,
    stepped: int,
) -> str:
    gpus, needed = capacity_now
    # "2 of 1 GPUs" read as a count out of a total: the GPUs there, then the need.
    capacity = f"; the cluster has {gpus:g} GPUs ({needed} needed)" if needed > 0 else ""
    ckpt = _CHECKPOINT_NEWS[new_ckpt]
    if stepped:
        ckpt += f"; {stepped} training step(s) completed"
    why = (
        ": it saved and stopped before its flex-start nodes reach their maximum run "
        "duration; the run goes on on new nodes (counted as a preemption)"
        if for_node_end
        else ("" if exit_code is None else f" (exit code {exit_code})")
    )
    return f"{job_id} {ended}{why}{capacity}; {ckpt}"


def keep_progress(sup: SupervisorPort, job_id: str) -> None:
    """The attempt's step lines beside its record, for its goodput after the head is gone, and
    while it runs: a spot reclaim takes the log of a driver on a GPU node with the node, so what
    is kept at the end alone would be nothing. Best effort: the record is what the run needs."""
    if sup.store is None:
        return
    try:
        lines = sup.probes.progress_lines(job_id)
        if lines and lines != sup.store.progress(job_id):
            sup.store.keep_progress(job_id, lines)
    except (OSError, RuntimeError, ValueError, http.client.HTTPException):
        pass


def _last_step(sup: SupervisorPort, job_id: str) -> int | None:
    """The highest step the attempt logged, from its kept step lines (its log may have gone
    with its node): on the record, so every view of the run tells the step it reached, the
    cluster's too, when the attempt's own log cannot be read."""
    try:
        text = sup.store.progress(job_id) if sup.store is not None else ""
        text = text or sup.probes.progress_lines(job_id)
    except (OSError, RuntimeError, ValueError, http.client.HTTPException):
        return None
    return max(progress.steps_seen(text), default=None)


def learn_gpus_used(sup: SupervisorPort, state: RunState) -> bool:
    """While the attempt runs: the GPUs of the nodes its workers reached, recorded when they
    are more than the run knew (its end may never be seen here: a head lost with it). True
    once learnt for this attempt."""
    used = node_events.gpus_on(sup.cluster.nodes, sup.cluster.hosts(state.current or ""))
    if used <= 0:
        return False
    if used != state.gpus_used and used > sup.spec.gpus_needed:
        sup.record(
            ev.GPUS_USED,
            f"{state.current}'s workers run on nodes with {used} GPUs (the run declares "
            f"{sup.spec.gpus_needed}): after a preemption the next attempt waits for them",
            submission_id=state.current,
            gpus_used=used,
        )
    state.gpus_used = used
    return True


# How many times an ended attempt's job record is read before its failure counts as unknown.
FAILURE_READS = 3


def read_failure(sup: SupervisorPort, job_id: str, ended: str) -> policy.Failure | None:
    """A FAILED attempt's driver exit code and the last exception of its log, when Ray has them
    (None when the dashboard cannot say: the failure is then never one of a crash's two).

    A read that failed is tried again, a poll period apart: an unknown failure also erases the
    one the next failure is compared with, so one dashboard error under load (an HTTP 500, a
    timeout) turned a bad config's two attempts into four. A job Ray no longer has is not read
    again."""
    if ended != "FAILED":
        return None
    for reads_left in reversed(range(FAILURE_READS)):
        try:
            info = sup.client.get_job_info(job_id)
            break
        except (RuntimeError, OSError, ValueError, http.client.HTTPException) as e:
            if reads_left == 0 or errors.is_not_found(e) or sup.pause(sup.config.poll_s):
                return None
    code = info.driver_exit_code
    message = info.message if isinstance(info.message, str) else None
    return (code if isinstance(code, int) else None, policy.last_exception(message))


def judge(sup: SupervisorPort, state: RunState) -> Situation:
    """The ended attempt's situation, preempted once Ray's node table shows a node lost
    during it (recorded once)."""
    s = state.situation
    assert s is not None
    if not policy.needs_node_check(s):
        return s
    now_ms = int(sup.clock.time() * 1000)
    deaths = node_events.deaths_during(
        sup.cluster.nodes,
        state.started_ms,
        policy.death_window_end_ms(state.ended_ms, sup.config.settle_s, now_ms),
        sup.spec.gpus_needed,
        state.hosts,
    )
    if deaths:
        s = state.situation = replace(s, preempted=True)
        sup.record(
            ev.PREEMPTED,
            f"{state.current} preempted: "
            + "; ".join(d.describe() for d in deaths)
            + f" (preemption {state.preemptions + 1} of "
            f"{sup.spec.max_preemptions}; not counted as a restart)",
            attempt=state.attempt,
            submission_id=state.current,
            nodes=[d.node_id for d in deaths],
        )
    return s
