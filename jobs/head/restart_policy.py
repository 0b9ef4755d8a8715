"""The restart rules of a supervised run: resubmit, wait for capacity, or give up (pure, no I/O).

The supervisor (jobs/head/supervisor.py and its collaborators) gathers the facts (how the attempt
ended, whether a node that could host its GPU workers died during it (jobs/head/node_events.py),
the GPUs the cluster reports and for how long they have been stable, whether a new complete
checkpoint appeared) and asks `decide` what to do; it never decides anything itself. The
smaller decisions on the way are here too, as pure functions of the facts passed in: what an
ended attempt's facts mean (progress, a stop before flex-start nodes end, the window in which a
node death is its cause, which budget it spends), where an ended attempt ran
(`attempt_hosts`), how long the cluster has been settled and whether those hosts answered
(`with_cluster`), which waits are one wait for capacity and when each is said (`wait_note`), and
where a re-armed supervisor finds the run's last attempt (`restored`). Why the rules are what
they are (reference grpo-jobs-and-ray.md §8, "Capacity after a spot preemption"): NeMo RL gives up on placement
groups after about a minute and veRL at once when GPUs are missing, while a replacement spot
node takes minutes, so a resubmit before the GPUs are back burns a restart; and a failure with
every GPU present and no new checkpoint since the previous attempt is a crash in the code or
config, which a restart repeats after a full model load. A preemption is told from a crash by
what happened to the nodes during the attempt, never by the GPU count at one instant (Ray keeps
a lost node's GPUs in its totals for up to ~50 s); preemptions spend their own budget
(`max_preemptions`), never a restart, and never count towards a crash.

Settle by probing, so no failure waits out Ray's late marking of a lost node: when the supervisor
could probe the nodes (jobs/head/capacity_probe.py), a failure is judged as soon as every node that
hosted the attempt answers (none was lost, so it was not a preemption; one that failed before
`ray.init` ran on its driver's node alone), and the next attempt is submitted as soon as the GPUs
it needs are free on nodes that answered: a lost node Ray has not marked dead yet does not
answer, so its GPUs are not counted. The settle time is then only a
back-off between attempts that died before their first training step (a crash loop at start-up).
Without a probe, every restart after a failure waits until the capacity has been stable for the
settle time, and a failure is judged only after it.

Standard library only: this module runs on the Ray head inside the framework's image.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
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
    # This failure ended as the previous failure that was not a preemption did: the same exit
    # code and the same last exception in its log (None: no such failure to compare with).
    same_failure: bool | None = None


@dataclass(frozen=True)
class Decision:
    action: Action
    reason: Reason
    message: str


def _has(gpus: float, needed: int) -> bool:
    return needed <= 0 or gpus >= needed


def is_crash(s: Situation) -> bool:
    """Failed, no node lost, every GPU present, `progressed` False: neither this attempt nor
    the previous failure that was not a preemption made progress (a new checkpoint, or a
    completed training step, jobs/head/progress.py), and both failed alike (`same_failure`).
    Counting checkpoints alone made two transient failures inside one save period a crash; two
    transient faults during two loads (two NCCL timeouts of different collectives) differ in
    their last exception, as a bad config's twice-raised error does not."""
    return (
        s.ended == "FAILED"
        and not s.preempted
        and _has(s.gpus_at_end, s.gpus_needed)
        and s.progressed is False
        and s.same_failure is True
    )


Failure = tuple[int | None, str]  # (exit code, last exception line of the log)

# The last line of a Python traceback: a dotted exception name, then its text.
_EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)\b")


def last_exception(log_tail: str | None) -> str:
    """The last exception line of a failed attempt's log tail ("" when none): Ray's JobInfo
    message of a FAILED driver is "Job entrypoint command failed with exit code N, last
    available logs (truncated to 20,000 chars):" and the tail (ray/dashboard/modules/job/
    job_supervisor.py L448-456 at Ray 2.60)."""
    found = ""
    for line in (log_tail or "").splitlines():
        line = line.strip()
        if _EXCEPTION.match(line):
            found = line
    return found[:500]


def same_failure(failure: Failure | None, previous: Failure | None) -> bool | None:
    """Whether two failures read alike (None: one of them unknown)."""
    if failure is None or previous is None:
        return None
    return tuple(failure) == tuple(previous)


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
            "new checkpoint since the previous failure and no training step completed, and "
            "it failed as the previous failure did (same exit code, same last exception); "
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
            # driver needing no GPU with its workers on GPU nodes) loses nodes too (judged at
            # once, such a run was a crash 8 s after its node was killed).
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


# ------------------------------------------------------------------ the facts of an ended attempt


