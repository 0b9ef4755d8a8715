"""The restart rules of a supervised run: resubmit, wait for capacity, or give up (pure, no I/O).

The supervisor (jobs/head/supervisor.py) gathers the facts (how the attempt ended, whether a node that
could host its GPU workers died during it (jobs/head/node_events.py), the GPUs the cluster
reports and for how long they have been stable, whether a new complete checkpoint appeared) and
asks `decide` what to do; it never decides anything itself. Why the rules are what they are (reference
grpo-jobs-and-ray.md §8, "Capacity after a spot preemption"): NeMo RL gives up on placement
groups after about a minute and veRL at once when GPUs are missing, while a replacement spot
node takes minutes, so a resubmit before the GPUs are back burns a restart; and a failure with
every GPU present and no new checkpoint since the previous attempt is a crash in the code or
config, which a restart repeats after a full model load. A preemption is told from a crash by
what happened to the nodes during the attempt, never by the GPU count at one instant (Ray keeps
a lost node's GPUs in its totals for up to ~50 s); preemptions spend their own budget
(`max_preemptions`), never a restart, and never count towards a crash.

Settle by probing (issue 24): when the supervisor could probe the nodes
(jobs/head/capacity_probe.py), a failure is judged as soon as every node that hosted the
attempt answers (none was lost, so it was not a preemption), and the next attempt is submitted
as soon as the GPUs it needs are free on nodes that answered: a lost node Ray has not marked dead
yet does not answer, so its GPUs are not counted. The settle time is then only a back-off between
attempts that died before their first training step (a crash loop at start-up). Without a probe,
every restart after a failure waits until the capacity has been stable for the settle time, and
a failure is judged only after it.

Standard library only: this module runs on the Ray head inside the framework's image.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Literal

from jobs.head.protocol import DEFAULT_MAX_PREEMPTIONS
from jobs.staging.entry import HUB_UNREACHABLE_EXIT

AttemptEnd = Literal[
    "SUCCEEDED", "FAILED", "STOPPED", "STALLED"
]  # STALLED: the watchdog stopped it


class Action(str, Enum):
    SUBMIT = "submit"  # submit the next attempt now
    WAIT = "wait"  # wait for capacity, then ask again
    FINISH = "finish"  # the run succeeded
    GIVE_UP = "give_up"  # the run ends without another attempt


class Reason(str, Enum):
    """Why: a stable code for scripts (`status --json`), with the sentence in Decision.message."""

    CAPACITY = "capacity"  # GPUs are there (or none needed)
    NO_CAPACITY = "no_capacity"  # fewer GPUs than the run needs
    SETTLING = "settling"  # GPUs present, but not stable for the settle time yet
    GPUS_BUSY = "gpus_busy"  # enough GPUs present, too few of them free (held by other jobs)
    SUCCEEDED = "succeeded"
    STOPPED_BY_USER = "stopped_by_user"  # `stop RUN`: the supervisor itself was stopped
    ATTEMPT_STOPPED = "attempt_stopped"  # the attempt was STOPPED: never restarted
    RESTARTS_EXHAUSTED = "restarts_exhausted"
    PREEMPTIONS_EXHAUSTED = "preemptions_exhausted"
    CRASH = "crash"  # failed with every GPU present and no new checkpoint since the previous one
    DEADLINE = "deadline"  # the GPUs did not come back before the deadline the user set
    # The attempt's first step could not reach the Hugging Face Hub to stage the model
    # (jobs/staging/ensure.py exits HUB_UNREACHABLE_EXIT): a restart meets the same wall.
    CANNOT_STAGE = "cannot_stage"


@dataclass(frozen=True)
class Situation:
    """What the supervisor knows when it asks.

    `stable_s` counts from the later of the attempt's end and the last change of the alive GPU
    nodes, so a failure is judged, and a restart submitted, only after `settle_s` of it.
    `ended` is None before the run's first attempt of this supervisor (nothing ended yet).
    `preempted`: a node that could host the attempt's GPU workers died (or was drained) while it
    ran. `gpus_at_end` is what the cluster reported when the attempt ended; `gpus_now` is what it
    reports now (they differ while waiting); `stable_s` is how long the cluster's GPU nodes have
    stayed the same. `progressed` says whether a new complete checkpoint appeared since the
    previous failure that was not a preemption: None when there is no such failure yet.
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
    # The user's deadline for a capacity wait (`--capacity-deadline`); 0: none. Waiting for
    # spot capacity alone never ends a run otherwise: a stockout of hours is common for spot
    # B200, and a run given up then is a run the user must notice and resume by hand.
    max_wait_s: float = 0.0
    preempted: bool = False
    preemptions_used: int = 0
    max_preemptions: int = DEFAULT_MAX_PREEMPTIONS
    stable_s: float = float("inf")
    settle_s: float = 0.0
    # The attempt driver's exit code when Ray reported one (None: unknown or not FAILED).
    exit_code: int | None = None
    # Settle by probing: GPUs free on nodes that answered a probe (None: no probe, the
    # settle-time rule applies); every node that hosted the ended attempt answered; the
    # ended attempt completed a training step (no back-off then).
    gpus_free: float | None = None
    hosts_answered: bool = False
    stepped: bool = False


@dataclass(frozen=True)
class Decision:
    action: Action
    reason: Reason
    message: str


def _has(gpus: float, needed: int) -> bool:
    return needed <= 0 or gpus >= needed


