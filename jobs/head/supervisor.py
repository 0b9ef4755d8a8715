"""The run supervisor: a Ray job on the head that submits a run's attempts and restarts them.

`python -m jobs.head.supervisor <its own submission id>` is the entrypoint the CLI submits
(jobs/runs/handoff.py). A job with no entrypoint resources runs its driver on the head node (Ray's
JobManager pins the JobSupervisor actor there), and the head sits on the stack's on-demand
`system` pool, never on spot: the supervisor outlives every GPU node and the caller's laptop.
It needs nothing from the caller after submission: its spec (the attempt's entrypoint,
runtime_env with already-uploaded `gcs://` packages, metadata, restart budget, GPUs, checkpoint
dir) is its own job metadata; it reaches the dashboard through `ray.init()`'s dashboard URL on
the head, so no token, kubeconfig or port-forward is involved.

Every decision comes from jobs/head/restart_policy.py; each is written as one JSON line to stdout
(its job log, jobs/head/events.py), which `list`, `status RUN` and `logs RUN` read.

Knobs (env vars of the supervisor job, production defaults in brackets):
  JOBS_SUPERVISOR_POLL_S [1]: status and capacity poll period (one HTTP call to the dashboard
      on the same node, and a GCS read, per period: cheap next to a restart).
  JOBS_SUPERVISOR_MAX_WAIT_S [1800]: longest wait for GPUs before giving up; a reclaimed spot
      node takes minutes to come back (reference §8), 30 min covers a replacement but not an
      exhausted zone.
  JOBS_SUPERVISOR_SETTLE_S [60]: before calling a failure a crash, how long to wait for the
      cluster to notice a lost node: Ray marks a node dead after 5 failed health checks of up to
      10 s each (ray_config_def.h health_check_failure_threshold=5, health_check_timeout_ms=10000),
      so GPUs can look present for ~50 s after a preemption.
  JOBS_SUPERVISOR_PROGRESS_S [60]: how often a "still waiting" record is written.
Standard library and Ray only: this runs inside the framework's image.
"""

from __future__ import annotations

import http.client
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from jobs.client import errors
from jobs.client.api import JobsAPI
from jobs.head import events as ev
from jobs.head import protocol
from jobs.head.protocol import Settings, Spec
from jobs.head.restart_policy import Action, Decision, Reason, Situation, decide, is_crash

# NeMo RL writes `tmp_step_N` and renames it when complete (nemo_rl/utils/checkpoint.py, v0.4.0):
# a half-written checkpoint is not progress. Hidden files are not checkpoints either.
_NOT_A_CHECKPOINT = ("tmp_", ".")


def checkpoint_entries(directory: str | None) -> frozenset[str]:
    """The checkpoints in a run's checkpoint dir (NeMo RL `step_N`, veRL `global_step_N`); a new
    name appearing is a new checkpoint. Empty when the dir is unknown or does not exist yet."""
    if not directory:
        return frozenset()
    try:
        names = os.listdir(directory)
    except OSError:
        return frozenset()
    return frozenset(n for n in names if not n.startswith(_NOT_A_CHECKPOINT))