def policy_end(ended: AttemptEnd, saved_for_node_end: bool) -> AttemptEnd:
    """How the policy reads an attempt's end: one that saved and stopped before its flex-start
    nodes' end SUCCEEDED for Ray, but is a node lost, known in advance (a FAILED preempted)."""
    return "FAILED" if saved_for_node_end else ended


def may_have_stopped_for_node_end(
    ended: str, node_max_run_s: float, stops_after_its_save: bool
) -> bool:
    """Whether a SUCCEEDED attempt may have stopped for its nodes' end rather than finished, so
    its log is worth reading: only on flex-start nodes, and only with a framework that stops
    after the save (NeMo RL; veRL saves and trains on until the node ends: a preemption)."""
    return ended == "SUCCEEDED" and node_max_run_s > 0 and stops_after_its_save


def recorded_for_node_end(last_end: Mapping[str, object] | None) -> bool:
    """An attempt's end as its record says it (its log may be gone with the head)."""
    return bool(last_end and last_end.get("saved_for_node_end"))


def new_checkpoint(
    end_entries: frozenset[str], baseline: frozenset[str], has_baseline: bool
) -> bool | None:
    """A complete checkpoint appeared since the previous failure that was not a preemption; None
    when there is no such failure to compare with."""
    return bool(end_entries - baseline) if has_baseline else None


def own_progress(new_ckpt: bool | None, steps_completed: int) -> bool | None:
    """Whether the attempt made progress: a new checkpoint or a completed training step (counting
    checkpoints alone made two transient failures inside one save period a crash). The first
    failure has no checkpoints to compare with, but its own steps still count."""
    if new_ckpt is None:
        return steps_completed > 0 or None
    return new_ckpt or steps_completed > 0


def progressed(own: bool | None, prev_progressed: bool | None) -> bool | None:
    """`Situation.progressed`: this attempt's progress, or the previous failure's."""
    return None if own is None else own or prev_progressed is True


def attempt_hosts(
    ray_job_id: str | None, driver_node_id: str | None, found: frozenset[str] | None
) -> frozenset[str] | None:
    """Where an ended attempt ran (None: unknown). With a Ray job id, the nodes its actors and
    tasks ran on, as Ray's state API `found` them. Without one its driver never called
    `ray.init` (a script failing early, a recipe's staging step, the watchdog's stop before it),
    so nothing ran outside the driver: its node alone, which Ray's job record names even then
    (`driver_node_id`, set once the driver starts). Unknown hosts wait out the settle time;
    known ones that answer a probe let the failure be judged at once (an unreachable Hub once
    held an 8-GPU run for 61 s this way)."""
    if ray_job_id:
        return found
    return frozenset({driver_node_id}) if driver_node_id else None


def needs_node_check(s: Situation) -> bool:
    """Whether the node table may still turn the ended attempt's failure into a preemption."""
    return s.ended in ("FAILED", "STALLED") and not s.preempted


def death_window_end_ms(ended_ms: int, settle_s: float, now_ms: int) -> int:
    """The latest node death that counts as the attempt's cause: one marked later than its end
    plus the settle time is not (Ray marks a lost node dead within ~50 s, the settle covers it)."""
    return min(now_ms, ended_ms + int(settle_s * 1000))


class Charge(str, Enum):
    """Which budget the ended attempt spends before the next one is submitted."""

    PREEMPTION = "preemption"
    RESTART = "restart"  # a failure that may be the first of a crash's two
    STALL_RESTART = "stall_restart"  # a restart that says nothing about the code


def charge(s: Situation) -> Charge:
    """A preemption spends its own budget; any other restart spends a restart. A stall says
    nothing about the code (an NCCL wait on a lost peer), so it is never the first of a crash's
    two failures: its checkpoints and progress are not the next comparison's baseline."""
    if s.preempted:
        return Charge.PREEMPTION
    return Charge.STALL_RESTART if s.ended == "STALLED" else Charge.RESTART


# ------------------------------------------------------------------ asking again while waiting


def gpus_to_wait_for(declared: int, used: int) -> int:
    """The GPUs the next attempt waits for: what the run declared, or more, the GPUs of the nodes
    its last attempt ran on. Ray's usual shape is a driver that needs no GPU with its workers on
    GPU nodes: declaring 0, it was submitted at once into a stockout after a preemption, failed at
    placement, and the crash rule ended the run minutes in."""
    return max(declared, used)


def first_situation(max_restarts: int, gpus_needed: int, max_wait_s: float) -> Situation:
    """Before this supervisor's first attempt: nothing ended yet."""
    return Situation(
        ended=None,
        restarts_used=0,
        max_restarts=max_restarts,
        gpus_needed=gpus_needed,
        gpus_at_end=0.0,
        gpus_now=0.0,
        progressed=None,
        max_wait_s=max_wait_s,
    )