def is_crash(s: Situation) -> bool:
    """Failed, no node lost, every GPU present, and `progressed` False: neither this attempt nor
    the previous failure that was not a preemption made progress (a new checkpoint, or a
    completed training step, jobs/head/progress.py). Counting checkpoints alone made two
    transient failures inside one save period a crash (issue 24 item 6)."""
    return (
        s.ended == "FAILED"
        and not s.preempted
        and _has(s.gpus_at_end, s.gpus_needed)
        and s.progressed is False
    )


def _after_failure(s: Situation) -> Decision | None:
    """Give up after a FAILED or STALLED attempt, or None: a restart is allowed."""
    if s.preempted:
        if s.preemptions_used >= s.max_preemptions:
            return Decision(
                Action.GIVE_UP,
                Reason.PREEMPTIONS_EXHAUSTED,
                f"preemptions exhausted ({s.preemptions_used} of {s.max_preemptions} used)",
            )
        return None
    if s.exit_code == HUB_UNREACHABLE_EXIT:
        return Decision(
            Action.GIVE_UP,
            Reason.CANNOT_STAGE,
            "the attempt could not stage its model: the Hugging Face Hub did not answer (its "
            "log names the endpoint); a restart would meet the same wall, so none is made. "
            "Give the pods egress or HF_ENDPOINT a mirror, or load the model from a directory, "
            "then resume the run",
        )
    if s.restarts_used >= s.max_restarts:
        return Decision(
            Action.GIVE_UP,
            Reason.RESTARTS_EXHAUSTED,
            f"restarts exhausted ({s.restarts_used} of {s.max_restarts} used)",
        )
    if is_crash(s):
        return Decision(
            Action.GIVE_UP,
            Reason.CRASH,
            f"crash, not a preemption: the attempt failed with every GPU present "
            f"({s.gpus_at_end:g} of {s.gpus_needed} needed), no node lost, no "
            "new checkpoint since the previous failure and no training step completed; "
            "it is not retried again",
        )
    return None


def _capacity(s: Situation) -> Decision:
    if not _has(s.gpus_now, s.gpus_needed):
        if s.max_wait_s > 0 and s.waited_s >= s.max_wait_s:
            return Decision(
                Action.GIVE_UP,
                Reason.DEADLINE,
                f"waited {s.waited_s:.0f} s for {s.gpus_needed} GPUs, past the capacity "
                f"deadline set for the run ({s.max_wait_s:.0f} s); the cluster has "
                f"{s.gpus_now:g}",
            )
        return Decision(
            Action.WAIT,
            Reason.NO_CAPACITY,
            f"waiting for {s.gpus_needed} GPUs; the cluster has {s.gpus_now:g}",
        )
    # Without a probe, settle after every failure, not only crash-like ones; with one, only
    # between attempts that died before their first step (a preemption is not the code's). A
    # run that needs no GPUs has no capacity to settle.
    backoff = s.gpus_free is None or not (s.preempted or s.stepped)
    if s.ended is not None and s.gpus_needed > 0 and backoff and s.stable_s < s.settle_s:
        why = (
            "the attempt died before its first step; "
            if s.gpus_free is not None and s.ended in ("FAILED", "STALLED")
            else ""
        )
        return Decision(
            Action.WAIT,
            Reason.SETTLING,
            f"{s.gpus_now:g} GPUs present; {why}waiting until they have been stable for "
            f"{s.settle_s:.0f} s (stable for {s.stable_s:.0f} s)",
        )
    if s.gpus_free is not None and not _has(s.gpus_free, s.gpus_needed):
        return Decision(
            Action.WAIT,
            Reason.GPUS_BUSY,
            f"{s.gpus_free:g} of the cluster's {s.gpus_now:g} GPUs are free on nodes that "
            f"answer ({s.gpus_needed} needed); waiting for the rest to be released",
        )
    return Decision(
        Action.SUBMIT,
        Reason.CAPACITY,
        f"{s.gpus_now:g} GPUs present ({s.gpus_needed} needed)"
        if s.gpus_needed
        else "no GPUs needed",
    )


def decide(s: Situation) -> Decision:
    if s.stop_requested:
        return Decision(
            Action.GIVE_UP,
            Reason.STOPPED_BY_USER,
            "stopped by the user; no attempt is submitted after a stop",
        )
    if s.ended == "SUCCEEDED":
        return Decision(Action.FINISH, Reason.SUCCEEDED, "the attempt succeeded")
    if s.ended == "STOPPED":
        return Decision(
            Action.GIVE_UP,
            Reason.ATTEMPT_STOPPED,
            "the attempt was stopped; a stopped attempt is never restarted",
        )
    if s.ended in ("FAILED", "STALLED"):
        if not s.preempted and s.stable_s < s.settle_s and not s.hosts_answered:
            # Judge only once Ray had time to mark a lost node dead (see the module docstring),
            # whatever GPUs the run declared: a run that declares none (Ray's usual shape, a
            # driver needing no GPU with its workers on GPU nodes) loses nodes too (issue 24
            # item 0: judged at once, it was a crash 8 s after its node was killed).
            return Decision(
                Action.WAIT,
                Reason.SETTLING,
                f"the attempt {s.ended.lower()}; waiting up to {s.settle_s:.0f} s for the "
                "nodes it ran on to answer, or for Ray to mark a lost one dead, before "
                "telling a preemption from a crash",
            )
        refusal = _after_failure(s)
        if refusal is not None:
            return refusal
    return _capacity(s)
