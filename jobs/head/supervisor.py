"""The run supervisor: a Ray job on the head that submits a run's attempts and restarts them.

`python -m jobs.head.supervisor <its own submission id>` is the entrypoint the CLI submits
(jobs/runs/handoff.py), and the re-armer after a head loss (jobs/head/rearm.py). A job with no
entrypoint resources runs its driver on the head node (Ray's JobManager pins the JobSupervisor
actor there), and the head sits on the stack's on-demand `system` pool, never on spot. Its spec
(the attempt's entrypoint, runtime_env with already-uploaded `gcs://` packages, metadata,
budgets, GPUs, checkpoint dir, runs root) is its own job metadata.

Every decision comes from jobs/head/restart_policy.py; the supervisor gathers the facts and
carries the decisions out, through small collaborators: the attempt's watch and stall watchdog
(jobs/head/attempt_watch.py), its end and judgement (jobs/head/attempt_end.py), the waits between
attempts (jobs/head/capacity_wait.py), the next submit (jobs/head/attempt_submit.py), the run's
lease (jobs/head/lease_keeper.py), the cluster's facts (jobs/head/cluster_view.py over
jobs/head/probes.py) and a re-armed run's state (jobs/head/run_restore.py). Each decision is
written as one JSON line to stdout (its job log, jobs/head/events.py) and, with a runs root,
appended to the run's record on shared storage (jobs/head/run_store.py), where a lease says who
drives the run. A failure is judged a
preemption when a node that could host the attempt's GPU workers died during it (Ray's node
table, jobs/head/node_events.py), after a settle wait that is recorded, never silent. An attempt
silent (no log output, no checkpoint activity) for longer than the spec's stall timeout (or the
shorter one its own step and save times give, jobs/head/stall.py) is stopped and recorded
"stalled". An unexpected error is recorded with its text and the loop
resumes after a backoff, re-adopting the live attempt: the supervisor does not die of one.
It exits 0 whenever it ended as designed (succeeded, gave up, stopped; the run's outcome is its
last record); a FAILED supervisor job means the supervisor itself broke.

Knobs (env vars of the supervisor job, production defaults in brackets):
  JOBS_SUPERVISOR_POLL_S [1]: status, node table and capacity poll period.
  JOBS_SUPERVISOR_MAX_WAIT_S [1800]: longest the supervisor retries a dashboard that does not
      answer before it records an error and backs off (it never gives the run up for that).
      Waiting for GPUs has no limit unless the run sets one (`--capacity-deadline`, the spec's
      capacity_deadline_s): a spot stockout of hours must not end a run.
  JOBS_SUPERVISOR_SETTLE_S [60]: after a failure, how long the cluster must stay the same
      (no GPU node joining or leaving, counted from the attempt's end) before the failure is
      judged and the next attempt submitted: Ray marks a node dead after 5 failed health checks
      of up to 10 s each (ray_config_def.h health_check_failure_threshold=5,
      health_check_timeout_ms=10000), so a lost node looks alive for up to ~50 s.
  JOBS_SUPERVISOR_PROGRESS_S [60]: how often a "still waiting" record is written.
  JOBS_SUPERVISOR_LEASE_S [15]: the run's lease on the runs root, renewed every third of it;
      a supervisor killed outright shows as "unsupervised" once it lapses.
  JOBS_SUPERVISOR_BACKOFF_MAX_S [60]: longest pause after an unexpected error.
  JOBS_SUPERVISOR_GAUGES_S [30]: how often the run's gauges (reward, KL, step time, tokens/s;
      jobs/head/run_gauges.py) are set from the running attempt's log.
Standard library and Ray only: this runs inside the framework's image.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from jobs.client import errors
from jobs.client.api import JobsAPI
from jobs.head import attempt_end, attempt_submit, protocol, rearm_code, run_end, scale_up
from jobs.head import events as ev
from jobs.head import restart_policy as policy
from jobs.head.attempt_watch import AttemptWatch
from jobs.head.capacity_wait import CapacityWait
from jobs.head.clock import REAL, Clock
from jobs.head.cluster_view import ClusterView
from jobs.head.files import LOCAL, Files
from jobs.head.lease_keeper import LeaseKeeper, LeaseLost
from jobs.head.probes import Probes, from_ray, job_alive
from jobs.head.protocol import Settings, Spec
from jobs.head.restart_policy import Action, Charge, Reason
from jobs.head.run_gpus import RunGpus
from jobs.head.run_restore import restore
from jobs.head.run_state import RunState
from jobs.head.run_store import RunStore


class Supervisor:
    """One run's attempts, driven by the restart policy until the run finishes or gives up."""

    def __init__(
        self,
        client: Any,
        own_id: str,
        spec: Spec,
        probes: Probes,
        config: Settings,
        write: Callable[[str], object] = print,
        *,
        clock: Clock = REAL,
        rearmed: bool = False,
        renew_in_thread: bool = True,
        publish: Callable[[str], None] | None = None,
        files: Files = LOCAL,
        gpu_requests: scale_up.Requests | None = None,
        head: str | None = None,
    ) -> None:
        self.client = client
        self.own_id = own_id
        self.spec = spec
        self.probes = probes
        self.config = config
        self._write = write
        self.clock = clock
        # A re-armed supervisor continues the run's current life; one the CLI started (a new
        # run, or `submit --resume` after the run ended) begins a new one (events.life).
        self.rearmed = rearmed
        self._publish = rearm_code.publish_code if publish is None else publish
        self.stopping = threading.Event()
        self.lost = threading.Event()  # another supervisor took the run's lease
        self.store = RunStore(spec.runs_root, spec.run, clock, files) if spec.runs_root else None
        # Production renews the lease from a thread, so a blocking call cannot let it lapse; the
        # simulation renews it in `pause` instead, where its simulated time passes.
        self.leases = (
            None
            if self.store is None
            else LeaseKeeper(
                self.store,
                own_id,
                config.lease_s,
                clock,
                self.stopping,
                self.lost,
                in_thread=renew_in_thread,
                head=head,
            )
        )
        self.cluster = ClusterView(probes, spec, clock)
        self.watcher = AttemptWatch(self)
        self.waits = CapacityWait(self)
        # On GPUs that scale on demand: the run's request to Ray's autoscaler, made once the run
        # is taken and released when it ends (never when the run is left to a re-armer or to
        # another supervisor, which hold it on).
        self.gpus = (
            RunGpus(gpu_requests, spec, own_id, self.record)
            if gpu_requests is not None and spec.request_gpus
            else None
        )
        self.state: RunState | None = None

    @property
    def current(self) -> str | None:
        return self.state.current if self.state is not None else None

    def record(self, event: str, message: str, **fields: Any) -> None:
        rec = ev.record(
            event, self.spec.run, message, at=self.clock.time(), supervisor=self.own_id, **fields
        )
        line = json.dumps(rec, sort_keys=True)
        self._write(ev.PREFIX + line)
        sys.stdout.flush()
        if self.store is not None:
            try:
                self.store.append(rec, line)
            except OSError as e:  # the job log keeps its copy; say the record is behind
                self._write(
                    ev.line(
                        ev.ERROR,
                        self.spec.run,
                        f"could not append to the run record in {self.spec.runs_root}: {e}",
                    )
                )

    def pause(self, seconds: float) -> bool:
        """Wait `seconds`; True when a stop (SIGTERM) came meanwhile."""
        if self.leases is not None and not self.leases.in_thread:
            self.leases.renew_if_due()
        return self.clock.wait(self.stopping, seconds)

    def retry(self, call: Callable[[], Any]) -> Any:
        """Jobs API calls retried while the dashboard restarts (connection errors, gateway
        answers) for up to max_wait_s; None on a stop. A refusal, or a dashboard away for
        longer, is raised (and recorded by `run`, which resumes after a backoff)."""
        deadline = self.clock.monotonic() + self.config.max_wait_s
        while True:
            try:
                return call()
            except (RuntimeError, OSError, http.client.HTTPException) as e:
                if not errors.is_transient(e) or self.clock.monotonic() > deadline:
                    raise
                if self.pause(self.config.poll_s):
                    return None

    def other_supervisor(self) -> str | None:
        """A live supervisor of this run started before us: it keeps the run, we leave."""
        mine = protocol.supervisor_number(self.own_id)
        jobs = self.retry(self.client.list_jobs) or []
        live = protocol.live_job_ids(jobs, protocol.SUPERVISOR, self.spec.run)
        older = [s for s in live if s != self.own_id and protocol.supervisor_number(s or "") < mine]
        return older[0] if older else None

    # ------------------------------------------------------------------ the loop

    def run(self) -> int:
        spec = self.spec
        self.record(
            ev.ARMED,
            f"supervising run {spec.run}: up to {spec.max_restarts} "
            f"restart(s) and {spec.max_preemptions} preemption(s), "
            f"{spec.gpus_needed} GPU(s) needed, checkpoint dir "
            f"{spec.checkpoint_dir or '(none: progress is not seen)'}, stall timeout "
            f"{f'{spec.stall_timeout_s:g} s' if spec.stall_timeout_s else 'off'}, "
            f"run record {spec.runs_root or '(job log only)'}"
            + (
                ""
                if self.rearmed
                else " (a new hand-off: the run's earlier end, if any, is history)"
            ),
            max_restarts=spec.max_restarts,
            max_preemptions=spec.max_preemptions,
            gpus_needed=spec.gpus_needed,
            checkpoint_dir=spec.checkpoint_dir,
            attempt=spec.first_attempt,
            stall_timeout_s=spec.stall_timeout_s,
            fresh=not self.rearmed,
        )
        code = self._drive()
        if self.leases is not None:
            self.leases.release()
        return code

    def _drive(self) -> int:
        """Take the run, restore its state, then loop; an unexpected error (a dashboard
        answering 500 included) is recorded and the step retried after a backoff."""
        backoff = self.config.poll_s
        state: RunState | None = None
        taken = False
        while True:
            try:
                # A SIGTERM that is no user stop, before the run was taken, still takes it
                # first: its spec on the runs root is what the re-armer finds (seed 2143: the
                # run was left with nothing to re-arm it by).
                if self.stopping.is_set() and (taken or run_end.user_stop(self)):
                    return run_end.stopped(self, state)
                if not taken:
                    if not self._take_run():
                        return 0
                    taken = True
                    if self.stopping.is_set():
                        return run_end.stopped(self, state)
                if state is None:
                    self.state = state = restore(self)
                    if state.stop_requested:  # the run was stopped before we came
                        return run_end.stopped(self, state)
                return self._loop(state)
            except LeaseLost:
                return run_end.left(self)
            except Exception as e:
                if self.stopping.is_set():
                    return run_end.stopped(self, state)
                text = " ".join(str(e).split())[:500]
                self.record(
                    ev.ERROR,
                    f"unexpected error, retrying in {backoff:.0f} s: {type(e).__name__}: {text}",
                    error=type(e).__name__,
                )
                if self.pause(backoff):
                    return run_end.stopped(self, state)
                backoff = min(backoff * 2, self.config.backoff_max_s)

    def _loop(self, state: RunState) -> int:
        spec = self.spec
        if self.gpus is not None:
            self.gpus.ask()
        while True:
            if state.watching:
                ended = self.watcher.watch(state)
                if ended is None:
                    return run_end.stopped(self, state)
                if ended == "LOST":
                    raise LeaseLost()
                attempt_end.record_end(self, state, ended)
            d, s = self.waits.decide(state)
            if d.action == Action.FINISH:
                return run_end.succeeded(
                    self,
                    f"run {spec.run} succeeded ({state.current})",
                    reason=d.reason.value,
                )
            if d.action == Action.GIVE_UP:
                if d.reason == Reason.STOPPED_BY_USER:
                    return run_end.stopped(self, state)
                return run_end.ended(
                    self,
                    ev.GAVE_UP,
                    f"gave up: {d.message}",
                    reason=d.reason.value,
                    attempt=state.attempt or None,
                )
            if s.ended is not None and not state.charged:
                _charge(state, policy.charge(s))
            if not attempt_submit.submit_next(self, state, d):
                return run_end.stopped(self, state)

    # ------------------------------------------------------------------ taking the run

    def _take_run(self) -> bool:
        """Take the run (its lease on the runs root, and no older live supervisor in Ray).

        The lease and the spec come first, before any Jobs API call that may fail: a supervisor
        killed during the retries that follow leaves a run the re-armer knows (found by the
        simulation: killed after one malformed answer, the run was lost without a trace)."""
        other = None
        if self.store is not None and self.leases is not None and self.leases.lease is None:
            # The lease before the spec: a re-armer only looks at runs with a spec.
            if not self.leases.take(
                lambda sid: self.retry(lambda: self.client.get_job_status(sid)),
                self.pause,
                self.config.poll_s,
            ):
                return False
            if self.leases.lease is None:
                other = self.leases.holder()
            else:
                # A new hand-off (not a re-arm) starts a new life: its spec is the one to re-arm.
                self.store.write_spec(self.spec.to_dict(), replace=not self.rearmed)
                rearm_code.keep_working_dir(self.store, self.spec)
                self._publish(self.spec.runs_root)
        elif self.store is None:
            # Without a runs root there is no lease: Ray's job table says who drives the run.
            # With one, the lease alone decides (an older supervisor that sees our newer
            # generation leaves, `left`), so no Jobs API call can split the run between two.
            other = self.other_supervisor()
        if other is None:
            return True
        self.record(
            ev.LEFT,
            f"{other} already drives run {self.spec.run}; this supervisor leaves it alone",
            reason="another_supervisor",
        )
        return False


