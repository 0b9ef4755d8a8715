"""Asking the restart policy what next, and waiting while it says wait: for the cluster to
settle after a failure, or for the GPUs the run needs (missing, or busy with other jobs).

Every wait is recorded, never silent: its start, a "still waiting" line every
JOBS_SUPERVISOR_PROGRESS_S, and the GPUs' return. On GPUs that scale on demand a missing GPU is a
scale-up in progress, said so, and the time to workers is recorded. The decisions themselves are
jobs/head/restart_policy.py's. Standard library and Ray only: this runs on the Ray head.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobs.head import attempt_end, attempt_submit
from jobs.head import events as ev
from jobs.head import restart_policy as policy
from jobs.head.lease_keeper import LeaseLost
from jobs.head.restart_policy import Action, Decision, Note, Reason, Situation
from jobs.head.run_state import RunState

if TYPE_CHECKING:
    from jobs.head.supervisor_port import SupervisorPort


# How often a run short of GPUs on demand sends the cluster's request again (`RunGpus.resend`).
RESEND_S = 10.0


def _free(s: Situation) -> str:
    """ ", 0 free" when the probe saw fewer GPUs free than present (held by other jobs)."""
    return "" if s.gpus_free is None or s.gpus_free >= s.gpus_now else f", {s.gpus_free:g} free"


def _deadline(s: Situation) -> str:
    return f" of the {s.max_wait_s:.0f} s deadline" if s.max_wait_s > 0 else ""


class CapacityWait:
    """The supervisor's waits between attempts, and when the current scale-up began."""

    def __init__(self, sup: SupervisorPort) -> None:
        self.sup = sup
        # When the current scale-up began (monotonic): kept across an error that restarts the
        # wait, so the time to workers counts from the first "scaling up".
        self.scaling_since: float | None = None

    def _situation(
        self, state: RunState, waiting_since: float | None
    ) -> tuple[Situation, float, float]:
        """The policy's question as the cluster stands now, with the GPUs alive and the time."""
        sup = self.sup
        gpus, stable = sup.cluster.observe()
        now = sup.clock.monotonic()
        spec = sup.spec
        base = (
            attempt_end.judge(sup, state)
            if state.situation is not None
            else policy.first_situation(
                spec.max_restarts,
                policy.gpus_to_wait_for(spec.gpus_needed, state.gpus_used),
                spec.capacity_deadline_s,
            )
        )
        probed = sup.cluster.probe()
        cluster = policy.ClusterNow(
            gpus=gpus,
            stable_s=stable,
            since_end_s=now - state.ended_at,
            gpus_free=None if probed is None else probed.gpus_free,
            answering=None if probed is None else probed.answering,
            hosts=state.hosts,
        )
        s = policy.with_cluster(
            base,
            cluster,
            settle_s=sup.config.settle_s,
            stop_requested=sup.stopping.is_set(),
            waited_s=0.0 if waiting_since is None else now - waiting_since,
        )
        return s, gpus, now

    def decide(self, state: RunState) -> tuple[Decision, Situation]:
        """Ask the policy; while it says wait (settle or capacity), poll and record."""
        sup = self.sup
        waiting_since: float | None = None
        noted: Reason | None = None
        last_note = 0.0
        resent = float("-inf")
        while True:
            s, gpus, now = self._situation(state, waiting_since)
            d = policy.decide(s)
            if d.action != Action.WAIT:
                if waiting_since is not None and d.action == Action.SUBMIT:
                    self._note_back(gpus, s)
                return d, s
            if policy.may_be_own_next_attempt(d, noted) and attempt_submit.next_exists(sup, state):
                # The submit step adopts our own next attempt, which holds the GPUs.
                return Decision(Action.SUBMIT, Reason.CAPACITY, d.message), s
            if policy.is_capacity_wait(d.reason) and waiting_since is None:
                waiting_since = now
            note = policy.wait_note(d.reason, noted, now - last_note, sup.config.progress_s)
            if note in (Note.NEW_WAIT, Note.SAME_WAIT):
                noted, last_note = d.reason, now
            if note == Note.NEW_WAIT:
                self._note_wait(d, s)
            elif note == Note.STILL_WAITING:
                last_note = now
                self._still_waiting(gpus, s)
            if sup.gpus is not None and d.reason == Reason.NO_CAPACITY:
                if now - resent >= RESEND_S:
                    resent = now
                    sup.gpus.resend()
            if sup.lost.is_set():
                raise LeaseLost()
            sup.pause(sup.config.poll_s)

    def _still_waiting(self, gpus: float, s: Situation) -> None:
        self.sup.record(
            ev.STILL_WAITING,
            ("still scaling up: waiting" if self.sup.gpus is not None else "still waiting")
            + f" for {s.gpus_needed} GPUs "
            f"({s.waited_s:.0f} s{_deadline(s)}; the cluster has {gpus:g}{_free(s)})",
            gpus=gpus,
            gpus_needed=s.gpus_needed,
            waited_s=round(s.waited_s, 1),
        )

    def _note_back(self, gpus: float, s: Situation) -> None:
        sup = self.sup
        message = f"{gpus:g} GPUs back after waiting {s.waited_s:.0f} s"
        scaled: dict[str, float] = {}
        if sup.gpus is not None and self.scaling_since is not None:
            # The time from the autoscaler seeing the request short to the workers alive
            # (node boot and image pull on GKE): what a run on demand pays before it trains.
            took = sup.clock.monotonic() - self.scaling_since
            self.scaling_since = None
            message = f"GPU workers up: {gpus:g} GPUs {took:.0f} s after scaling up began"
            scaled = {"scale_up_s": round(took, 1)}
        sup.record(
            ev.GPUS_BACK,
            message,
            gpus=gpus,
            gpus_needed=s.gpus_needed,
            waited_s=round(s.waited_s, 1),
            **scaled,
        )

    def _note_wait(self, d: Decision, s: Situation) -> None:
        sup = self.sup
        if d.reason == Reason.SETTLING:
            sup.record(
                ev.SETTLING,
                f"{d.message} (JOBS_SUPERVISOR_SETTLE_S)",
                settle_s=s.settle_s,
                gpus=s.gpus_now,
                gpus_needed=s.gpus_needed,
            )
            return
        # On GPUs that scale on demand a missing GPU is a scale-up in progress, said so.
        scaling = sup.gpus is not None and d.reason == Reason.NO_CAPACITY
        if scaling and self.scaling_since is None:
            self.scaling_since = sup.clock.monotonic()
        what = (
            f"scaling up: Ray's autoscaler is adding GPU workers for {s.gpus_needed} GPUs"
            if scaling
            else f"waiting for {s.gpus_needed} GPUs"
        )
        if s.gpus_needed > sup.spec.gpus_needed:
            what += f" (the GPUs its last attempt's workers ran on; the run declares {sup.spec.gpus_needed})"
        since = ev.now_iso(sup.clock.time())  # the supervisor's clock, as the record's `t`
        sup.record(
            ev.WAITING,
            f"{what} since {since} (the cluster has {s.gpus_now:g}{_free(s)}; "
            + (
                "a new GKE node boots and pulls the image first, usually several minutes; "
                if scaling
                else ""
            )
            + (
                f"gives up after {s.max_wait_s:.0f} s, the run's capacity deadline)"
                if s.max_wait_s > 0
                else "no deadline: it waits until they are back or the run is stopped)"
            ),
            gpus=s.gpus_now,
            gpus_free=s.gpus_free,
            gpus_needed=s.gpus_needed,
            since=since,
            max_wait_s=s.max_wait_s,
            **({"scaling_up": True} if scaling else {}),
        )
