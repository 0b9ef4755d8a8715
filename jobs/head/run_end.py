"""How a supervised run's supervisor ends: the user's stop (its attempt stopped, the run's GPU
request released, "stopped" recorded), a SIGTERM that is no stop (the run left to the re-armer),
the run lost to another supervisor, and a finished or given-up run's last record (a finished
run's evaluation asked at its end sent after it, jobs/head/eval_at_end.py).

Every end returns the supervisor job's exit code, 0: it ended as designed. Standard library and
Ray only: this runs on the Ray head inside the framework's image.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jobs.head import attempt_end, eval_at_end
from jobs.head import events as ev
from jobs.head.restart_policy import Reason
from jobs.head.run_state import RunState

if TYPE_CHECKING:
    from jobs.head.supervisor_port import SupervisorPort


def user_stop(sup: SupervisorPort) -> bool:
    """The stop is the user's (`stop RUN`): without a run record nothing could re-arm the
    run, so any SIGTERM is final; with one, only a recorded stop request is (a head pod
    deleted by an upgrade sends SIGTERM too, and that run must be re-armed)."""
    if sup.store is None:
        return True
    return ev.stop_requested(sup.store.events())


def stopped(sup: SupervisorPort, state: RunState | None) -> int:
    """A stop (SIGTERM): the user's ends the run and stops its attempt; any other leaves both."""
    if not user_stop(sup):
        return interrupted(sup, state)
    said = ""
    current = state.current if state is not None else None
    if current is not None:
        try:
            status = sup.client.get_job_status(current)
            if not status.is_terminal():
                sup.client.stop_job(current)
                said = f"; {current} stopped"
        except (RuntimeError, OSError, ValueError):
            pass
        # Its step lines as they were at the stop: between two of the watch's rereads the runs
        # root holds an older step, and the run's record must say where it stopped.
        attempt_end.keep_progress(sup, current)
    _release_gpus(sup)  # before the final record: `list` shows the last one
    sup.record(
        ev.STOPPED,
        f"stopped by the user{said}; nothing is resubmitted",
        reason=Reason.STOPPED_BY_USER.value,
    )
    return 0


def interrupted(sup: SupervisorPort, state: RunState | None) -> int:
    """SIGTERM without a stop request: leave the attempt running and the run to the
    re-armer (the lease is released on the way out), record why, and never call it an end."""
    current = state.current if state is not None else None
    if current is not None:
        attempt_end.keep_progress(sup, current)
    sup.record(
        ev.INTERRUPTED,
        "the supervisor was terminated without a stop request (the head pod going "
        f"away?); {current or 'no attempt'} is left as it is and the run will be re-armed",
        submission_id=current,
    )
    return 0


def left(sup: SupervisorPort) -> int:
    """Another supervisor took the run's lease: it drives the run from here."""
    sup.record(
        ev.LEFT,
        "another supervisor took this run's lease (this one was thought "
        "gone); it drives the run from here",
        reason="lease_lost",
    )
    return 0


def _release_gpus(sup: SupervisorPort) -> None:
    if sup.gpus is not None:
        sup.gpus.release()


def ended(sup: SupervisorPort, event: str, message: str, **fields: Any) -> int:
    """The run's last record, after its GPU request is released (`list` shows the last)."""
    _release_gpus(sup)
    sup.record(event, message, **fields)
    return 0


def succeeded(sup: SupervisorPort, message: str, **fields: Any) -> int:
    """The run's success recorded, then the evaluation it asked for at its end sent (never
    undoing the success: a failure to send it is recorded beside it)."""
    code = ended(sup, ev.FINISHED, message, **fields)
    eval_at_end.queue(sup)
    return code