def _charge(state: RunState, charge: Charge) -> None:
    """Spend the ended attempt's budget (once: a submit retried after an error must not count
    it again); a failure that may start a crash becomes the next comparison's baseline."""
    state.charged = True
    if charge == Charge.PREEMPTION:
        state.preemptions += 1
        return
    state.restarts += 1
    if charge == Charge.RESTART:
        state.baseline, state.has_baseline = state.end_entries, True
        state.prev_progressed = state.own_progress
        state.prev_failure = state.failure


def from_job(
    client: Any,
    own_id: str,
    metadata: dict[str, str],
    probes: Probes,
    config: Settings,
    *,
    working_dir: str | None = None,
    **kw: Any,
) -> Supervisor:
    """The supervisor a supervisor job's metadata describes (the CLI's hand-off, or the
    re-armer's); `kw` are Supervisor's keyword seams (the simulation's clock)."""
    spec = Spec.from_json(metadata[Spec.METADATA_KEY])
    if working_dir and spec.runtime_env.get("working_dir"):
        # The attempts' package is this job's own (jobs/runs/handoff.py); after a re-arm on a new
        # cluster it is the copy the re-armer uploaded again (jobs/head/rearm.py).
        spec = replace(spec, runtime_env={**spec.runtime_env, "working_dir": working_dir})
    rearmed = metadata.get(protocol.REARMED_KEY) == "1"
    return Supervisor(client, own_id, spec, probes, config, rearmed=rearmed, **kw)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(
            f"usage: python -m {protocol.SUPERVISOR_MODULE} SUPERVISOR_SUBMISSION_ID",
            file=sys.stderr,
        )
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
    # which `errors.is_transient` sorts. Attempts carry gcs:// URIs only (the CLI uploaded their local
    # packages at hand-off, jobs/client/dashboard.py `upload_working_dir`), so nothing is uploaded here.
    dashboard = f"http://{ctx.dashboard_url}"
    client = JobsAPI(dashboard)
    own = client.get_job_info(own_id)
    try:  # read once: the head's session is the head's for its whole life
        head = client.session_name()
    except (RuntimeError, OSError, ValueError, http.client.HTTPException):
        head = None  # the lease then names no head: other heads judge it as one of theirs

    supervisor = from_job(
        client,
        own_id,
        own.metadata or {},
        from_ray(client, dashboard, ctx),
        Settings.from_env(),
        working_dir=rearm_code.own_working_dir(),
        head=head,
        gpu_requests=scale_up.Requests(
            scale_up.RayKV(), scale_up.send_to_ray, lambda sid: job_alive(client, sid)
        ),
    )
    refusal = protocol.runs_root_refusal(supervisor.spec, os.path.isdir)
    if refusal:
        # A record in its own log, which `status` and `list` read (the runs root is not there).
        print(ev.line(ev.REFUSED, supervisor.spec.run, refusal), flush=True)
        print(f"refused: {refusal}", file=sys.stderr, flush=True)
        return 2
    if stop_early.is_set():
        supervisor.stopping.set()
    return supervisor.run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
