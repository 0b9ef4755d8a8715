"""Restoring a run's state from its record when a supervisor starts: fresh from the spec, or,
after a re-arm, from the earlier supervisors' decisions in the run's current life.

The last submitted attempt is adopted when it is still on this cluster, taken as ended when the
record says how it ended, and counted as preempted with the head when Ray answers that it does
not know it (404); which of the three is jobs/head/restart_policy.py's `restored`. Standard
library and Ray only: this runs on the Ray head inside the framework's image.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from jobs.client import errors
from jobs.head import attempt_end, tracking
from jobs.head import events as ev
from jobs.head import restart_policy as policy
from jobs.head.restart_policy import Restored
from jobs.head.run_state import RunState

if TYPE_CHECKING:
    from jobs.head.supervisor_port import SupervisorPort


def _from_submitted(last: dict[str, Any]) -> RunState:
    """The state the last SUBMITTED record carries (its budgets and progress baseline)."""
    return RunState(
        attempt=int(last["attempt"]),
        restarts=int(last.get("restarts_used", 0)),
        preemptions=int(last.get("preemptions_used", 0)),
        current=str(last["submission_id"]),
        started_ms=int(last.get("started_ms", 0)),
        baseline=frozenset(last.get("baseline", [])),
        has_baseline=bool(last.get("has_baseline", False)),
        prev_progressed=last.get("prev_progressed"),
        prev_failure=_failure(last.get("prev_failure")),
    )


def _failure(kept: Any) -> policy.Failure | None:
    """A failure as the record keeps it (a JSON list), None when absent or not one."""
    if not isinstance(kept, list) or len(kept) != 2:
        return None
    code, exception = kept
    return (code if isinstance(code, int) else None, str(exception))


def restore(sup: SupervisorPort) -> RunState:
    """Where the run stands: fresh from the spec, or, when the run's current life (events.life)
    holds earlier supervisors' decisions (a re-arm), from their last attempt. Any failure to ask
    Ray other than a 404 is raised, never read as "lost": a second attempt must never start
    beside a live one. With `stop_requested` when the user asked the run to stop before this
    supervisor came (its last attempt is then stopped)."""
    every = sup.store.events() if sup.store is not None else []
    # The GPUs its attempts ran on are the run's shape, whichever life learnt them: a resume
    # into a stockout waits for them too.
    used = [int(r["gpus_used"]) for r in every if r.get("gpus_used")]
    state = _restore_life(sup, ev.life(every), used[-1] if used else 0)
    state.wandb_id = tracking.kept_id(every) or tracking.new_id()
    return state


def _restore_life(sup: SupervisorPort, recs: list[dict[str, Any]], gpus_used: int) -> RunState:
    """`restore` within the run's current life."""
    spec = sup.spec
    submitted = [r for r in recs if r.get("event") == ev.SUBMITTED]
    if ev.stop_requested(recs):
        last_id = str(submitted[-1]["submission_id"]) if submitted else None
        return RunState(attempt=spec.first_attempt - 1, current=last_id, stop_requested=True)
    if not submitted:
        return RunState(attempt=spec.first_attempt - 1, gpus_used=gpus_used)
    last = submitted[-1]
    state = _from_submitted(last)
    state.gpus_used = gpus_used
    after = recs[recs.index(last) + 1 :]
    ended = [r for r in after if r.get("event") == ev.ATTEMPT_ENDED]
    try:  # a dashboard still starting is waited for; a 404 is an answer
        status = sup.retry(lambda: sup.client.get_job_status(state.current))
    except RuntimeError as e:
        if not errors.is_not_found(e):
            raise
        status = None  # not on this cluster: the head (and the attempt) were lost
    if status is None and sup.stopping.is_set():
        return state  # a stop came while the dashboard was away: the drive ends the run
    stalled = any(r.get("event") == ev.STALLED for r in after)
    verdict = policy.restored(
        known=status is not None,
        terminal=status is not None and status.is_terminal(),
        end_recorded=bool(ended) or stalled,
    )
    if verdict == Restored.LIVE:
        assert status is not None
        state.watching = True  # watch returns at once when it has ended meanwhile
        sup.record(
            ev.ADOPTED,
            f"re-armed: took over {state.current} ({status.value}), "
            f"{state.restarts} restart(s) and {state.preemptions} preemption(s) used",
            attempt=state.attempt,
            submission_id=state.current,
        )
        return state
    _restore_end(sup, state, verdict, ended, after)
    return state


def _restore_end(
    sup: SupervisorPort,
    state: RunState,
    verdict: Restored,
    ended: list[dict[str, Any]],
    after: list[dict[str, Any]],
) -> None:
    """The restored attempt's end, as the record says it (or lost with the head); a loss with
    the head is recorded as a preemption."""
    last_end = ended[-1] if ended else None
    recorded = str(last_end["status"]) if last_end else None
    attempt_end.record_end(
        sup,
        state,
        policy.restored_end(verdict, recorded),
        policy.recorded_for_node_end(last_end),
    )
    preemption_recorded = any(r.get("event") == ev.PREEMPTED for r in after)
    if not policy.restored_preempted(verdict, bool(ended), preemption_recorded):
        return
    assert state.situation is not None  # record_end set it
    state.situation = replace(state.situation, preempted=True)
    if verdict == Restored.LOST_WITH_HEAD:
        sup.record(
            ev.PREEMPTED,
            f"{state.current} was lost with the cluster's head "
            "(not on this cluster any more); counted as a preemption",
            attempt=state.attempt,
            submission_id=state.current,
        )