class Supervisor:
    """One run's attempts, driven by the restart policy until the run finishes or gives up."""

    def __init__(self, client: Any, own_id: str, spec: Spec, gpus: Callable[[], float],
                 config: Settings, write: Callable[[str], object] = print) -> None:
        self.client = client
        self.own_id = own_id
        self.spec = spec
        self.gpus = gpus
        self.config = config
        self._write = write
        self.stopping = threading.Event()
        self.current: str | None = None

    def record(self, event: str, message: str, **fields: Any) -> None:
        self._write(ev.line(event, self.spec.run, message, supervisor=self.own_id, **fields))
        sys.stdout.flush()

    # ------------------------------------------------------------------ the cluster

    def _retry(self, call: Callable[[], Any]) -> Any:
        """Jobs API calls on the head retried while the dashboard restarts (connection errors,
        gateway answers); None on a stop. Any other refusal is raised: retrying it would loop."""
        while True:
            try:
                return call()
            except (RuntimeError, OSError, http.client.HTTPException) as e:
                if not errors.is_transient(e):
                    raise
                if self.stopping.wait(self.config.poll_s):
                    return None

    def other_supervisor(self) -> str | None:
        """A live supervisor of this run started before us: it keeps the run, we leave."""
        mine = protocol.supervisor_number(self.own_id)
        for job in self._retry(self.client.list_jobs) or []:
            meta = job.metadata or {}
            if (meta.get("kind") == protocol.SUPERVISOR and meta.get("run") == self.spec.run
                    and job.submission_id != self.own_id and not job.status.is_terminal()
                    and protocol.supervisor_number(job.submission_id or "") < mine):
                return job.submission_id
        return None

    def submit(self, attempt: int) -> str | None:
        """The attempt's id once Ray has it, or None when a stop came while the dashboard was
        away (nothing was submitted, so there is nothing to watch or stop)."""
        job_id = self.spec.attempt_id(attempt)
        meta = {**self.spec.metadata, "attempt": str(attempt), "supervisor": self.own_id}
        try:
            submitted = self._retry(lambda: self.client.submit_job(
                entrypoint=self.spec.entrypoint, runtime_env=self.spec.runtime_env,
                metadata=meta, submission_id=job_id))
        except RuntimeError as e:
            if not errors.is_duplicate(e):
                raise
            # Submitted before (a resubmit whose answer was lost): watch that one.
            submitted = job_id
        if submitted is None:
            return None
        self.current = job_id
        return job_id

    def watch(self, job_id: str) -> str | None:
        """The attempt's terminal status, or None when we are being stopped."""
        while True:
            status = self._retry(lambda: self.client.get_job_status(job_id))
            if status is None:
                return None
            if status.is_terminal():
                return str(status.value)
            if self.stopping.wait(self.config.poll_s):
                return None

    # ------------------------------------------------------------------ the loop

    def _decide(self, situation: Situation) -> Decision:
        """Ask the policy; while it says wait, poll capacity and record progress."""
        since: float | None = None
        last_note = 0.0
        while True:
            now = time.monotonic()
            s = replace(situation, gpus_now=self.gpus(), stop_requested=self.stopping.is_set(),
                        waited_s=0.0 if since is None else now - since)
            d = decide(s)
            if d.action != Action.WAIT:
                if since is not None and d.action == Action.SUBMIT:
                    self.record(ev.GPUS_BACK, f"{s.gpus_now:g} GPUs back after waiting "
                                f"{s.waited_s:.0f} s", gpus=s.gpus_now,
                                gpus_needed=s.gpus_needed, waited_s=round(s.waited_s, 1))
                return d
            if since is None:
                since, last_note = now, now
                self.record(ev.WAITING, f"waiting for {s.gpus_needed} GPUs since {ev.now_iso()} "
                            f"(the cluster has {s.gpus_now:g}; gives up after "
                            f"{s.max_wait_s:.0f} s)", gpus=s.gpus_now,
                            gpus_needed=s.gpus_needed, since=ev.now_iso(),
                            max_wait_s=s.max_wait_s)
            elif now - last_note >= self.config.progress_s:
                last_note = now
                self.record(ev.STILL_WAITING, f"still waiting for {s.gpus_needed} GPUs "
                            f"({s.waited_s:.0f} s of {s.max_wait_s:.0f} s; the cluster has "
                            f"{s.gpus_now:g})", gpus=s.gpus_now, gpus_needed=s.gpus_needed,
                            waited_s=round(s.waited_s, 1))
            self.stopping.wait(self.config.poll_s)

    def _stopped(self) -> int:
        stopped = ""
        if self.current is not None:
            try:
                status = self.client.get_job_status(self.current)
                if not status.is_terminal():
                    self.client.stop_job(self.current)
                    stopped = f"; {self.current} stopped"
            except (RuntimeError, OSError):
                pass
        self.record(ev.STOPPED, f"stopped by the user{stopped}; nothing is resubmitted",
                    reason=Reason.STOPPED_BY_USER.value)
        return 1

    def run(self) -> int:
        spec = self.spec
        self.record(ev.ARMED, f"supervising run {spec.run} from attempt {spec.first_attempt}: "
                    f"up to {spec.max_restarts} restart(s), {spec.gpus_needed} GPU(s) needed, "
                    f"checkpoint dir {spec.checkpoint_dir or '(none: progress is not seen)'}",
                    max_restarts=spec.max_restarts, gpus_needed=spec.gpus_needed,
                    checkpoint_dir=spec.checkpoint_dir, attempt=spec.first_attempt)
        other = self.other_supervisor()
        if other is not None:
            self.record(ev.GAVE_UP, f"{other} already drives run {spec.run}; this supervisor "
                        "leaves it alone", reason="another_supervisor")
            return 2
        attempt = spec.first_attempt - 1
        restarts = 0
        baseline = checkpoint_entries(spec.checkpoint_dir)
        has_previous = spec.first_attempt > 1
        situation = Situation(ended=None, restarts_used=0, max_restarts=spec.max_restarts,
                              gpus_needed=spec.gpus_needed, gpus_at_end=0.0, gpus_now=0.0,
                              progressed=None, max_wait_s=self.config.max_wait_s)
        while True:
            d = self._decide(situation)
            if d.action == Action.FINISH:
                self.record(ev.FINISHED, f"run {spec.run} succeeded ({self.current})",
                            reason=d.reason.value)
                return 0
            if d.action == Action.GIVE_UP:
                if d.reason == Reason.STOPPED_BY_USER:
                    return self._stopped()
                self.record(ev.GAVE_UP, f"gave up: {d.message}", reason=d.reason.value,
                            attempt=attempt or None)
                return 1
            if situation.ended is not None:
                restarts += 1
            attempt += 1
            try:
                job_id = self.submit(attempt)
            except (RuntimeError, OSError) as e:
                lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
                self.record(ev.GAVE_UP, f"gave up: Ray refused attempt {attempt}: "
                            f"{lines[-1] if lines else type(e).__name__}",
                            reason="submit_refused", attempt=attempt)
                return 1
            if job_id is None:
                return self._stopped()
            self.record(ev.SUBMITTED, f"submitted {job_id} ({d.message})"
                        + (f", restart {restarts} of {spec.max_restarts}" if restarts else ""),
                        attempt=attempt, submission_id=job_id)
            ended = self.watch(job_id)
            if ended is None:
                return self._stopped()
            gpus_at_end = self.gpus()
            entries = checkpoint_entries(spec.checkpoint_dir)
            progressed = bool(entries - baseline) if has_previous else None
            situation = replace(situation, ended=ended, restarts_used=restarts,
                                gpus_at_end=gpus_at_end, progressed=progressed)
            if ended == "FAILED" and is_crash(situation) and self.config.settle_s > 0:
                # GPUs can look present for a while after a node is lost: look again before
                # calling it a crash (see the module docstring).
                if self.stopping.wait(self.config.settle_s):
                    return self._stopped()
                situation = replace(situation, gpus_at_end=min(gpus_at_end, self.gpus()))
            message = self._end_message(job_id, ended)
            self.record(ev.ATTEMPT_ENDED, f"{job_id} {ended}{message}; the cluster has "
                        f"{situation.gpus_at_end:g} of {spec.gpus_needed} GPUs; "
                        + {None: "first attempt", True: "new checkpoint since the previous "
                           "attempt", False: "no new checkpoint since the previous attempt"
                           }[progressed],
                        attempt=attempt, submission_id=job_id, status=ended,
                        gpus=situation.gpus_at_end, new_checkpoint=progressed)
            baseline = entries
            has_previous = True

    def _end_message(self, job_id: str, ended: str) -> str:
        if ended != "FAILED":
            return ""
        try:
            info = self.client.get_job_info(job_id)
        except (RuntimeError, OSError):
            return ""
        parts = []
        if info.driver_exit_code is not None:
            parts.append(f"exit code {info.driver_exit_code}")
        return f" ({', '.join(parts)})" if parts else ""


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(f"usage: python -m {protocol.SUPERVISOR_MODULE} SUPERVISOR_SUBMISSION_ID",
              file=sys.stderr)
        return 2
    own_id = argv[0]
    import ray


    # Ray sends SIGTERM on `ray job stop` and SIGKILL 3 s later (job_supervisor.py,
    # RAY_JOB_STOP_WAIT_TIME_S): wake every wait at once and stop the current attempt.
    supervisor: Supervisor | None = None
    stop_early = threading.Event()

    def on_term(_sig: int, _frame: object) -> None:
        stop_early.set()
        if supervisor is not None:
            supervisor.stopping.set()

    signal.signal(signal.SIGTERM, on_term)
    ctx = ray.init(log_to_driver=False)
    # ray.init installs its own SIGTERM handler (sys.exit, worker.py `init`, Ray 2.60): ours
    # goes back on top so a stop is recorded and the current attempt stopped.
    signal.signal(signal.SIGTERM, on_term)
    # The Jobs API through jobs/client/api.py, as the CLI calls it: its errors read as Ray's
    # client's (RuntimeError "Request failed with status code N", OSError without an answer),
    # which `_transient` sorts. Attempts carry gcs:// URIs only (the CLI uploaded their local
    # packages at hand-off, jobs/client/dashboard.py `upload_working_dir`), so nothing is uploaded here.
    client = JobsAPI(f"http://{ctx.dashboard_url}")
    spec = Spec.from_json(client.get_job_info(own_id).metadata[Spec.METADATA_KEY])

    def gpus() -> float:
        return float(ray.cluster_resources().get("GPU", 0.0))

    supervisor = Supervisor(client, own_id, spec, gpus, Settings.from_env())
    if stop_early.is_set():
        supervisor.stopping.set()
    return supervisor.run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