@dataclass(frozen=True)
class ClusterNow:
    """What the cluster says at one poll while the supervisor asks."""

    gpus: float
    stable_s: float  # how long the alive GPU nodes have stayed the same
    since_end_s: float  # seconds since the ended attempt's end
    gpus_free: float | None = None  # None: no probe answered
    answering: frozenset[str] | None = None  # the nodes that answered the probe
    hosts: frozenset[str] | None = None  # where the ended attempt ran (None: unknown)


def with_cluster(
    base: Situation,
    now: ClusterNow,
    *,
    settle_s: float,
    stop_requested: bool,
    waited_s: float,
) -> Situation:
    """`base` with the cluster as it is now. Stability counts from the later of the attempt's end
    and the last change of the GPU nodes; the hosts answered when every node that hosted the
    attempt answered the probe (none was lost)."""
    stable = now.stable_s if base.ended is None else min(now.stable_s, now.since_end_s)
    return replace(
        base,
        gpus_free=now.gpus_free,
        hosts_answered=(
            now.answering is not None and now.hosts is not None and now.hosts <= now.answering
        ),
        gpus_now=now.gpus,
        stable_s=stable,
        settle_s=settle_s,
        stop_requested=stop_requested,
        waited_s=waited_s,
    )


CAPACITY_WAITS = (Reason.NO_CAPACITY, Reason.GPUS_BUSY)


def is_capacity_wait(reason: Reason) -> bool:
    """A wait for GPUs (missing or busy), which the capacity deadline counts, as opposed to a
    settle wait."""
    return reason in CAPACITY_WAITS


def may_be_own_next_attempt(d: Decision, noted: Reason | None) -> bool:
    """GPUs newly found busy or missing may be held by our own next attempt, submitted before an
    error hid it from us (a lost answer, then a malformed one: found by the simulation, seed 558
    with the GPUs busy; seed 1025 with them missing, the flex-start nodes it ran on too close to
    their end to count, so the supervisor waited beside its own running attempt for 38 min):
    worth asking Ray whether it is there before waiting for them."""
    return d.reason in (Reason.GPUS_BUSY, Reason.NO_CAPACITY) and d.reason != noted


class Note(str, Enum):
    """What a wait's poll writes to the record."""

    NEW_WAIT = "new_wait"  # a new wait begins: say why
    SAME_WAIT = "same_wait"  # a new reason, but the same wait for capacity: nothing to say
    STILL_WAITING = "still_waiting"  # a capacity wait goes on: the periodic "still waiting"
    NONE = "none"


def wait_note(reason: Reason, noted: Reason | None, since_note_s: float, progress_s: float) -> Note:
    """Missing GPUs then busy ones (a replacement joined, its GPUs not yet reported free) are one
    wait for capacity, said once; a capacity wait is said again every `progress_s`."""
    if reason != noted:
        same = is_capacity_wait(reason) and noted is not None and is_capacity_wait(noted)
        return Note.SAME_WAIT if same else Note.NEW_WAIT
    if since_note_s >= progress_s and is_capacity_wait(reason):
        return Note.STILL_WAITING
    return Note.NONE


# ------------------------------------------------------------------ a re-armed supervisor


class Restored(str, Enum):
    """Where a re-armed supervisor finds the run's last submitted attempt."""

    LIVE = "live"  # on this cluster and not ended in the record: adopt and watch it
    ENDED_BEFORE = "ended_before"  # ended under an earlier supervisor, which recorded how
    LOST_WITH_HEAD = "lost_with_head"  # Ray does not know it: lost with the cluster's head


def restored(known: bool, terminal: bool, end_recorded: bool) -> Restored:
    """`known`: Ray answered for the attempt (a 404 is not known); `end_recorded`: the record
    holds its end or the watchdog's stall."""
    if not known:
        return Restored.LOST_WITH_HEAD
    return Restored.ENDED_BEFORE if terminal and end_recorded else Restored.LIVE


def restored_end(verdict: Restored, recorded: str | None) -> str:
    """The restored attempt's end: as recorded; else, ended before, the watchdog's stop (STOPPED
    in Ray, STALLED here, to be restarted and never taken for the user's: found by the
    simulation, seed 171); else, lost with the head, a failure."""
    if recorded is not None:
        return recorded
    return "STALLED" if verdict == Restored.ENDED_BEFORE else "FAILED"


def restored_preempted(verdict: Restored, end_recorded: bool, preemption_recorded: bool) -> bool:
    """A restored end is a preemption when the record says so, or when the attempt was lost
    with the head before its end was recorded."""
    if verdict == Restored.LOST_WITH_HEAD:
        return not end_recorded or preemption_recorded
    return preemption_recorded
