"""The restart rules of a supervised run: resubmit, wait for capacity, or give up (pure, no I/O).

The supervisor (jobs/head/supervisor.py) gathers the facts (how the attempt ended, the GPUs the
cluster reports, whether the checkpoint directory gained an entry) and asks `decide` what to do;
it never decides anything itself. Why the rules are what they are (reference
grpo-jobs-and-ray.md §8, "Capacity after a spot preemption"): NeMo RL gives up on placement
groups after about a minute and veRL at once when GPUs are missing, while a replacement spot
node takes minutes, so a resubmit before the GPUs are back burns a restart; and a failure with
every GPU present and no new checkpoint since the previous attempt is a crash in the code or
config, which a restart repeats after a full model load.

Standard library only: this module runs on the Ray head inside the framework's image.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Literal

AttemptEnd = Literal["SUCCEEDED", "FAILED", "STOPPED"]


class Action(str, Enum):
    SUBMIT = "submit"  # submit the next attempt now
    WAIT = "wait"  # wait for capacity, then ask again
    FINISH = "finish"  # the run succeeded
    GIVE_UP = "give_up"  # the run ends without another attempt


class Reason(str, Enum):
    """Why: a stable code for scripts (`status --json`), with the sentence in Decision.message."""

    CAPACITY = "capacity"  # GPUs are there (or none needed)
    NO_CAPACITY = "no_capacity"  # fewer GPUs than the run needs
    SUCCEEDED = "succeeded"
    STOPPED_BY_USER = "stopped_by_user"  # `stop RUN`: the supervisor itself was stopped
    ATTEMPT_STOPPED = "attempt_stopped"  # the attempt was STOPPED: never restarted
    RESTARTS_EXHAUSTED = "restarts_exhausted"
    CRASH = "crash"  # failed with every GPU present and no new checkpoint since the previous one
    WAIT_TIMEOUT = "wait_timeout"  # the GPUs did not come back within the bounded wait


@dataclass(frozen=True)
class Situation:
    """What the supervisor knows when it asks.

    `ended` is None before the run's first attempt of this supervisor (nothing ended yet).
    `gpus_at_end` is what the cluster reported when the attempt ended (confirmed after a settle
    time, see jobs/head/supervisor.py); `gpus_now` is what it reports now (they differ while waiting).
    `progressed` says whether the checkpoint directory gained an entry during the attempt that
    ended: None when there is no previous attempt to compare with (the run's first attempt).
    """

    ended: AttemptEnd | None
    restarts_used: int
    max_restarts: int
    gpus_needed: int
    gpus_at_end: float
    gpus_now: float
    progressed: bool | None
    stop_requested: bool = False
    waited_s: float = 0.0
    max_wait_s: float = 1800.0


@dataclass(frozen=True)
class Decision:
    action: Action
    reason: Reason
    message: str


def _has(gpus: float, needed: int) -> bool:
    return needed <= 0 or gpus >= needed


def is_crash(s: Situation) -> bool:
    """Failed with every GPU present and no new checkpoint since the previous attempt."""
    return s.ended == "FAILED" and _has(s.gpus_at_end, s.gpus_needed) and s.progressed is False


def decide(s: Situation) -> Decision:
    if s.stop_requested:
        return Decision(Action.GIVE_UP, Reason.STOPPED_BY_USER,
                        "stopped by the user; no attempt is submitted after a stop")
    if s.ended == "SUCCEEDED":
        return Decision(Action.FINISH, Reason.SUCCEEDED, "the attempt succeeded")
    if s.ended == "STOPPED":
        return Decision(Action.GIVE_UP, Reason.ATTEMPT_STOPPED,
                        "the attempt was stopped; a stopped attempt is never restarted")
    if s.ended == "FAILED":
        if s.restarts_used >= s.max_restarts:
            return Decision(Action.GIVE_UP, Reason.RESTARTS_EXHAUSTED,
                            f"restarts exhausted ({s.restarts_used} of {s.max_restarts} used)")
        if is_crash(s):
            return Decision(Action.GIVE_UP, Reason.CRASH,
                            f"crash, not a preemption: the attempt failed with every GPU present "
                            f"({s.gpus_at_end:g} of {s.gpus_needed} needed) and no new checkpoint "
                            "since the previous attempt; it is not retried again")
    if not _has(s.gpus_now, s.gpus_needed):
        if s.waited_s >= s.max_wait_s:
            return Decision(Action.GIVE_UP, Reason.WAIT_TIMEOUT,
                            f"waited {s.waited_s:.0f} s for {s.gpus_needed} GPUs (limit "
                            f"{s.max_wait_s:.0f} s); the cluster has {s.gpus_now:g}")
        return Decision(Action.WAIT, Reason.NO_CAPACITY,
                        f"waiting for {s.gpus_needed} GPUs; the cluster has {s.gpus_now:g}")
    return Decision(Action.SUBMIT, Reason.CAPACITY,
                    f"{s.gpus_now:g} GPUs present ({s.gpus_needed} needed)" if s.gpus_needed
                    else "no GPUs needed")
