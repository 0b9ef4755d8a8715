"""The run supervisor: a Ray job on the head that submits a run's attempts and restarts them.

`python -m jobs.head.supervisor <its own submission id>` is the entrypoint the CLI submits
(jobs/runs/handoff.py), and the re-armer after a head loss (jobs/head/rearm.py). A job with no
entrypoint resources runs its driver on the head node (Ray's JobManager pins the JobSupervisor
actor there), and the head sits on the stack's on-demand `system` pool, never on spot. Its spec
(the attempt's entrypoint, runtime_env with already-uploaded `gcs://` packages, metadata,
budgets, GPUs, checkpoint dir, runs root) is its own job metadata.

Every decision comes from jobs/head/restart_policy.py; each is written as one JSON line to stdout
(its job log, jobs/head/events.py) and, with a runs root, appended to the run's record on shared
storage (jobs/head/run_store.py), where a lease says who drives the run. A failure is judged a
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
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from jobs.client import errors
from jobs.client.api import JobsAPI
from jobs.client.types import JobStatus
from jobs.head import (
    capacity_probe,
    checkpoints,
    hygiene,
    node_end,
    node_events,
    progress,
    protocol,
    run_gauges,
    scale_up,
    stall,
)
from jobs.head import events as ev
from jobs.head.capacity_probe import Probed
from jobs.head.clock import REAL, Clock
from jobs.head.files import LOCAL, Files
from jobs.head.protocol import Settings, Spec
from jobs.head.restart_policy import Action, Decision, Reason, Situation, decide
from jobs.head.run_store import Lease, RunStore

# How often the watchdog reads an attempt's steps from its log while the log grows (a whole-file
# read in production: not every second).
STEPS_EVERY_S = 30.0


def checkpoint_entries(directory: str | None) -> frozenset[str]:
    """The complete checkpoints (and a plain command's entries) in a run's checkpoint dir; a
    new name appearing is progress (jobs/head/checkpoints.py `entries`, the one rule)."""
    return checkpoints.entries(directory)


def _listdir(directory: str | None) -> list[str]:
    if not directory:
        return []
    try:
        return os.listdir(directory)
    except OSError:
        return []


def checkpoint_activity(directory: str | None) -> frozenset[str]:
    """Every entry, half-written ones included: a save in progress is not a stall."""
    return frozenset(_listdir(directory))


@dataclass
class Probes:
    """What the supervisor reads from the cluster besides the Jobs API (injected for tests)."""

    nodes: Callable[[], list[dict[str, Any]]]
    log_size: Callable[[str], int]
    # Training steps an attempt completed, read from its log (jobs/head/progress.py).
    steps: Callable[[str], int] = lambda _job_id: 0
    # The nodes that hosted an attempt's actors and tasks (Ray's state API by job id); None
    # when unknown, and the judgement falls back to any node that could have hosted them.
    hosts: Callable[[str], frozenset[str] | None] = lambda _job_id: None
    # Which nodes answer now and the GPUs free on them (jobs/head/capacity_probe.py); None: no
    # probe, and the restart policy waits the settle time instead.
    capacity: Callable[[], Probed] | None = None
    # Whether the attempt's log shows NeMo RL stopping after its save before its nodes' end
    # (jobs/head/node_end.py): such an attempt SUCCEEDS without having finished.
    stopped_for_node_end: Callable[[str], bool] = lambda _job_id: False
    # The attempt's step lines (jobs/head/progress.py `progress_lines`), kept on the runs root.
    progress_lines: Callable[[str], str] = lambda _job_id: ""
    # Publishes the attempt's latest step figures as the run's gauges (jobs/head/run_gauges.py),
    # given the run's name and the attempt; re-reading its log, or (False) setting the last again.
    publish: Callable[[str, str, bool], None] = lambda _run, _job_id, _reread: None


@dataclass
class RunState:
    """Where the run is: enough to resume the loop after an error or a re-arm."""

    attempt: int
    restarts: int = 0
    preemptions: int = 0
    current: str | None = None  # the live (or last) attempt's submission id
    started_ms: int = 0
    watching: bool = False  # `current` is submitted and its end not recorded yet
    baseline: frozenset[str] = field(default_factory=frozenset)
    has_baseline: bool = False
    # Whether the previous failure that was not a preemption had made progress itself: a crash
    # is two such failures in a row without progress (a transient failure during a load, after
    # a failure that had trained, is retried).
    prev_progressed: bool | None = None
    own_progress: bool | None = None
    stop_requested: bool = False  # the user stopped the run before this supervisor came
    situation: Situation | None = None
    ended_at: float = 0.0
    end_entries: frozenset[str] = field(default_factory=frozenset)
    # The ended attempt's restart or preemption is counted: a submit that fails after it and is
    # retried (after an error's backoff) must not count it again.
    charged: bool = False
    # Where the ended attempt's workers ran (Probes.hosts; None: unknown), and when it ended.
    hosts: frozenset[str] | None = None
    ended_ms: int = 0
    # The attempt the stall watchdog stopped: Ray says STOPPED, the run says STALLED, also when
    # an API error came between the stop and its end (found by the simulation, seed 1010).
    stall_stopped: str | None = None


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
        # Production renews the lease from a thread, so a blocking call cannot let it lapse; the
        # simulation renews it in `_pause` instead, where its simulated time passes.
        self.renew_in_thread = renew_in_thread
        self._publish = _publish_code if publish is None else publish
        self.stopping = threading.Event()
        self.lost = threading.Event()  # another supervisor took the run's lease
        self.store = RunStore(spec.runs_root, spec.run, clock, files) if spec.runs_root else None
        self.lease: Lease | None = None
        self._renewed_at = 0.0
        self.stability = node_events.Stability()
        self.rhythm = stall.Rhythm()  # step and save times: the stall timeout (issue 24 item 10)
        self._nodes: list[dict[str, Any]] = []
        # On GPUs that scale on demand: the run's request to Ray's autoscaler, made once the run
        # is taken and released when it ends (never when the run is left to a re-armer or to
        # another supervisor, which hold it on).
        self.gpu_requests = gpu_requests if spec.request_gpus else None
        self._gpus_asked = False
        # When the current scale-up began (monotonic): kept across an error that restarts the
        # wait, so the time to workers counts from the first "scaling up".
        self._scaling_since: float | None = None

    @property
    def current(self) -> str | None:
        return self.state.current if hasattr(self, "state") else None

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

    def _pause(self, seconds: float) -> bool:
        """Wait `seconds`; True when a stop (SIGTERM) came meanwhile."""
        if not self.renew_in_thread:
            self._renew_if_due()
        return self.clock.wait(self.stopping, seconds)

    # ------------------------------------------------------------------ the cluster

    def _retry(self, call: Callable[[], Any]) -> Any:
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
                if self._pause(self.config.poll_s):
                    return None

    def _observe(self) -> tuple[float, float]:
        """(GPUs alive now, seconds the set of alive GPU nodes has stayed the same)."""
        try:
            self._nodes = self.probes.nodes()
        except (OSError, ValueError, http.client.HTTPException):
            pass  # the dashboard restarts now and then: keep the last table
        ids, gpus = node_events.alive_gpu_nodes(self._lasting_nodes())
        return gpus, self.stability.observe(ids, self.clock.monotonic())

    def _lasting_nodes(self) -> list[dict[str, Any]]:
        """The node table without the flex-start nodes that end before an attempt could save on
        them: their GPUs are not capacity (an attempt there would save at once and stop)."""
        if self.spec.node_max_run_s <= 0:
            return self._nodes
        ending = node_end.ending(
            self._nodes, self.spec.node_max_run_s, self.clock.time(), node_end.SAVE_MARGIN_S
        )
        return [n for n in self._nodes if str(n.get("node_id")) not in ending]

    def other_supervisor(self) -> str | None:
        """A live supervisor of this run started before us: it keeps the run, we leave."""
        mine = protocol.supervisor_number(self.own_id)
        for job in self._retry(self.client.list_jobs) or []:
            meta = job.metadata or {}
            if (
                meta.get("kind") == protocol.SUPERVISOR
                and meta.get("run") == self.spec.run
                and job.submission_id != self.own_id
                and not job.status.is_terminal()
                and protocol.supervisor_number(job.submission_id or "") < mine
            ):
                return job.submission_id
        return None

    def submit(self, attempt: int) -> str | None:
        """The attempt's id once Ray has it, or None when a stop came while the dashboard was
        away (nothing was submitted, so there is nothing to watch or stop)."""
        job_id = self.spec.attempt_id(attempt)
        meta = {**self.spec.metadata, "attempt": str(attempt), "supervisor": self.own_id}
        entrypoint, runtime_env = self._with_node_end(job_id)
        try:
            submitted = self._retry(
                lambda: self.client.submit_job(
                    entrypoint=entrypoint,
                    runtime_env=runtime_env,
                    metadata=meta,
                    submission_id=job_id,
                    **self.spec.reservations(),
                )
            )
        except RuntimeError as e:
            if not errors.is_duplicate(e):
                raise
            submitted = job_id  # submitted before (a resubmit whose answer was lost)
        return None if submitted is None else job_id

    def _with_node_end(self, job_id: str) -> tuple[str, dict[str, Any]]:
        """The attempt's entrypoint and runtime env; on flex-start GPUs, with the save before the
        first of its nodes reaches its maximum run duration (jobs/head/node_end.py)."""
        spec = self.spec
        if spec.node_max_run_s <= 0 or spec.save_before_node_end not in node_end.FRAMEWORKS:
            return spec.entrypoint, spec.runtime_env
        now = self.clock.time()
        ends_at = node_end.nodes_end_at(self._lasting_nodes(), spec.node_max_run_s, now)
        entrypoint, env, said = node_end.for_attempt(
            spec.save_before_node_end, spec.entrypoint, spec.runtime_env, ends_at, now
        )
        if said:
            self.record(
                ev.SAVE_BEFORE_NODE_END,
                f"{job_id} saves before its flex-start nodes end: {said}",
                submission_id=job_id,
                nodes_end_at=round(ends_at, 1),
            )
        return entrypoint, env

    # ------------------------------------------------------------------ one attempt

    def _watch(self, state: RunState) -> str | None:
        """The attempt's terminal status ("STALLED" when the watchdog stopped it, "LOST" when
        another supervisor took the run), or None when we are being stopped."""
        job_id = state.current or ""
        configured = self.spec.stall_timeout_s
        mark: tuple[int, frozenset[str]] | None = None
        quiet_since = self.clock.monotonic()
        steps_read = published_at = float("-inf")
        self.rhythm.new_attempt()
        while True:
            status = self._retry(lambda: self.client.get_job_status(job_id))
            if status is None:
                return None
            if status.is_terminal():
                if status == JobStatus.STOPPED and state.stall_stopped == job_id:
                    return "STALLED"  # our watchdog's stop, seen after an error in its wait
                return str(status.value)
            self._observe()  # keeps the capacity's stability current during the attempt
            if status == JobStatus.RUNNING:
                reread = self.clock.monotonic() - published_at >= self.config.gauges_s
                if reread:
                    published_at = self.clock.monotonic()
                self._set_gauges(job_id, reread)
            if status == JobStatus.PENDING:
                # Not started: its driver waits for resources (GPU nodes scaling up, an image
                # pull) or its runtime env. Silence is only a stall once it runs.
                mark, quiet_since = None, self.clock.monotonic()
            elif configured > 0:
                now = self.clock.monotonic()
                seen = (self.probes.log_size(job_id), checkpoint_activity(self.spec.checkpoint_dir))
                steps = None
                if seen[0] != (mark[0] if mark else None) and now - steps_read >= STEPS_EVERY_S:
                    steps, steps_read = self._steps(job_id), now  # the log grew: new steps?
                self.rhythm.observe(now, steps, seen[1])
                timeout_s = self.rhythm.timeout(configured)
                if seen != mark:
                    mark, quiet_since = seen, now
                elif now - quiet_since >= timeout_s:
                    state.stall_stopped = job_id
                    return self._stop_stalled(job_id, now - quiet_since, timeout_s)
            if self._pause(self.config.poll_s):
                return None
            if self.lost.is_set():
                return "LOST"

    def _stop_stalled(self, job_id: str, quiet_s: float, timeout_s: float) -> str | None:
        derived = (
            ""
            if timeout_s >= self.spec.stall_timeout_s
            else f", from the run's own step and save times; configured "
            f"{self.spec.stall_timeout_s:g} s"
        )
        self.record(
            ev.STALLED,
            f"{job_id} stalled: no log output and no checkpoint activity "
            f"for {quiet_s:.0f} s (stall timeout {timeout_s:.0f} s{derived}); "
            "stopping it",
            submission_id=job_id,
            quiet_s=round(quiet_s, 1),
            stall_timeout_s=round(timeout_s, 1),
        )
        self._retry(lambda: self.client.stop_job(job_id))
        deadline = self.clock.monotonic() + 120  # Ray SIGKILLs 3 s after SIGTERM by default
        while not self._retry(lambda: self.client.get_job_status(job_id)).is_terminal():
            if self.clock.monotonic() > deadline:
                raise RuntimeError(f"{job_id} did not stop within 120 s after the stall")
            if self._pause(self.config.poll_s):
                return None
        return "STALLED"

    def _ended(self, state: RunState, ended: str, for_node_end: bool | None = None) -> None:
        """Record how the attempt ended; the judgement (preemption or not) comes in _decide.
        `for_node_end`: the attempt stopped after saving before its flex-start nodes' end (read
        from its log when None); the run goes on as after a preemption."""
        job_id, spec = state.current or "", self.spec
        if for_node_end is None:
            for_node_end = self._stopped_for_node_end(job_id, ended)
        # Watching ends with the record below: an error before it (the dashboard answering
        # badly while the end is read) is retried from the attempt's end, never skips it.
        state.charged = False
        state.ended_ms = int(self.clock.time() * 1000)
        state.hosts = self._hosts(job_id)
        state.ended_at = self.clock.monotonic()
        state.end_entries = checkpoint_entries(spec.checkpoint_dir)
        new_ckpt = bool(state.end_entries - state.baseline) if state.has_baseline else None
        stepped = self._steps(job_id)
        # Progress is a new checkpoint or a completed training step (issue 24 item 6).
        # The first failure has no checkpoints to compare with, but its own steps still count.
        state.own_progress = (stepped > 0 or None) if new_ckpt is None else new_ckpt or stepped > 0
        progressed = (
            None
            if state.own_progress is None
            else state.own_progress or state.prev_progressed is True
        )
        gpus, _ = self._observe()
        capacity = (
            # "2 of 1 GPUs" read as a count out of a total (issue 29): the GPUs there, then the need.
            f"; the cluster has {gpus:g} GPUs ({spec.gpus_needed} needed)"
            if spec.gpus_needed > 0
            else ""
        )
        ckpt = {
            None: "no earlier failure to compare checkpoints with",
            True: "new checkpoint since the previous failure",
            False: "no new checkpoint since the previous failure",
        }[new_ckpt]
        if stepped:
            ckpt += f"; {stepped} training step(s) completed"
        exit_code = None if for_node_end else self._exit_code(job_id, ended)
        why = (
            ": it saved and stopped before its flex-start nodes reach their maximum run "
            "duration; the run goes on on new nodes (counted as a preemption)"
            if for_node_end
            else ("" if exit_code is None else f" (exit code {exit_code})")
        )
        self.record(
            ev.ATTEMPT_ENDED,
            f"{job_id} {ended}{why}{capacity}; {ckpt}",
            attempt=state.attempt,
            submission_id=job_id,
            status=ended,
            gpus=gpus,
            new_checkpoint=new_ckpt,
            steps_completed=stepped,
            ended_ms=state.ended_ms,
            exit_code=exit_code,
            **({"saved_for_node_end": True} if for_node_end else {}),
        )
        state.watching = False
        self._keep_progress(job_id)
        state.situation = Situation(
            # Ray says SUCCEEDED; for the policy it is a node lost, known in advance.
            ended="FAILED" if for_node_end else ended,  # type: ignore[arg-type]
            restarts_used=state.restarts,
            max_restarts=spec.max_restarts,  # type: ignore[arg-type]
            gpus_needed=spec.gpus_needed,
            gpus_at_end=gpus,
            gpus_now=gpus,
            progressed=progressed,
            max_wait_s=self.spec.capacity_deadline_s,
            preemptions_used=state.preemptions,
            max_preemptions=spec.max_preemptions,
            settle_s=self.config.settle_s,
            stepped=stepped > 0,
            preempted=for_node_end,
            exit_code=exit_code,
        )

    def _keep_progress(self, job_id: str) -> None:
        """The attempt's step lines beside its record, for its goodput after the head is gone;
        best effort: the record itself is what the run needs."""
        if self.store is None:
            return
        try:
            lines = self.probes.progress_lines(job_id)
            if lines:
                self.store.keep_progress(job_id, lines)
        except (OSError, RuntimeError, ValueError, http.client.HTTPException):
            pass

    def _stopped_for_node_end(self, job_id: str, ended: str) -> bool:
        spec = self.spec
        if ended != "SUCCEEDED" or spec.node_max_run_s <= 0:
            return False
        if spec.save_before_node_end != node_end.NEMO_RL:
            return False  # veRL saves and trains on until the node ends: a preemption
        try:
            return self.probes.stopped_for_node_end(job_id)
        except (OSError, RuntimeError, ValueError, http.client.HTTPException):
            return False  # unreadable: the end Ray reports stands

    def _judge(self, state: RunState) -> Situation:
        """The ended attempt's situation, preempted once Ray's node table shows a node lost
        during it (recorded once)."""
        s = state.situation
        assert s is not None
        if s.ended in ("FAILED", "STALLED") and not s.preempted:
            # A death marked later than the attempt's end plus the settle time is not its
            # cause (Ray marks a lost node dead within ~50 s, the settle covers that).
            latest = state.ended_ms + int(self.config.settle_s * 1000)
            deaths = node_events.deaths_during(
                self._nodes,
                state.started_ms,
                min(int(self.clock.time() * 1000), latest),
                self.spec.gpus_needed,
                state.hosts,
            )
            if deaths:
                s = state.situation = replace(s, preempted=True)
                self.record(
                    ev.PREEMPTED,
                    f"{state.current} preempted: "
                    + "; ".join(d.describe() for d in deaths)
                    + f" (preemption {state.preemptions + 1} of "
                    f"{self.spec.max_preemptions}; not counted as a restart)",
                    attempt=state.attempt,
                    submission_id=state.current,
                    nodes=[d.node_id for d in deaths],
                )
        return s

    # ------------------------------------------------------------------ decisions

    def _decide(self, state: RunState) -> tuple[Decision, Situation]:
        """Ask the policy; while it says wait (settle or capacity), poll and record."""
        waiting_since: float | None = None
        noted: Reason | None = None
        last_note = 0.0
        while True:
            gpus, stable = self._observe()
            now = self.clock.monotonic()
            base = (
                self._judge(state)
                if state.situation is not None
                else Situation(
                    ended=None,
                    restarts_used=0,
                    max_restarts=self.spec.max_restarts,
                    gpus_needed=self.spec.gpus_needed,
                    gpus_at_end=0.0,
                    gpus_now=0.0,
                    progressed=None,
                    max_wait_s=self.spec.capacity_deadline_s,
                )
            )
            if base.ended is not None:
                stable = min(stable, now - state.ended_at)
            probed = self._probe()
            s = replace(
                base,
                gpus_free=None if probed is None else probed.gpus_free,
                hosts_answered=(
                    probed is not None
                    and state.hosts is not None
                    and state.hosts <= probed.answering
                ),
                gpus_now=gpus,
                stable_s=stable,
                settle_s=self.config.settle_s,
                stop_requested=self.stopping.is_set(),
                waited_s=0.0 if waiting_since is None else now - waiting_since,
            )
            d = decide(s)
            if d.action != Action.WAIT:
                if waiting_since is not None and d.action == Action.SUBMIT:
                    self._note_back(gpus, s)
                return d, s
            if d.reason == Reason.GPUS_BUSY and d.reason != noted and self._next_exists(state):
                # The GPUs are busy with our own next attempt, submitted before an error hid
                # it from us (a lost answer, then a malformed one: found by the simulation,
                # seed 558); the submit step adopts it.
                return Decision(Action.SUBMIT, Reason.CAPACITY, d.message), s
            if d.reason in _CAPACITY_WAITS and waiting_since is None:
                waiting_since = now
            if d.reason != noted:
                # Missing GPUs then busy ones (a replacement joined, its GPUs not yet reported
                # free) are one wait for capacity, said once.
                same_wait = d.reason in _CAPACITY_WAITS and noted in _CAPACITY_WAITS
                noted, last_note = d.reason, now
                if not same_wait:
                    self._note_wait(d, s)
            elif now - last_note >= self.config.progress_s and d.reason in _CAPACITY_WAITS:
                last_note = now
                self.record(
                    ev.STILL_WAITING,
                    (
                        "still scaling up: waiting"
                        if self.gpu_requests is not None
                        else "still waiting"
                    )
                    + f" for {s.gpus_needed} GPUs "
                    f"({s.waited_s:.0f} s{_deadline(s)}; the cluster has {gpus:g}{_free(s)})",
                    gpus=gpus,
                    gpus_needed=s.gpus_needed,
                    waited_s=round(s.waited_s, 1),
                )
            if self.lost.is_set():
                raise _LeaseLost()
            self._pause(self.config.poll_s)

    def _note_back(self, gpus: float, s: Situation) -> None:
        message, scaled = f"{gpus:g} GPUs back after waiting {s.waited_s:.0f} s", {}
        if self.gpu_requests is not None and self._scaling_since is not None:
            # The time from the autoscaler seeing the request short to the workers alive
            # (node boot and image pull on GKE): what a run on demand pays before it trains.
            took = self.clock.monotonic() - self._scaling_since
            self._scaling_since = None
            message = f"GPU workers up: {gpus:g} GPUs {took:.0f} s after scaling up began"
            scaled = {"scale_up_s": round(took, 1)}
        self.record(
            ev.GPUS_BACK,
            message,
            gpus=gpus,
            gpus_needed=s.gpus_needed,
            waited_s=round(s.waited_s, 1),
            **scaled,
        )

    def _note_wait(self, d: Decision, s: Situation) -> None:
        if d.reason == Reason.SETTLING:
            self.record(
                ev.SETTLING,
                f"{d.message} (JOBS_SUPERVISOR_SETTLE_S)",
                settle_s=s.settle_s,
                gpus=s.gpus_now,
                gpus_needed=s.gpus_needed,
            )
        else:
            # On GPUs that scale on demand a missing GPU is a scale-up in progress, said so.
            scaling = self.gpu_requests is not None and d.reason == Reason.NO_CAPACITY
            if scaling and self._scaling_since is None:
                self._scaling_since = self.clock.monotonic()
            what = (
                f"scaling up: Ray's autoscaler is adding GPU workers for {s.gpus_needed} GPUs"
                if scaling
                else f"waiting for {s.gpus_needed} GPUs"
            )
            self.record(
                ev.WAITING,
                f"{what} since {ev.now_iso()} (the cluster has {s.gpus_now:g}{_free(s)}; "
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
                since=ev.now_iso(),
                max_wait_s=s.max_wait_s,
                **({"scaling_up": True} if scaling else {}),
            )

    def _user_stop(self) -> bool:
        """The stop is the user's (`stop RUN`): without a run record nothing could re-arm the
        run, so any SIGTERM is final; with one, only a recorded stop request is (a head pod
        deleted by an upgrade sends SIGTERM too, and that run must be re-armed)."""
        if self.store is None:
            return True
        return ev.stop_requested(self.store.events())

    def _stopped(self, state: RunState | None) -> int:
        if not self._user_stop():
            return self._interrupted(state)
        stopped = ""
        current = state.current if state is not None else None
        if current is not None:
            try:
                status = self.client.get_job_status(current)
                if not status.is_terminal():
                    self.client.stop_job(current)
                    stopped = f"; {current} stopped"
            except (RuntimeError, OSError, ValueError):
                pass
        self._release_gpus()  # before the final record: `list` shows the last one
        self.record(
            ev.STOPPED,
            f"stopped by the user{stopped}; nothing is resubmitted",
            reason=Reason.STOPPED_BY_USER.value,
        )
        return 0

    def _interrupted(self, state: RunState | None) -> int:
        """SIGTERM without a stop request: leave the attempt running and the run to the
        re-armer (the lease is released on the way out), record why, and never call it an end."""
        current = state.current if state is not None else None
        self.record(
            ev.INTERRUPTED,
            "the supervisor was terminated without a stop request (the head pod going "
            f"away?); {current or 'no attempt'} is left as it is and the run will be re-armed",
            submission_id=current,
        )
        return 0

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
        if self.store is not None and self.lease is not None and not self.lost.is_set():
            self.store.release(self.lease)
        return code

    def _ask_gpus(self) -> None:
        """Ask Ray's autoscaler for the run's GPU nodes, once per supervisor (the request
        stays in the cluster until released; a re-armed supervisor asks again, harmlessly)."""
        if self.gpu_requests is None or self._gpus_asked:
            return
        spec = self.spec
        wanted = scale_up.bundles(spec.gpus_needed, spec.gpus_per_node)
        sent = self.gpu_requests.ask(spec.run, self.own_id, wanted)
        self._gpus_asked = True
        others = len(sent) - len(wanted)
        self.record(
            ev.GPUS_REQUESTED,
            f"asked Ray's autoscaler for {scale_up.describe(wanted)}: GPU nodes scale on "
            "demand on this stack; the request holds them until the run ends"
            + (
                f" (the cluster's request also keeps {others} node(s) of other runs)"
                if others
                else ""
            ),
            bundles=wanted,
            cluster_bundles=len(sent),
        )

    def _release_gpus(self) -> None:
        """The run is over: drop its request so idle GPU nodes can go (gpu.idleMinutes), also
        one an earlier supervisor of the run made (this one may end before asking: a stop
        during its restore)."""
        if self.gpu_requests is None:
            return
        try:
            left = self.gpu_requests.drop(self.spec.run)
        except Exception as e:  # the run is over: say what was not released, never raise
            self.record(
                ev.ERROR,
                f"could not release the run's GPU request ({type(e).__name__}: {e}); idle GPU "
                "nodes stay until another run's request replaces it",
                error=type(e).__name__,
            )
            return
        self.record(
            ev.GPUS_RELEASED,
            "released the run's GPU request: its GPU nodes are removed once idle for "
            "gpu.idleMinutes"
            + (f" (other runs still ask for {scale_up.describe(left)})" if left else ""),
            cluster_bundles=len(left),
        )

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
                if self.stopping.is_set() and (taken or self._user_stop()):
                    return self._stopped(state)
                if not taken:
                    if not self._take_run():
                        return 0
                    taken = True
                    if self.stopping.is_set():
                        return self._stopped(state)
                if state is None:
                    self.state = state = restore(self)
                    if state.stop_requested:  # the run was stopped before we came
                        return self._stopped(state)
                return self._loop(state)
            except _LeaseLost:
                return self._left()
            except Exception as e:
                if self.stopping.is_set():
                    return self._stopped(state)
                text = " ".join(str(e).split())[:500]
                self.record(
                    ev.ERROR,
                    f"unexpected error, retrying in {backoff:.0f} s: {type(e).__name__}: {text}",
                    error=type(e).__name__,
                )
                if self._pause(backoff):
                    return self._stopped(state)
                backoff = min(backoff * 2, self.config.backoff_max_s)

    def _loop(self, state: RunState) -> int:
        spec = self.spec
        self._ask_gpus()
        while True:
            if state.watching:
                ended = self._watch(state)
                if ended is None:
                    return self._stopped(state)
                if ended == "LOST":
                    raise _LeaseLost()
                self._ended(state, ended)
            d, s = self._decide(state)
            if d.action == Action.FINISH:
                self._release_gpus()  # before the final record: `list` shows the last one
                self.record(
                    ev.FINISHED,
                    f"run {spec.run} succeeded ({state.current})",
                    reason=d.reason.value,
                )
                return 0
            if d.action == Action.GIVE_UP:
                if d.reason == Reason.STOPPED_BY_USER:
                    return self._stopped(state)
                self._release_gpus()  # before the final record: `list` shows the last one
                self.record(
                    ev.GAVE_UP,
                    f"gave up: {d.message}",
                    reason=d.reason.value,
                    attempt=state.attempt or None,
                )
                return 0
            if s.ended is not None and not state.charged:
                state.charged = True
                if s.preempted:
                    state.preemptions += 1
                else:
                    state.restarts += 1
                    if s.ended != "STALLED":
                        # A stall says nothing about the code (an NCCL wait on a lost peer): it
                        # is never the first of a crash's two failures (simulation, seed 386).
                        state.baseline, state.has_baseline = state.end_entries, True
                        state.prev_progressed = state.own_progress
            if not self._submit_next(state, d):
                return self._stopped(state)

    def _export_hold(self) -> str | None:
        """A live export job of this run (`rl-jobs export`, metadata kind=export)."""
        for job in self._retry(self.client.list_jobs) or []:
            meta = job.metadata or {}
            if (
                meta.get("kind") == protocol.EXPORT
                and meta.get("run") == self.spec.run
                and not job.status.is_terminal()
            ):
                return job.submission_id
        return None

    def _between_attempts(self, state: RunState) -> bool:
        """Wait while an export holds the run (no pruning, no attempt), then prune to keep-N;
        False when a stop came meanwhile."""
        noted = False
        while (holder := self._export_hold()) is not None:
            if not noted:
                noted = True
                self.record(
                    ev.HELD,
                    f"{holder} is exporting this run: no checkpoint is pruned "
                    "and no attempt started until it ends",
                    export=holder,
                )
            if self._pause(self.config.poll_s):
                return False
        spec = self.spec
        if state.situation is not None and spec.keep > 0 and spec.checkpoint_dir:
            removed = hygiene.prune(spec.checkpoint_dir, spec.keep, held=False)
            if removed:
                self.record(
                    ev.PRUNED,
                    f"pruned {', '.join(removed)} (keeps the newest "
                    f"{spec.keep} complete checkpoint(s))",
                    removed=removed,
                )
        return True

    def _earlier_submit(self, attempt: int) -> Any:
        """Ray's record of the attempt when it is already there (a submit whose answer was
        lost, then an error before the retry learnt it was taken), `_STOPPED` on a stop, else
        None (404: not submitted)."""
        job_id = self.spec.attempt_id(attempt)
        try:
            info = self._retry(lambda: self.client.get_job_info(job_id))
        except RuntimeError as e:
            if not errors.is_not_found(e):
                raise
            return None
        return _STOPPED if info is None else info

    def _next_exists(self, state: RunState) -> bool:
        found = self._earlier_submit(state.attempt + 1)
        return found is not None and found is not _STOPPED

    def _submit_next(self, state: RunState, d: Decision) -> bool:
        attempt = state.attempt + 1
        # Found by the simulation (seeds 169, 244, 487): the attempt may be running already,
        # unknown to us; pruning "between attempts" would delete its save in progress, and
        # judging it from now would miss a node it lost before.
        earlier = self._earlier_submit(attempt)
        if earlier is _STOPPED:
            return False
        note = ""
        if earlier is not None:
            job_id = self.spec.attempt_id(attempt)
            started_ms = int(earlier.start_time or self.clock.time() * 1000)
            note = f"; it was submitted earlier ({earlier.status.value}), its answer was lost"
        else:
            if not self._between_attempts(state):
                return False
            try:
                submitted = self.submit(attempt)
            except (RuntimeError, OSError) as e:
                lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
                raise RuntimeError(
                    f"Ray refused attempt {attempt}: {lines[-1] if lines else type(e).__name__}"
                ) from e
            if submitted is None:
                return False
            job_id, started_ms = submitted, int(self.clock.time() * 1000)
        state.attempt, state.current, state.watching = attempt, job_id, True
        state.started_ms = started_ms
        spent = []
        if state.restarts:
            spent.append(f"restart {state.restarts} of {self.spec.max_restarts}")
        if state.preemptions:
            spent.append(f"preemption {state.preemptions} of {self.spec.max_preemptions}")
        self.record(
            ev.SUBMITTED,
            f"submitted {job_id} ({d.message})" + (f", {', '.join(spent)}" if spent else "") + note,
            attempt=attempt,
            submission_id=job_id,
            restarts_used=state.restarts,
            preemptions_used=state.preemptions,
            started_ms=state.started_ms,
            baseline=sorted(state.baseline),
            has_baseline=state.has_baseline,
            prev_progressed=state.prev_progressed,
        )
        return True

    # ------------------------------------------------------------------ the lease

    def _take_run(self) -> bool:
        """Take the run (its lease on the runs root, and no older live supervisor in Ray).

        The lease and the spec come first, before any Jobs API call that may fail: a supervisor
        killed during the retries that follow leaves a run the re-armer knows (found by the
        simulation: killed after one malformed answer, the run was lost without a trace)."""
        other = None
        if self.store is not None and self.lease is None:
            # The lease before the spec: a re-armer only looks at runs with a spec.
            self.lease = self.store.acquire(self.own_id, self.config.lease_s)
            # A lease whose holder is gone (created but never written, its taker killed in
            # between; or a supervisor Ray has already ended) holds the run only until it
            # expires: waiting that out beats leaving the run to a re-arm of the previous
            # life's spec (seeds 3696, 4223: a resume left, and the re-arm gave the run up).
            while self.lease is None and self._holder_gone(self.store.lease()):
                if self._pause(self.config.poll_s):
                    return False
                self.lease = self.store.acquire(self.own_id, self.config.lease_s)
            if self.lease is None:
                held = self.store.lease()
                other = held.holder if held else "another supervisor"
            else:
                self._renewed_at = self.clock.monotonic()
                if self.renew_in_thread:
                    threading.Thread(target=self._keep_lease, daemon=True).start()
                # A new hand-off (not a re-arm) starts a new life: its spec is the one to re-arm.
                self.store.write_spec(self.spec.to_dict(), replace=not self.rearmed)
                _keep_working_dir(self.store, self.spec)
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

    def _holder_gone(self, lease: Lease | None) -> bool:
        """The lease's holder cannot renew it any more: never written, or a supervisor job
        that Ray has ended (or does not know)."""
        if lease is None:
            return False
        if lease.unwritten:
            return True
        if lease.holder == self.own_id:
            return False
        try:
            status = self._retry(lambda: self.client.get_job_status(lease.holder))
        except RuntimeError as e:
            return errors.is_not_found(e)
        except (OSError, ValueError, http.client.HTTPException):
            return False  # cannot tell: the holder keeps the run, as before
        return status is not None and status.is_terminal()

    def _keep_lease(self) -> None:
        while self.store is not None and self.lease is not None:
            if self.stopping.wait(self.config.lease_s / 3):
                return
            if not self._renew():
                return

    def _renew_if_due(self) -> None:
        if self.lease is not None and not self.lost.is_set():
            if self.clock.monotonic() - self._renewed_at >= self.config.lease_s / 3:
                self._renew()

    def _renew(self) -> bool:
        """Renew the lease; False once another supervisor took the run (sets `lost`)."""
        assert self.store is not None and self.lease is not None
        try:
            renewed = self.store.renew(self.lease)
        except OSError:
            return True  # Lustre hiccup: the next renewal may make it in time
        if renewed is None:
            self.lost.set()
            return False
        self.lease, self._renewed_at = renewed, self.clock.monotonic()
        return True

    def _left(self) -> int:
        self.record(
            ev.LEFT,
            "another supervisor took this run's lease (this one was thought "
            "gone); it drives the run from here",
            reason="lease_lost",
        )
        return 0

    def _set_gauges(self, job_id: str, reread: bool) -> None:
        """The run's gauges from the attempt's log; a log that cannot be read now waits for the
        next turn (the figures are for watching, never for a decision)."""
        try:
            self.probes.publish(self.spec.run, job_id, reread)
        except (OSError, RuntimeError, ValueError, http.client.HTTPException):
            pass

    def _steps(self, job_id: str) -> int:
        try:
            return self.probes.steps(job_id)
        except (OSError, RuntimeError, ValueError, http.client.HTTPException):
            return 0  # unknown: judged by checkpoints alone

    def _probe(self) -> Probed | None:
        if self.probes.capacity is None:
            return None
        try:
            return self.probes.capacity()
        except (OSError, ValueError, http.client.HTTPException):
            return None  # cannot tell now: the settle-time rule applies

    def _hosts(self, job_id: str) -> frozenset[str] | None:
        try:
            return self.probes.hosts(job_id)
        except (OSError, RuntimeError, ValueError, KeyError, http.client.HTTPException):
            return None  # unknown: any node that could have hosted it counts

    def _exit_code(self, job_id: str, ended: str) -> int | None:
        """A FAILED attempt's driver exit code, when Ray has it (the end is recorded without it
        when the dashboard cannot say)."""
        if ended != "FAILED":
            return None
        try:
            code = self.client.get_job_info(job_id).driver_exit_code
        except (RuntimeError, OSError, ValueError, http.client.HTTPException):
            return None
        return code if isinstance(code, int) else None


_CAPACITY_WAITS = (Reason.NO_CAPACITY, Reason.GPUS_BUSY)


def _free(s: Situation) -> str:
    """ ", 0 free" when the probe saw fewer GPUs free than present (held by other jobs)."""
    return "" if s.gpus_free is None or s.gpus_free >= s.gpus_now else f", {s.gpus_free:g} free"


def _deadline(s: Situation) -> str:
    return f" of the {s.max_wait_s:.0f} s deadline" if s.max_wait_s > 0 else ""


_STOPPED = object()  # a wait ended by a stop (SIGTERM) rather than by an answer


class _LeaseLost(Exception):
    """Another supervisor holds a newer lease on the run."""


def _keep_working_dir(store: RunStore, spec: Spec) -> None:
    """Copy the attempts' working dir (this job's own cwd: the same gcs:// package) next to the
    record, so a re-armer on a new cluster can upload it again (gcs:// packages die with GCS)."""
    import shutil

    target = store.dir / "working_dir"
    if not spec.runtime_env.get("working_dir") or target.exists():
        return
    tmp = store.dir / f".working_dir.{os.getpid()}"
    shutil.copytree(os.getcwd(), tmp, dirs_exist_ok=True)
    os.replace(tmp, target)


def _publish_code(runs_root: str) -> None:
    """Put the `jobs` package this supervisor runs at `<runs root>/.rearm/current/jobs`, where
    the head pod's re-armer sidecar imports it from (the framework image does not carry it;
    components/k8s/raycluster.py `rearm_container`). Versions are folders; `current` is a
    symlink swapped atomically, so a re-armer never imports a half-copied package."""
    import shutil

    base = os.path.join(runs_root, ".rearm")
    version = os.path.join(base, f"v{time.time_ns()}-{os.getpid()}")
    import jobs

    shutil.copytree(
        os.path.dirname(os.path.abspath(jobs.__file__)),
        os.path.join(version, "jobs"),
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    link = os.path.join(base, f".current.{os.getpid()}")
    os.symlink(os.path.basename(version), link)
    os.replace(link, os.path.join(base, "current"))
    for old in sorted(n for n in os.listdir(base) if n.startswith("v"))[:-3]:
        shutil.rmtree(os.path.join(base, old), ignore_errors=True)  # keep the newest three


def restore(sup: Supervisor) -> RunState:
    """Where the run stands: fresh from the spec, or, when the run's current life (events.life)
    holds earlier supervisors' decisions (a re-arm), from their last attempt, which is adopted
    when it is still on this cluster and counted as preempted with the head when Ray answers
    that it does not know it (404). Any other failure to ask is raised, never read as "lost":
    a second attempt must never start beside a live one. With `stop_requested` when the user
    asked the run to stop before this supervisor came (its last attempt is then stopped)."""
    spec = sup.spec
    recs = ev.life(sup.store.events()) if sup.store is not None else []
    submitted = [r for r in recs if r.get("event") == ev.SUBMITTED]
    if ev.stop_requested(recs):
        last_id = str(submitted[-1]["submission_id"]) if submitted else None
        return RunState(attempt=spec.first_attempt - 1, current=last_id, stop_requested=True)
    if not submitted:
        return RunState(attempt=spec.first_attempt - 1)
    last = submitted[-1]
    state = RunState(
        attempt=int(last["attempt"]),
        restarts=int(last.get("restarts_used", 0)),
        preemptions=int(last.get("preemptions_used", 0)),
        current=str(last["submission_id"]),
        started_ms=int(last.get("started_ms", 0)),
        baseline=frozenset(last.get("baseline", [])),
        has_baseline=bool(last.get("has_baseline", False)),
        prev_progressed=last.get("prev_progressed"),
    )
    after = recs[recs.index(last) + 1 :]
    ended = [r for r in after if r.get("event") == ev.ATTEMPT_ENDED]
    try:  # a dashboard still starting is waited for; a 404 is an answer
        status = sup._retry(lambda: sup.client.get_job_status(state.current))
    except RuntimeError as e:
        if not errors.is_not_found(e):
            raise
        status = None  # not on this cluster: the head (and the attempt) were lost
    if status is None and sup.stopping.is_set():
        return state  # a stop came while the dashboard was away: `_drive` ends the run
    stalled = any(r.get("event") == ev.STALLED for r in after)
    if status is not None and status.is_terminal() and (ended or stalled):
        # It ended under an earlier supervisor, which recorded how: a watchdog's stop is
        # STOPPED in Ray but STALLED here, and must be restarted, not taken for the user's
        # (found by the simulation, seed 171).
        sup._ended(state, ended[-1]["status"] if ended else "STALLED", _for_node_end(ended))
        if any(r.get("event") == ev.PREEMPTED for r in after):
            state.situation = replace(state.situation, preempted=True)  # type: ignore[arg-type]
        return state
    if status is not None:
        state.watching = True  # watch returns at once when it has ended meanwhile
        sup.record(
            ev.ADOPTED,
            f"re-armed: took over {state.current} ({status.value}), "
            f"{state.restarts} restart(s) and {state.preemptions} preemption(s) used",
            attempt=state.attempt,
            submission_id=state.current,
        )
        return state
    sup._ended(state, ended[-1]["status"] if ended else "FAILED", _for_node_end(ended))
    if not ended or any(r.get("event") == ev.PREEMPTED for r in after):
        state.situation = replace(state.situation, preempted=True)  # type: ignore[arg-type]
        sup.record(
            ev.PREEMPTED,
            f"{state.current} was lost with the cluster's head "
            "(not on this cluster any more); counted as a preemption",
            attempt=state.attempt,
            submission_id=state.current,
        )
    return state


def _for_node_end(ended: list[dict[str, Any]]) -> bool:
    """An attempt's end as its record says it (its log may be gone with the head)."""
    return bool(ended and ended[-1].get("saved_for_node_end"))


def _own_working_dir() -> str | None:
    """This job's working_dir URI: Ray hands a job driver its runtime env in
    RAY_JOB_CONFIG_JSON_ENV_VAR (reference §4.5)."""
    try:
        config = json.loads(os.environ.get("RAY_JOB_CONFIG_JSON_ENV_VAR", "{}"))
        return config.get("runtime_env", {}).get("working_dir") or None
    except (ValueError, AttributeError):
        return None


def _probes(client: Any, dashboard: str, ctx: Any) -> Probes:
    """The node table over the dashboard's state API, and an attempt's log size: its driver
    log file on this node (an entrypoint without resources runs on the head, next to us), else
    the Jobs API's copy, read at most every 10 s."""
    logs = os.path.join(str(ctx.address_info.get("session_dir", "")), "logs")
    cache: dict[str, tuple[float, int]] = {}
    publishers: dict[str, run_gauges.Publisher] = {}
    read_at: dict[str, tuple[float, str]] = {}  # the last log read: attempt -> (when, text)

    def log_size(job_id: str) -> int:
        try:
            return os.stat(os.path.join(logs, f"job-driver-{job_id}.log")).st_size
        except OSError:
            pass
        at, size = cache.get(job_id, (0.0, -1))
        if time.monotonic() - at >= 10.0:
            size = len(client.get_job_logs(job_id))
            cache[job_id] = (time.monotonic(), size)
        return size

    def publish(run: str, job_id: str, reread: bool) -> None:
        if run not in publishers:
            publishers[run] = run_gauges.Publisher(run)
        if reread:
            publishers[run].publish(progress.progress_lines(recent_log(job_id)))
        else:
            publishers[run].refresh()

    def log(job_id: str) -> str:
        try:
            with open(os.path.join(logs, f"job-driver-{job_id}.log"), errors="replace") as f:
                text = f.read()
        except OSError:
            text = client.get_job_logs(job_id)  # a driver on another node: the whole log
        read_at.clear()  # one attempt's text at a time: a log can be large
        read_at[job_id] = (time.monotonic(), text)
        return text

    def recent_log(job_id: str) -> str:
        """The log as read in the last 25 s (the watchdog reads it every 30 s while it grows),
        else now: the gauges need not fetch a remote driver's whole log a second time. Only for
        figures to watch; decisions read `log`."""
        at, text = read_at.get(job_id, (float("-inf"), ""))
        return text if time.monotonic() - at < 25.0 else log(job_id)

    def hosts(job_id: str) -> frozenset[str] | None:
        ray_job_id = client.get_job_info(job_id).job_id
        return node_events.hosts(dashboard, ray_job_id) if ray_job_id else None

    return Probes(
        nodes=lambda: node_events.fetch(dashboard),
        log_size=log_size,
        steps=lambda job_id: progress.completed_steps(log(job_id)),
        hosts=hosts,
        capacity=lambda: capacity_probe.probe(dashboard),
        stopped_for_node_end=lambda job_id: node_end.stopped_for_node_end(log(job_id)),
        progress_lines=lambda job_id: progress.progress_lines(log(job_id)),
        publish=publish,
    )


def _job_alive(client: Any, submission_id: str) -> bool:
    """A job Ray still runs; only a job Ray does not know (404) or an ended one is gone: an
    answer lost to a restarting dashboard counts as alive (scale_up.Requests)."""
    try:
        return not client.get_job_status(submission_id).is_terminal()
    except (RuntimeError, OSError, http.client.HTTPException) as e:
        return not (isinstance(e, RuntimeError) and errors.is_not_found(e))


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
    supervisor = from_job(
        client,
        own_id,
        own.metadata,
        _probes(client, dashboard, ctx),
        Settings.from_env(),
        working_dir=_own_working_dir(),
        gpu_requests=scale_up.Requests(
            scale_up.RayKV(), scale_up.send_to_ray, lambda sid: _job_alive(client, sid)
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
