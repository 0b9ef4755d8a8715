"""Watching one attempt until it ends: its status, the run's gauges, and the stall watchdog that
stops an attempt silent for too long.

An attempt silent (no log output, no checkpoint activity) for longer than the spec's stall
timeout, or the shorter one its own step and save times give (jobs/head/stall.py), is stopped
and its end recorded "stalled". Standard library and Ray only: this runs on the Ray head.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobs.client.types import JobStatus
from jobs.head import attempt_end, checkpoints, stall
from jobs.head import events as ev
from jobs.head.run_state import RunState

if TYPE_CHECKING:
    from jobs.head.supervisor_port import SupervisorPort

# How often the watchdog reads an attempt's steps from its log while the log grows (a whole-file
# read in production: not every second).
STEPS_EVERY_S = 30.0
# How long a stalled attempt may take to stop: Ray SIGKILLs 3 s after SIGTERM by default.
STOP_STALLED_WITHIN_S = 120


class AttemptWatch:
    """The supervisor's watch over its current attempt, with the attempt's step and save rhythm
    (the stall timeout it earns)."""

    def __init__(self, sup: SupervisorPort) -> None:
        self.sup = sup
        self.rhythm = stall.Rhythm()

    def watch(self, state: RunState) -> str | None:
        """The attempt's terminal status ("STALLED" when the watchdog stopped it, "LOST" when
        another supervisor took the run), or None when we are being stopped."""
        sup = self.sup
        job_id = state.current or ""
        mark: tuple[int, frozenset[str]] | None = None
        quiet_since = sup.clock.monotonic()
        steps_read = published_at = float("-inf")
        learnt: str | None = None  # the attempt whose GPUs are known
        self.rhythm.new_attempt()
        while True:
            status = sup.retry(lambda: sup.client.get_job_status(job_id))
            if status is None:
                return None
            if status.is_terminal():
                if status == JobStatus.STOPPED and state.stall_stopped == job_id:
                    return "STALLED"  # our watchdog's stop, seen after an error in its wait
                return str(status.value)
            sup.cluster.observe()  # keeps the capacity's stability current during the attempt
            if status == JobStatus.RUNNING:
                reread = sup.clock.monotonic() - published_at >= sup.config.gauges_s
                if reread:
                    published_at = sup.clock.monotonic()
                    attempt_end.keep_progress(sup, job_id)
                    if learnt != job_id and attempt_end.learn_gpus_used(sup, state):
                        learnt = job_id
                sup.cluster.set_gauges(job_id, reread)
            if status == JobStatus.PENDING:
                # Not started: its driver waits for resources (GPU nodes scaling up, an image
                # pull) or its runtime env. Silence is only a stall once it runs.
                mark, quiet_since = None, sup.clock.monotonic()
            elif sup.spec.stall_timeout_s > 0:
                now = sup.clock.monotonic()
                seen = (
                    sup.probes.log_size(job_id),
                    checkpoints.activity(sup.spec.checkpoint_dir),
                )
                steps = None
                if seen[0] != (mark[0] if mark else None) and now - steps_read >= STEPS_EVERY_S:
                    steps, steps_read = sup.cluster.steps(job_id), now  # the log grew: new steps?
                self.rhythm.observe(now, steps, seen[1])
                timeout_s = self.rhythm.timeout(sup.spec.stall_timeout_s)
                if seen != mark:
                    mark, quiet_since = seen, now
                elif now - quiet_since >= timeout_s:
                    state.stall_stopped = job_id
                    return self._stop_stalled(job_id, now - quiet_since, timeout_s)
            if sup.pause(sup.config.poll_s):
                return None
            if sup.lost.is_set():
                return "LOST"

    def _stop_stalled(self, job_id: str, quiet_s: float, timeout_s: float) -> str | None:
        sup = self.sup
        configured = sup.spec.stall_timeout_s
        derived = (
            ""
            if timeout_s >= configured
            else f", from the run's own step and save times; configured {configured:g} s"
        )
        sup.record(
            ev.STALLED,
            f"{job_id} stalled: no log output and no checkpoint activity "
            f"for {quiet_s:.0f} s (stall timeout {timeout_s:.0f} s{derived}); "
            "stopping it",
            submission_id=job_id,
            quiet_s=round(quiet_s, 1),
            stall_timeout_s=round(timeout_s, 1),
        )
        sup.retry(lambda: sup.client.stop_job(job_id))
        deadline = sup.clock.monotonic() + STOP_STALLED_WITHIN_S
        while not sup.retry(lambda: sup.client.get_job_status(job_id)).is_terminal():
            if sup.clock.monotonic() > deadline:
                raise RuntimeError(f"{job_id} did not stop within 120 s after the stall")
            if sup.pause(sup.config.poll_s):
                return None
        return "STALLED"
