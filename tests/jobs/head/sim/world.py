"""A simulated world for the real supervisor: Ray's Jobs API, node table and GPU placement, a runs
root, a clock, and the faults of a seeded schedule.

What is real here: `jobs.head.supervisor.Supervisor` (built by `from_job` from a supervisor job's
metadata, as `main` does), `RunStore`, `Rearmer`, the restart policy, hygiene, the stop request,
and the files they write (on a tmpfs). What is simulated: everything they talk to. Time is
simulated: each supervisor process is a thread, but exactly one thread runs at a time, and a
supervisor's wait (`Clock.wait`) hands control to the world, which advances its clock to the next
thing due (a world event, or another supervisor's wake-up). So a run of schedules is
deterministic for a seed and hours of capacity wait cost microseconds.

The trainer is a model of NeMo RL's or veRL's (`Schedule.framework`): an attempt's driver starts,
places its GPU workers (fails after a placement timeout when the GPUs are not there), loads, then
makes one step every `STEP_S` and saves every `SAVE_EVERY` steps; it fails a little after a node
hosting its workers dies; it succeeds at `TARGET_STEPS`. NeMo RL saves into `tmp_step_N`, renamed
`step_N` when done, and resumes from the highest complete `step_N`. veRL saves into
`global_step_N/actor` (its own keep rule first), then writes its tracker, and resumes from the
step its tracker names (see `_save_verl` and `_verl_resume` for the upstream lines). On flex-start
GPUs (`Schedule.node_max_run_s`) each GPU node ends at its maximum run duration and a new one
joins later; each trainer saves before the end as the supervisor told it: NeMo RL once its
`checkpoint_must_save_by` is near, then returns (its job SUCCEEDS unfinished), veRL at every
step once its ESI expiry is near, training on until the node ends (`_save_due`).
"""

from __future__ import annotations

import heapq
import itertools
import json
import os
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobs.client.api import JobsAPIError
from jobs.client.types import JobStatus
from jobs.head import events as ev
from jobs.head import hygiene, node_end, protocol, scale_up, stop
from jobs.head.capacity_probe import Probed
from jobs.head.clock import Clock
from jobs.head.files import Files
from jobs.head.probes import Probes
from jobs.head.protocol import Settings, Spec
from jobs.head.rearm import Rearmer
from jobs.head.run_store import RunStore
from jobs.head.supervisor import from_job
from jobs.runs import goodput
from tests.jobs.head.memory_kv import DictKV
from tests.jobs.head.sim import baton
from tests.jobs.head.sim.baton import Runner
from tests.jobs.head.sim.heads import ClusterView, SecondHead
from tests.jobs.head.sim.memfs import MemFiles

RUN = "sim"
GPUS_PER_NODE = 8
NODES = 2
# Simulated time is coarse (a poll every 2 min, steps of 2 min) so that thousands of schedules
# run in seconds; what matters is the order of events, which the faults land anywhere in.
STEP_S = 120.0
SAVE_EVERY = 3
SAVE_S = 60.0
LOAD_S = 240.0
# The eval job `submit --eval-at-end` hands over (jobs/runs/eval_at_end.py builds the real one).
EVAL_JOB = {
    "entrypoint": f"python3 -m jobs.head.eval_job --step {protocol.EVAL_STEP} -- run_eval",
    "runtime_env": {"working_dir": "gcs://_ray_pkg_eval.zip"},
    "metadata": {"run": RUN, "kind": protocol.EVAL, "step": protocol.EVAL_STEP},
    "entrypoint_num_cpus": 1.0,
}
PLACEMENT_TIMEOUT_S = 90.0  # NeMo RL gives up on placement groups after about a minute
FAIL_AFTER_DEATH_S = 10.0  # NCCL / Ray notices a lost worker
DRIVER_START_S = 2.0
STOP_GRACE_S = 3.0  # Ray SIGKILLs a job's driver 3 s after SIGTERM
REARM_INTERVAL_S = 300.0  # production sweeps every 10 s; coarser here, same code
TARGET_STEPS = 30
HANDOFF_S = 120.0
SLOW_SUBMIT_S = 600.0  # a submit answered this late (api fault "slow"): sent before, taken then
FIRST_LOOK_S = 300.0  # by then the first supervisor has seen its first attempt's workers  # the CLI's wait for the supervisor's `armed` record (JOBS_HANDOFF_TIMEOUT)
SETTINGS = Settings(
    poll_s=120.0,
    max_wait_s=1800.0,
    settle_s=240.0,
    progress_s=3600.0,
    lease_s=600.0,
    backoff_max_s=600.0,
)
# The longest a stop may take: a lease to lapse, two re-armer sweeps, the stop's grace.
STOP_CARRIED_OUT_S = SETTINGS.lease_s + 2 * REARM_INTERVAL_S + 60
T0 = 1_800_000_000.0
# GPUs that scale on demand (Schedule.on_demand): Ray's autoscaler, modelled. It acts on the
# cluster's request every tick; a node it launches joins after a boot and a ~20 GiB image pull;
# a GPU node idle (no attempt on it) for IDLE_S beyond what the request covers is removed.
AUTOSCALE_TICK_S = 60.0
SCALE_UP_S = (180.0, 900.0)
IDLE_S = 900.0  # gpu.idleMinutes' default
LIVE = (JobStatus.PENDING, JobStatus.RUNNING)
# The last exception of a failed attempt's log (Ray's JobInfo.message ends with it).
LOST_WORKER = (
    "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task."
)
NO_PLACEMENT = (
    "TimeoutError: Timed out after 90 seconds while waiting for placement group to be ready."
)
# veRL's FSDP shard of rank 0 in a 16-GPU job (two nodes of eight), the file a save ends with
# (verl docs/advance/checkpoint.rst: model_world_size_{W}_rank_{R}.pt); its tracker file.
VERL_WEIGHTS = "model_world_size_16_rank_0.pt"
VERL_TRACKER = "latest_checkpointed_iteration.txt"
# The actor's shards are written before veRL's dataloader state and its tracker: a save cut in
# between leaves a step with weights that the tracker does not name yet.
VERL_WEIGHTS_AT = 0.75
# Flex-start: a new GPU node joins this long after one reached its maximum run duration (the
# Dynamic Workload Scheduler provisions it again).
FLEX_REPLACE_S = 900.0


def transient_error(seq: int) -> str:
    return (
        "torch.distributed.DistBackendError: [Rank 3] Watchdog caught collective operation "
        f"timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE) ran for 600000 milliseconds"
    )


def _mkdirs(base: Path, *names: str) -> None:
    """`os.makedirs(base/names..., exist_ok=True)` without its stat of every parent first: a
    schedule saves a dozen times. A folder left by an earlier attempt's cut save is reused."""
    path = str(base)
    for name in (None, *names):
        path = path if name is None else f"{path}/{name}"
        try:
            os.mkdir(path)
        except FileExistsError:
            pass


def remove_tree(path: str | Path) -> None:
    """`shutil.rmtree` of a folder this process made, on a tmpfs: without the open, stat and
    close of every folder that guard rmtree against symlinks swapped in by another user, which
    made it a twentieth of a schedule's time."""
    try:
        listing = os.scandir(path)
    except FileNotFoundError:
        return
    with listing:
        for entry in listing:
            if entry.is_dir(follow_symlinks=False):
                remove_tree(entry.path)
            else:
                os.unlink(entry.path)
    os.rmdir(path)


class Killed(BaseException):
    """SIGKILL of a supervisor process: unwinds its thread past every `except Exception`."""


class Violation(AssertionError):
    pass


# ---------------------------------------------------------------------------- scheduling


class SimClock(Clock):
    def __init__(self, world: World) -> None:
        self.world = world

    def time(self) -> float:
        return self.world.now

    def monotonic(self) -> float:
        return self.world.now - T0 + 1000.0

    def wait(self, event: threading.Event, seconds: float) -> bool:
        return self.world.wait(event, seconds)


# ---------------------------------------------------------------------------- Ray


@dataclass
class Job:
    submission_id: str
    metadata: dict[str, str]
    entrypoint: str
    status: JobStatus = JobStatus.PENDING
    driver_exit_code: int | None = None
    message: str | None = None  # Ray's: a failed driver's log tail
    sent_at: float | None = None  # a slow submit's request: sent then, taken later
    runtime_env: dict[str, Any] = field(default_factory=dict)
    submitted_at: float = 0.0
    # attempts
    nodes: tuple[str, ...] = ()
    hosted: tuple[str, ...] = ()  # where its workers ran: Ray's actor/task table keeps it
    step: int = 0
    start_step: int = 0
    token: int = 0
    ended_at: float | None = None
    reservations: dict[str, Any] = field(default_factory=dict)  # entrypoint_num_gpus, ...
    # veRL: the steps this trainer process saved, its keep rule's list (in memory only)
    saved: list[int] = field(default_factory=list)
    trainer_start: float = 0.0  # when its training loop began (NeMo RL's timeout counts from it)
    stopped_for_node_end: bool = False  # NeMo RL saved for its nodes' end and returned
    # (step, compute seconds, save seconds) as the trainer would log them (goodput's input)
    logged: list[list[float]] = field(default_factory=list)
    # supervisors
    runner: Runner | None = None
    sup: Any = None
    stop_asked: bool = False
    cluster: str = "A"  # whose job table holds it (two heads on one runs root: "A", "B")

    @property
    def start_time(self) -> int:
        """Ray's JobDetails.start_time: ms since the epoch."""
        return int(self.submitted_at * 1000)

    @property
    def kind(self) -> str:
        return self.metadata.get("kind", "")


@dataclass
class Node:
    node_id: str
    gpus: int
    start_ms: int
    alive: bool = True  # the truth
    marked_dead_ms: int | None = None  # what Ray's node table says, late
    is_head: bool = False
    message: str = ""
    ends_at: float | None = None  # flex-start: when its VM reaches its maximum run duration
    _row: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    _row_key: tuple[int | None, str] | None = field(default=None, repr=False, compare=False)

    def row(self) -> dict[str, Any]:
        key = (self.marked_dead_ms, self.message)
        if self._row is None or self._row_key != key:  # read at every poll, changed rarely
            self._row, self._row_key = self._build_row(), key
        return self._row

    def _build_row(self) -> dict[str, Any]:
        return {
            "node_id": self.node_id,
            "state": "DEAD" if self.marked_dead_ms is not None else "ALIVE",
            "resources_total": {"GPU": float(self.gpus)} if self.gpus else {"CPU": 8.0},
            "start_time_ms": self.start_ms,
            "end_time_ms": self.marked_dead_ms or 0,
            "is_head_node": self.is_head,
            "state_message": self.message,
        }


@dataclass
class Fault:
    at: float
    kind: str
    arg: float = 0.0
    detail: str = ""  # api: "<answer>" or "<answer>@<method>" (else random answers, any call)

    def __str__(self) -> str:
        detail = f", {self.detail!r}" if self.detail else ""
        return f"Fault({self.at:g}, {self.kind!r}, {self.arg:g}{detail})"


@dataclass
class Schedule:
    seed: int
    faults: list[Fault]
    keep: int = 1
    capacity_deadline_s: float = 0.0
    declare_gpus: bool = True  # False: `run -- COMMAND` without --gpus (the spec needs 0)
    spare_nodes: int = 0  # GPU nodes beyond what the run needs (another team's, a warm spare)
    stall_timeout_s: float = 0.0  # the spec's (0: no watchdog)
    reserve_gpus: float = 0.0  # `run --gpus N`: what every attempt's driver reserves
    save_every: int = SAVE_EVERY  # the trainer's save period, in steps
    target_steps: int = TARGET_STEPS  # the step the run succeeds at
    # The supervisor probes which nodes answer and the GPUs free on them (settle by probing);
    # False: no probe (the dashboard cannot say), the settle-time rule.
    probe_capacity: bool = True
    # GPU nodes that scale on demand (`gpu.scaling: on-demand`): none until the run's supervisor
    # asks Ray's autoscaler for them; idle ones beyond the request are removed.
    on_demand: bool = False
    from_seed: bool = False  # made by random_schedule(seed), which replays it too
    slow_submits: bool = False  # random_schedule(seed, slow_submits=True) made it
    races: bool = False  # random_schedule(seed, races=True) made it
    # `submit --eval-at-end`: the spec carries an eval job, sent by the supervisor at the run's
    # success; `eval_refused`: the dashboard refuses that submit with this answer (HTTP 400).
    eval_at_end: bool = False
    eval_refused: str = ""
    # The trainer modelled: "nemo-rl" or "verl"; veRL's `trainer.max_actor_ckpt_to_keep`
    # (0: null, every save kept; the product refuses 1, jobs/recipes).
    framework: str = "nemo-rl"
    verl_keep: int = 0
    # Flex-start GPUs: each GPU node's maximum run duration (0: none). The nodes up at the
    # submit started earlier, by up to `flex_age` of it (drawn per schedule).
    node_max_run_s: float = 0.0
    flex_age: float = 0.0

    def describe(self) -> str:
        """The schedule as Python that replays it with `simulate(schedule, folder)`."""
        faults = "".join(f"\n        {f}," for f in self.faults)
        return (
            f"Schedule(seed={self.seed}, keep={self.keep}, "
            f"capacity_deadline_s={self.capacity_deadline_s:g}, "
            f"declare_gpus={self.declare_gpus}, spare_nodes={self.spare_nodes}, "
            f"stall_timeout_s={self.stall_timeout_s:g}, "
            f"reserve_gpus={self.reserve_gpus:g}, save_every={self.save_every}, "
            f"target_steps={self.target_steps}, probe_capacity={self.probe_capacity}, "
            f"on_demand={self.on_demand}, eval_at_end={self.eval_at_end}, "
            f"eval_refused={self.eval_refused!r}, framework={self.framework!r}, "
            f"verl_keep={self.verl_keep}, node_max_run_s={self.node_max_run_s:g}, "
            f"flex_age={self.flex_age:g}, faults=[{faults}\n    ])"
        )


class World:
    """One simulated cluster, runs root and user, driven through one schedule."""

    def __init__(self, schedule: Schedule, base: Path, files: Files | None = None) -> None:
        self.schedule = schedule
        self.rng = random.Random(schedule.seed * 7919 + 1)
        self.now = T0
        self.horizon = T0
        self.clock = SimClock(self)
        self.queue: list[tuple[float, int, Callable[[], None]]] = []
        self.seq = itertools.count()
        self.runners: list[Runner] = []
        self.driver = Runner("driver")
        self._local = threading.local()
        self.ending = False
        self.root = base / "runs"
        # The runs root is in memory by default (the same contract as the POSIX one,
        # jobs/head/files.py: fsync per record made the run store most of a schedule's time);
        # the checkpoint dir is a real folder: the trainer, pruning and completion read it.
        self.files = MemFiles(lambda: self.now) if files is None else files
        self.ckpt = base / "ckpt"
        # Every cluster's jobs, keyed by `key(cluster, sid)`: the primary cluster's by their id,
        # a second head's (tests/jobs/head/sim/heads.py) by "B/<id>". The invariants read them all.
        self.jobs: dict[str, Job] = {}
        self.primary = "A"
        # Each head's Ray session (`GET /api/version` `session_name`), which its supervisors and
        # re-armer write into the leases they take: new with every head pod (a head back after a
        # loss is a new one).
        self.sessions = {self.primary: "session_A_0"}
        self.heads = SecondHead(self)
        if isinstance(self.files, MemFiles):  # the race needs a runs root that can switch
            self.files.before_create = self.heads.hook
        self.head_up = True
        self.head_losses = 0
        self.rearmers: list[Rearmer] = []
        self._store: RunStore | None = None
        self.rearmer_up = True
        self.api_faults: list[tuple[str, str]] = []  # (answer, method or "")
        self.nodes: list[Node] = []
        self.node_ids = itertools.count(1)
        self.history: list[str] = []  # what happened, for a failing seed's report
        # ground truth
        self.newest_complete = 0
        # At each flex-start node end, the steps its attempt had made since its last save.
        self.node_end_losses: list[int] = []
        self._ckpt_seen: tuple[int, int] = (0, -1)
        self.stop_at: float | None = None  # the user's last stop, while not resumed since
        self.succeeded = False
        self.attempts_seen: set[str] = set()
        self.error: BaseException | None = None
        self.violation: str | None = None
        self._add_node(0, head=True)
        # Ray's autoscaler (on demand only): the cluster's request, as the GCS holds it, the
        # runs' requests in Ray's internal KV, nodes launched and not yet joined.
        self.kv = DictKV()
        self.asked: list[scale_up.Bundle] = []
        self.rival_union = False  # armed: the next larger request is lost to another run's
        self.launching = 0
        self.stockout_until = 0.0
        self.idle_since: dict[str, float] = {}
        self.scale_downs = 0
        self.in_flight = 0  # slow submits Ray has yet to take
        self.api_clear_at = T0  # when the last faulty API answer was given
        self.rearmer_back_at = T0  # when the re-armer (and its head) last came back
        self.stale_since: dict[str, float] = {}  # supervisor -> when a newer lease was first seen
        ages = random.Random(schedule.seed + 8_000_003)
        for _ in range(0 if schedule.on_demand else NODES + schedule.spare_nodes):
            age = ages.uniform(0, schedule.flex_age) * schedule.node_max_run_s
            self._add_node(GPUS_PER_NODE, started=self.now - age)

    # ------------------------------------------------------------------ scheduler

    def at(self, t: float, fn: Callable[[], None]) -> None:
        heapq.heappush(self.queue, (t, next(self.seq), fn))

    def _next_runner(self) -> Runner:
        """Process world events until a runner is due; that runner."""
        while True:
            if any(r.done for r in self.runners):
                self.runners = [r for r in self.runners if not r.done]
            task = min(self.runners, key=lambda r: (r.due(self.now), r.order), default=None)
            t_task = task.due(self.now) if task else float("inf")
            if self.ending:
                return task or self.driver
            if self.violation is not None or self.over():
                return self.driver
            t_ev = self.queue[0][0] if self.queue else float("inf")
            if task is not None and t_task <= t_ev and t_task <= self.horizon:
                self.now = max(self.now, t_task)
                return task
            if t_ev <= self.horizon:
                t, _, fn = heapq.heappop(self.queue)
                self.now = max(self.now, t)
                try:
                    fn()
                except Exception as e:  # a bug of the simulation itself
                    self.fail(f"world event raised {type(e).__name__}: {e}")
                self.check()
                continue
            self.now = max(self.now, self.horizon)
            return self.driver

    def _switch(self, me: Runner, to: Runner) -> None:
        if to is me:
            return
        to.give()
        me.take()

    def wait(self, event: threading.Event, seconds: float) -> bool:
        me = self._me()
        if me.killed:
            raise Killed()
        if not event.is_set():
            me.wake, me.event = self.now + max(seconds, 1e-3), event
            self._switch(me, self._next_runner())
            me.event = None
            if me.killed:
                raise Killed()
        return event.is_set()

    def _me(self) -> Runner:
        return getattr(self._local, "runner", self.driver)

    def spawn(
        self,
        name: str,
        delay: float,
        body: Callable[[], None],
        killed_first: Callable[[], None] | None = None,
    ) -> Runner:
        """A simulated process; `killed_first` runs instead of `body` when it is killed before
        its first instruction (its job then ends as Ray would end it)."""
        runner = Runner(name)
        runner.wake = self.now + delay

        def main(park: Callable[[], None]) -> None:
            self._local.runner = runner
            runner.take()
            try:
                if not runner.killed:
                    body()
                elif killed_first is not None:
                    killed_first()
            except Killed:
                pass
            except BaseException as e:  # a bug in the code under test: fail the schedule
                self.error = self.error or e
            finally:
                runner.done = True
                following = self._next_runner()
                park()
                following.give()

        self.runners.append(runner)
        baton.start(main)
        return runner

    def run(self, until: float) -> None:
        self.horizon = until
        self._switch(self.driver, self._next_runner())
        if self.violation is not None:
            raise Violation(self.violation)

    def shutdown(self) -> None:
        self.ending = True
        for r in self.runners:
            r.killed = True
        while any(not r.done for r in self.runners):
            self._switch(self.driver, self._next_runner())

    # ------------------------------------------------------------------ the cluster

    def _add_node(
        self,
        gpus: int,
        head: bool = False,
        started: float | None = None,
        ends_at: float | None = None,
    ) -> Node:
        """A node joins Ray now (its VM `started` then); on flex-start a GPU node's VM ends
        `node_max_run_s` after it started, or at `ends_at` (a VM that outlived a head loss: Ray
        records its new raylet's start, the VM keeps its end)."""
        started = self.now if started is None else started
        node = Node(f"node{next(self.node_ids):04d}", gpus, int(started * 1000), is_head=head)
        self.nodes.append(node)
        if gpus and self.schedule.node_max_run_s > 0:
            node.ends_at = ends_at or started + self.schedule.node_max_run_s
            self.at(max(self.now, node.ends_at), lambda: self._node_end(node))
        return node

    def _node_end(self, node: Node) -> None:
        """A flex-start VM reaches its maximum run duration: GKE removes it; a new one joins
        later. Work since the last save is lost as in a preemption, though it was known."""
        if node not in self.nodes or not node.alive:
            return
        for job in self.jobs.values():
            if job.status in LIVE and node.node_id in job.nodes:
                self.node_end_losses.append(job.step - self._saved_by(job))
        self.kill_node(node, "flex-start maximum run duration")
        self.at(self.now + FLEX_REPLACE_S, lambda: self._replace(node))

    def _saved_by(self, job: Job) -> int:
        """The newest step this attempt saved completely (its start step when none)."""
        return max([job.start_step, *job.saved])

    def free_gpu_nodes(self) -> list[Node]:
        busy = {n for j in self.jobs.values() if j.status in LIVE for n in j.nodes}
        return [n for n in self.nodes if n.alive and n.gpus and n.node_id not in busy]

    def kill_node(self, node: Node, why: str) -> None:
        if not node.alive:
            return
        node.alive = False
        self.note(f"{node.node_id} lost ({why})")
        delay = self.rng.uniform(5, 50)  # Ray marks it dead after its health checks

        def mark() -> None:
            if node in self.nodes and node.marked_dead_ms is None:
                node.marked_dead_ms = int(self.now * 1000)
                node.message = "Unexpected termination: health check failed"

        self.at(self.now + delay, mark)
        for job in self.jobs.values():
            if job.status in LIVE and node.node_id in job.nodes:
                token = job.token
                self.at(
                    self.now + FAIL_AFTER_DEATH_S,
                    lambda j=job, t=token: self._fail(j, t, LOST_WORKER),
                )

    # ------------------------------------------------------------------ the Jobs API

    def _api(self, method: str = "") -> str | None:
        if not self.head_up:
            raise ConnectionRefusedError(111, "Connection refused")
        if self.api_faults and self.api_faults[0][1] in ("", method):
            kind = self.api_faults.pop(0)[0]
            self.api_clear_at = self.now
            if kind == "lost_answer":
                self.api_faults.insert(0, (kind, "submit_job"))  # only a submit loses its answer
                return None
            if kind == "slow":
                return kind if method == "submit_job" else None
            if kind == "500":
                raise JobsAPIError(500, "Internal Server Error")
            if kind == "503":
                raise JobsAPIError(503, "Service Unavailable")
            if kind == "timeout":
                raise TimeoutError("timed out")
            if kind == "malformed":
                raise ValueError("Expecting value: line 1 column 1 (char 0)")

    def key(self, cluster: str, sid: str) -> str:
        return sid if cluster == self.primary else f"{cluster}/{sid}"

    def _job(self, sid: str, cluster: str | None = None) -> Job:
        job = self.jobs.get(self.key(cluster or self.primary, sid))
        if job is None:
            raise JobsAPIError(404, f"Job {sid} does not exist")
        return job

    def get_job_status(self, sid: str, cluster: str | None = None) -> JobStatus:
        self._api("get_job_status")
        return self._job(sid, cluster).status

    def get_job_info(self, sid: str, cluster: str | None = None) -> Job:
        self._api("get_job_info")
        return self._job(sid, cluster)

    def list_jobs(self, cluster: str | None = None) -> list[Job]:
        self._api("list_jobs")
        cluster = cluster or self.primary
        return [j for j in self.jobs.values() if j.cluster == cluster]

    def get_job_logs(self, sid: str, cluster: str | None = None) -> str:
        self._api("get_job_logs")
        return ""

    def stop_job(self, sid: str, cluster: str | None = None) -> bool:
        self._api("stop_job")
        job = self._job(sid, cluster)
        if job.status not in LIVE:
            return False
        self._sigterm(job)
        return True

    def submit_job(
        self,
        *,
        entrypoint: str,
        runtime_env: dict[str, Any],
        metadata: dict[str, str],
        submission_id: str,
        cluster: str | None = None,
        **reservations: Any,
    ) -> str:
        cluster = cluster or self.primary
        if metadata.get("kind") == protocol.EVAL and self.schedule.eval_refused:
            raise JobsAPIError(400, self.schedule.eval_refused)
        slow = self._api("submit_job") == "slow"
        if slow and metadata.get("kind") not in (protocol.SUPERVISOR, protocol.STOP):
            # Only a supervisor submits attempts, from its own process (never a world event).
            # A dashboard slow to answer (busy, a large runtime env): the request is sent and
            # Ray takes the job SLOW_SUBMIT_S later, whether its caller still waits or not.
            sent = self.now

            self.in_flight += 1

            def taken() -> None:
                self.in_flight -= 1
                if self.head_up and self.key(cluster, submission_id) not in self.jobs:
                    job = Job(
                        submission_id,
                        dict(metadata),
                        entrypoint,
                        sent_at=sent,
                        runtime_env=dict(runtime_env),
                        cluster=cluster,
                    )
                    self._take_job(job, reservations, answered=False)

            self.at(self.now + SLOW_SUBMIT_S, taken)
            self.wait(threading.Event(), SLOW_SUBMIT_S + 1)
            if self.key(cluster, submission_id) in self.jobs:
                return submission_id
        job = Job(
            submission_id,
            dict(metadata),
            entrypoint,
            runtime_env=dict(runtime_env),
            cluster=cluster,
        )
        return self._take_job(job, reservations)

    def _take_job(self, job: Job, reservations: dict[str, Any], answered: bool = True) -> str:
        submission_id = job.submission_id
        key = self.key(job.cluster, submission_id)
        if key in self.jobs:
            raise JobsAPIError(500, f"Job with submission_id {submission_id} already exists")
        job.submitted_at = self.now
        job.reservations = dict(reservations)
        self.jobs[key] = job
        if job.kind == protocol.SUPERVISOR:
            self._start_supervisor(job)
        elif job.kind == protocol.STOP:
            self.at(self.now + DRIVER_START_S, lambda: self._run_stop_job(job))
        elif job.kind == protocol.EVAL:
            # It reads a checkpoint and writes a result file: nothing the run's invariants see.
            self.note(f"{submission_id} (eval) submitted")
            job.status = JobStatus.SUCCEEDED
        else:
            self._start_attempt(job)
        if answered and self.api_faults and self.api_faults[0] == ("lost_answer", "submit_job"):
            self.api_faults.pop(0)
            raise TimeoutError("timed out (the job was submitted)")
        return submission_id

    # ------------------------------------------------------------------ supervisors

    def _start_supervisor(self, job: Job) -> None:
        view = ClusterView(self, job.cluster)
        probes = Probes(
            nodes=self._node_rows,
            log_size=lambda sid: self._log_size(self.key(view.cluster, sid)),
            steps=lambda sid: self._steps_done(self.key(view.cluster, sid)),
            hosts=lambda sid: self._hosts(self.key(view.cluster, sid)),
            capacity=self._probe_capacity if self.schedule.probe_capacity else None,
            stopped_for_node_end=lambda sid: self._stopped_for_node_end(
                self.key(view.cluster, sid)
            ),
        )
        sup = from_job(
            view,
            job.submission_id,
            job.metadata,
            probes,
            SETTINGS,
            clock=self.clock,
            renew_in_thread=False,
            publish=lambda _root: None,
            write=lambda _line: None,
            files=self.files,
            gpu_requests=self.gpu_requests(),
            head=self.sessions[job.cluster],
        )
        job.sup = sup

        def killed_first() -> None:
            job.status = JobStatus.STOPPED if job.stop_asked else JobStatus.FAILED

        def body() -> None:
            job.status = JobStatus.RUNNING
            try:
                sup.run()
            except Killed:
                job.status = JobStatus.STOPPED if job.stop_asked else JobStatus.FAILED
                raise
            except Exception:
                job.status = JobStatus.FAILED
                raise
            job.status = JobStatus.STOPPED if job.stop_asked else JobStatus.SUCCEEDED

        job.runner = self.spawn(job.submission_id, DRIVER_START_S, body, killed_first)

    def _sigterm(self, job: Job) -> None:
        if job.kind == protocol.SUPERVISOR:
            job.stop_asked = True
            if job.sup is not None:
                job.sup.stopping.set()  # what main's SIGTERM handler does
            runner = job.runner

            def sigkill() -> None:
                if runner is not None and not runner.done:
                    runner.killed = True

            self.at(self.now + STOP_GRACE_S, sigkill)
            return
        token = job.token
        self.at(self.now + STOP_GRACE_S, lambda: self._end(job, token, JobStatus.STOPPED))

    def _node_rows(self) -> list[dict[str, Any]]:
        self._api()
        return [n.row() for n in self.nodes]

    def _steps_done(self, sid: str) -> int:
        self._api("get_job_logs")  # production reads the log file, else the Jobs API's copy
        job = self.jobs.get(sid)
        return max(0, job.step - job.start_step) if job else 0

    def _hosts(self, sid: str) -> frozenset[str]:
        self._api("list_actors")
        job = self.jobs.get(sid)
        return frozenset(job.hosted) if job else frozenset()

    def _probe_capacity(self) -> Probed:
        """Nodes alive in truth answer (a lost one never does, marked dead or not); free GPUs
        are those of the GPU nodes no live attempt holds, as placement counts them."""
        self._api("cluster_status")
        return Probed(
            frozenset(n.node_id for n in self.nodes if n.alive),
            float(sum(n.gpus for n in self.free_gpu_nodes())),
        )

    def _stopped_for_node_end(self, sid: str) -> bool:
        self._api("get_job_logs")  # production reads the log for NeMo RL's line
        job = self.jobs.get(sid)
        return bool(job and job.stopped_for_node_end)

    def _log_size(self, sid: str) -> int:
        return self.jobs[sid].step * 100 if sid in self.jobs else 0

    # ------------------------------------------------------------------ attempts

    def _run_stop_job(self, job: Job) -> None:
        """`python -m jobs.head.stop RUN` as its main runs it (the re-armer's, for a stopped run
        whose supervisor died before writing the end)."""
        if not self.head_up or job.status not in LIVE:
            return
        store = self.store()
        if ev.outcome(store.events()) is None:
            stop.record_stop(store, "re-armer", lambda run: self.gpu_requests().drop(run))
        job.status = JobStatus.SUCCEEDED
        self.note(f"{job.submission_id} ended the stopped run")

    # ------------------------------------------------------------------ Ray's autoscaler

    def gpu_requests(self) -> scale_up.Requests:
        return scale_up.Requests(
            self.kv,
            self._request_resources,
            lambda sid: sid in self.jobs and self.jobs[sid].status in LIVE,
        )

    def _request_resources(self, bundles: list[scale_up.Bundle]) -> None:
        """`ray.autoscaler.sdk.request_resources`: a GCS call, refused while the head is down."""
        if not self.head_up:
            raise ConnectionError("GCS unreachable: the head is down")
        if bundles != self.asked:
            self.note(f"the cluster's GPU request is now {len(bundles)} node(s)")
        before, self.asked = self.asked, list(bundles)
        if self.rival_union and len(bundles) > len(before):
            # Another run's supervisor sent its union at the same moment, read from the KV
            # before this run's request was in it: Ray keeps the last request it is sent.
            self.rival_union = False
            self.asked = list(before)
            self.note(
                f"another run's request, its union read before this one's, replaced it: "
                f"{len(before)} node(s) asked while {len(bundles)} were wanted"
            )

    def autoscale(self) -> None:
        """One autoscaler tick (it runs in the head): launch what the request lacks, remove GPU
        nodes idle for IDLE_S beyond what the request covers."""
        if not self.head_up:
            return
        gpu = [n for n in self.nodes if n.alive and n.gpus]
        target = len(self.asked)
        short = target - len(gpu) - self.launching
        if short > 0 and self.now >= self.stockout_until:
            for _ in range(short):
                self.launching += 1
                self.at(self.now + self.rng.uniform(*SCALE_UP_S), self._launched)
        busy = {n for j in self.jobs.values() if j.status in LIVE for n in j.nodes}
        surplus = len(gpu) - target
        for node in gpu:
            if node.node_id in busy:
                self.idle_since.pop(node.node_id, None)
                continue
            since = self.idle_since.setdefault(node.node_id, self.now)
            if surplus > 0 and self.now - since >= IDLE_S:
                surplus -= 1
                self.scale_downs += 1
                node.alive = False  # drained: Ray marks it dead at once, with its reason
                node.marked_dead_ms = int(self.now * 1000)
                node.message = "Terminated by the autoscaler: idle"
                self.note(f"{node.node_id} removed by the autoscaler (idle {IDLE_S:.0f} s)")

    def _launched(self) -> None:
        self.launching -= 1
        if self.now < self.stockout_until:
            self.note("a launched GPU node was not granted (stockout)")
            return
        self._add_node(GPUS_PER_NODE)
        self.note("the autoscaler's GPU node joined")

    def _start_attempt(self, job: Job) -> None:
        live = [
            j.submission_id
            for j in self.jobs.values()
            if j.kind not in (protocol.SUPERVISOR, protocol.STOP)
            and j.status in LIVE
            and j is not job
        ]
        if live:
            self.fail(f"{job.submission_id} submitted while {live} is live")
        if self.stop_at is not None and not (
            job.sent_at is not None and job.sent_at < self.stop_at
        ):
            self.fail(f"{job.submission_id} submitted after the user's stop")
        wanted = (
            {"entrypoint_num_gpus": self.schedule.reserve_gpus}
            if self.schedule.reserve_gpus
            else {}
        )
        if job.reservations != wanted:
            self.fail(f"{job.submission_id} reserves {job.reservations}, the run asked {wanted}")
        self.attempts_seen.add(job.submission_id)
        self.note(f"{job.submission_id} submitted")
        token = job.token
        self.at(self.now + DRIVER_START_S, lambda: self._place(job, token))

    def _place(self, job: Job, token: int) -> None:
        if job.token != token or job.status not in LIVE:
            return
        job.status = JobStatus.RUNNING
        free = self.free_gpu_nodes()
        if len(free) < NODES:
            self.at(self.now + PLACEMENT_TIMEOUT_S, lambda: self._fail(job, token, NO_PLACEMENT))
            return
        job.nodes = job.hosted = tuple(n.node_id for n in free[:NODES])
        for node_id in job.nodes:
            self.idle_since.pop(node_id, None)
        if self.schedule.framework == "verl":
            start, unloadable = self._verl_resume()
        else:
            start, unloadable = self._resume_step(), ""
        if start < self.newest_complete and not unloadable:
            self.fail(
                f"{job.submission_id} resumed from step {start}, behind the newest complete "
                f"checkpoint (step {self.newest_complete}): its progress was lost"
            )
        job.step = job.start_step = start
        job.trainer_start = self.now + LOAD_S
        if unloadable:
            self.at(self.now + LOAD_S, lambda: self._fail(job, token, unloadable))
            return
        self.at(self.now + LOAD_S, lambda: self._step(job, token))

    def _resume_step(self) -> int:
        steps = []
        for name in os.listdir(self.ckpt) if self.ckpt.is_dir() else []:
            if name.startswith("step_") and (self.ckpt / name / "config.yaml").is_file():
                steps.append(int(name[5:]))
        return max(steps, default=0)

    def _verl_resume(self) -> tuple[int, str]:
        """veRL's resume (`_load_checkpoint`, ray_trainer.py L826-881 @v0.6.0): the step its
        tracker names (`find_latest_ckpt_path`, checkpoint_manager.py L167-196: no tracker, or
        no folder of that step, is "Training from scratch"); a folder whose actor/ has no
        weights fails the load, every time (the step and that failure's last exception)."""
        try:
            with open(f"{self.ckpt}/{VERL_TRACKER}") as f:
                step = int(f.read())
        except OSError:
            return 0, ""
        folder = f"{self.ckpt}/global_step_{step}"
        if not os.path.isdir(folder):
            return 0, ""
        weights = f"{folder}/actor/{VERL_WEIGHTS}"
        if not os.path.exists(weights):
            return step, f"FileNotFoundError: [Errno 2] No such file or directory: '{weights}'"
        return step, ""

    def _step(self, job: Job, token: int) -> None:
        if job.token != token or job.status != JobStatus.RUNNING:
            return
        job.step += 1
        job.logged.append([job.step, STEP_S, 0.0])
        if job.step >= self.schedule.target_steps:
            self._end(job, token, JobStatus.SUCCEEDED)
            self.succeeded = True
            return
        by_period, for_node_end = self._save_due(job)
        if (by_period or for_node_end) and self.schedule.framework == "verl":
            self._save_verl(job, token, job.step)
            return
        if by_period or for_node_end:
            n = job.step
            # Plain strings, not pathlib: thousands of schedules save hundreds of times each.
            tmp = f"{self.ckpt}/tmp_step_{n}"
            _mkdirs(self.ckpt, f"tmp_step_{n}", "policy", "weights")

            def finish() -> None:
                if job.token != token or job.status != JobStatus.RUNNING:
                    return
                with open(f"{tmp}/config.yaml", "w") as f:
                    f.write(f"step: {n}\n")
                final = f"{self.ckpt}/step_{n}"
                if os.path.exists(final):
                    remove_tree(final)
                os.replace(tmp, final)
                job.logged[-1][2] = SAVE_S
                job.saved.append(n)
                self.newest_complete = max(self.newest_complete, n)
                if for_node_end:  # grpo.py L1389-1391 @v0.4.0: saved for the timeout, it returns
                    job.stopped_for_node_end = True
                    self.note(f"{job.submission_id} saved before its nodes' end and returns")
                    self._end(job, token, JobStatus.SUCCEEDED)
                    return
                self.at(self.now + STEP_S, lambda: self._step(job, token))

            self.at(self.now + SAVE_S, finish)
            return
        self.at(self.now + STEP_S, lambda: self._step(job, token))

    def _save_due(self, job: Job) -> tuple[bool, bool]:
        """Whether the trainer saves after this step: by its save period, and for its nodes'
        end as the supervisor told it (jobs/head/node_end.py writes both settings).
        NeMo RL v0.4.0: `checkpointing.checkpoint_must_save_by` counted from its training
        loop's start, one mean step early (timer.py L264-300 `TimeoutChecker` with
        fit_last_save_time, grpo.py L855-858, L1226). veRL 0.6.0: the expiry in
        MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP within its longest step + 60 s +
        `trainer.esi_redundant_time` (checkpoint_manager.py L207-229 `should_save_ckpt_esi`,
        ray_trainer.py L1209-1226), every step from then on: no latch."""
        by_period = job.step % self.schedule.save_every == 0
        if self.schedule.framework == "verl":
            expiry = (job.runtime_env.get("env_vars") or {}).get(node_end.VERL_EXPIRY_ENV)
            margin = _override(job.entrypoint, node_end.VERL_MARGIN_KEY)
            if expiry is None:
                return by_period, False
            remaining = float(expiry) - self.now
            near = 0 < remaining <= STEP_S + node_end.VERL_RESERVED_S + float(margin or 0)
            return by_period, near
        must = _override(job.entrypoint, node_end.NEMO_RL_KEY)
        if must is None:
            return by_period, False
        days, hours, minutes, secs = (int(x) for x in must.split(":"))
        must_s = days * 86400 + hours * 3600 + minutes * 60 + secs
        return by_period, self.now - job.trainer_start + STEP_S >= must_s

    def _save_verl(self, job: Job, token: int, n: int) -> None:
        """veRL's `_save_checkpoint` (ray_trainer.py L768-824 @v0.6.0): the keep rule of this
        trainer process first (fsdp_checkpoint_manager.py L204-214: its own saves beyond keep-1
        lose their actor/ before the new one is written), the actor's shards, then the tracker."""
        keep = self.schedule.verl_keep
        if keep and len(job.saved) >= keep:
            cut = len(job.saved) - keep + 1
            for old in job.saved[:cut]:
                remove_tree(f"{self.ckpt}/global_step_{old}/actor")
            job.saved = job.saved[cut:]
            # veRL's own deletion, not hygiene's: the newest complete one may be gone now
            # (keep=1), which the invariant on pruning must not blame on the supervisor.
            self.newest_complete = max(
                (
                    int(name[len("global_step_") :])
                    for name in os.listdir(self.ckpt)
                    if name.startswith("global_step_")
                    and os.path.exists(f"{self.ckpt}/{name}/actor/{VERL_WEIGHTS}")
                ),
                default=0,
            )
        folder = f"{self.ckpt}/global_step_{n}"
        _mkdirs(self.ckpt, f"global_step_{n}", "actor")
        self.note(f"{job.submission_id} saves global_step_{n}")

        def live() -> bool:
            # Every rank writes its shards and rank 0 the tracker after a barrier: a save goes
            # no further once a node of the job is gone, though its driver fails only later.
            return (
                job.token == token
                and job.status == JobStatus.RUNNING
                and all(n.alive for n in self.nodes if n.node_id in job.nodes)
            )

        def shards() -> None:
            if live():
                open(f"{folder}/actor/{VERL_WEIGHTS}", "w").close()
                self.at(self.now + SAVE_S * (1 - VERL_WEIGHTS_AT), tracker)

        def tracker() -> None:
            if not live():
                return
            open(f"{folder}/data.pt", "w").close()
            with open(f"{self.ckpt}/{VERL_TRACKER}", "w") as f:
                f.write(str(n))
            job.saved.append(n)
            job.logged[-1][2] = SAVE_S
            self.newest_complete = max(self.newest_complete, n)
            self.at(self.now + STEP_S, lambda: self._step(job, token))

        self.at(self.now + SAVE_S * VERL_WEIGHTS_AT, shards)

    def _fail(self, job: Job, token: int, exception: str) -> None:
        self._end(job, token, JobStatus.FAILED, code=1, exception=exception)

    def _end(
        self,
        job: Job,
        token: int,
        status: JobStatus,
        code: int | None = None,
        exception: str = "",
    ) -> None:
        if job.token != token or job.status not in LIVE:
            return
        if status == JobStatus.FAILED:  # Ray's message: the driver's log tail
            job.message = (
                f"Job entrypoint command failed with exit code {code}, last available logs "
                f"(truncated to 20,000 chars):\nTraceback (most recent call last):\n  ...\n"
                f"{exception}\n"
            )
        job.token += 1
        job.status = status
        job.ended_at = self.now
        job.driver_exit_code = code
        job.nodes = ()
        self.note(f"{job.submission_id} {status.value}")

    # ------------------------------------------------------------------ the user, the re-armer

    def store(self) -> RunStore:
        if self._store is None:  # one reader: it parses only what was appended since
            self._store = RunStore(self.root, RUN, self.clock, self.files)
        return self._store

    def submit_run(self) -> None:
        """`rl-jobs submit` (and `submit --resume`): a new supervisor with a fresh spec."""
        self._api()  # the CLI lists the run's jobs first
        sups = [j for j in self.jobs.values() if j.kind == protocol.SUPERVISOR]
        if any(j.status in LIVE for j in sups):
            return  # the CLI refuses: a supervisor drives the run
        attempts = [j for j in self.jobs.values() if j.kind != protocol.SUPERVISOR]
        if any(j.status in LIVE for j in attempts):
            return  # the CLI refuses: an attempt still runs
        last = max((int(j.metadata.get("attempt", 0)) for j in attempts), default=0)
        if self.succeeded:
            return  # nothing to resume
        n = 1 + max((protocol.supervisor_number(j.submission_id) for j in sups), default=0)
        for r in self.store().events():
            n = max(n, 1 + protocol.supervisor_number(str(r.get("supervisor") or "")))
        spec = Spec(
            run=RUN,
            first_attempt=last + 1,
            max_restarts=20,
            gpus_needed=NODES * GPUS_PER_NODE if self.schedule.declare_gpus else 0,
            checkpoint_dir=str(self.ckpt),
            entrypoint="python train.py",
            runtime_env={},
            metadata={"run": RUN, "kind": protocol.RECIPE},
            max_preemptions=100,
            runs_root=str(self.root),
            keep=self.schedule.keep,
            capacity_deadline_s=self.schedule.capacity_deadline_s,
            stall_timeout_s=self.schedule.stall_timeout_s,
            entrypoint_num_gpus=self.schedule.reserve_gpus or None,
            request_gpus=self.schedule.on_demand,
            gpus_per_node=GPUS_PER_NODE,
            eval_at_end=self.schedule.eval_at_end,
            eval_job=EVAL_JOB if self.schedule.eval_at_end else None,
            node_max_run_s=self.schedule.node_max_run_s,
            # Only a recipe's supervisor knows its trainer: `submit`, which declares the GPUs;
            # `run -- COMMAND` gets none (jobs/runs/supervision.py `saves_before_node_end`).
            save_before_node_end=(
                self.schedule.framework
                if self.schedule.node_max_run_s and self.schedule.declare_gpus
                else ""
            ),
        )
        self.stop_at = None
        sid = protocol.supervisor_id(RUN, n)
        self.note(f"user submits {sid} (first attempt {last + 1})")
        meta = {"run": RUN, "kind": protocol.SUPERVISOR, Spec.METADATA_KEY: spec.to_json()}
        self.submit_job(
            entrypoint=protocol.supervisor_entrypoint(sid),
            runtime_env={},
            metadata=meta,
            submission_id=sid,
        )
        check = lambda: self._handed_off(sid)  # noqa: E731
        check.user = True  # type: ignore[attr-defined]
        self.at(self.now + HANDOFF_S, check)

    def _handed_off(self, sid: str) -> None:
        """The CLI waits for the supervisor's `armed` record (jobs/runs/handoff.py); one that
        ended before it fails the command ("ended ... before it took the run") and the user
        submits again (seed 2968: SIGKILLed at its first instruction)."""
        job = self.jobs.get(sid)
        armed = any(
            r["event"] == ev.ARMED and r.get("supervisor") == sid for r in self.store().events()
        )
        if job is None or armed or job.status in LIVE or self.stop_at is not None:
            return
        self.note(f"user's hand-off to {sid} failed; submits again")
        self._as_user(self.submit_run)

    def user_stop(self) -> None:
        """`rl-jobs stop RUN`: the stop request on the record, then supervisors, then attempts."""
        self._api()  # the CLI lists the run's jobs first
        self.note("user stops the run")
        stop.record_stop(self.store(), "rl-jobs stop", lambda run: self.gpu_requests().drop(run))
        self.stop_at = self.now
        for job in list(self.jobs.values()):
            if job.kind == protocol.SUPERVISOR and job.status in LIVE:
                self._sigterm(job)

        def attempts() -> None:
            for job in list(self.jobs.values()):
                if job.kind != protocol.SUPERVISOR and job.status in LIVE:
                    self._sigterm(job)

        self.at(self.now + STOP_GRACE_S + 1, attempts)

    def _rearmer(self) -> Rearmer:
        return Rearmer(
            self, str(self.root), write=lambda _l: None, clock=self.clock, files=self.files
        )

    def sweep(self, twin: bool = False) -> None:
        if not (self.head_up and self.rearmer_up):
            return
        self.heads.settle()
        self._sweep(twin)

    def _sweep(self, twin: bool) -> None:
        if not self.rearmers:  # long-lived, as the sidecar's own is
            self.rearmers = [self._rearmer(), self._rearmer()]
        # Twin: two re-armers (two heads) seeing the same lapsed lease at once.
        rearmers = self.rearmers if twin else self.rearmers[:1]
        for rearmer in rearmers:  # the world's re-armer is the primary head's, whichever it is
            rearmer.head = self.sessions[self.primary]
        try:
            # One read of the runs root per re-armer and sweep, as `Rearmer.sweep` does (the
            # two lists apart read it twice: a tenth of a schedule's time went to sweeps).
            unended = [r.unended() for r in rearmers]
            todo = [rearm for rearm, _ in unended]
            stops = unended[0][1]
            listing = self.list_jobs()
            for sid in rearmers[0].stop_orphans(listing):
                self.note(f"re-armer stops {sid}, which came after the user's stop")
            for run in stops:
                try:
                    sid = rearmers[0].end_stop(run, listing)
                except (RuntimeError, OSError, ValueError):
                    continue
                if sid:
                    self.note(f"re-armer submits {sid} to end the stopped run")
            for rearmer, runs in zip(rearmers, todo, strict=True):
                for run in runs:
                    try:
                        sid = rearmer.rearm(run, listing)
                    except (RuntimeError, OSError, ValueError):
                        continue
                    if sid:
                        self.note(f"re-armer submits {sid}")
        except (RuntimeError, OSError, ConnectionError, ValueError):
            pass

    # ------------------------------------------------------------------ faults

    def apply(self, f: Fault) -> None:
        self.note(f"FAULT {f}")
        if f.kind == "api":
            self._fault_api(f.arg, f.detail)
        else:
            getattr(self, f"_fault_{f.kind}")(f.arg)

    def _fault_preempt(self, stockout_s: float) -> None:
        alive = [n for n in self.nodes if n.alive and n.gpus]
        if not alive:
            return
        victim = alive[int(self.rng.random() * len(alive))]
        self.kill_node(victim, "spot preemption")
        if self.schedule.on_demand:  # the autoscaler replaces it, once the zone has stock again
            self.stockout_until = max(self.stockout_until, self.now + stockout_s)
            return
        self.at(self.now + stockout_s, lambda: self._replace(victim))

    def _replace(self, old: Node) -> None:
        if sum(1 for n in self.nodes if n.alive and n.gpus) < NODES:
            self._add_node(GPUS_PER_NODE)
            self.note("a replacement GPU node joined")

    def _fault_api(self, n: float, detail: str = "") -> None:
        kinds = ["500", "503", "timeout", "malformed", "lost_answer"]
        answer, _, method = detail.partition("@")
        for _ in range(int(n)):
            self.api_faults.append((answer or kinds[int(self.rng.random() * len(kinds))], method))

    def _live_supervisor(self) -> Job | None:
        live = [j for j in self.jobs.values() if j.kind == protocol.SUPERVISOR and j.status in LIVE]
        return live[0] if live else None

    def _fault_spare_lost(self, _arg: float) -> None:
        """A GPU node that hosts none of the run's workers is lost (and not replaced)."""
        busy = {n for j in self.jobs.values() if j.status in LIVE for n in j.nodes}
        alive = [n for n in self.nodes if n.alive and n.gpus]
        spare = [n for n in alive if n.node_id not in busy]
        if spare and len(alive) > NODES:  # the run's capacity stays
            self.kill_node(spare[0], "a node the run does not use")

    def _fault_hang(self, _arg: float) -> None:
        """The attempt hangs (an NCCL collective waiting forever): no step, no output, no save,
        and it stays RUNNING."""
        for job in self.jobs.values():
            if job.kind != protocol.SUPERVISOR and job.status == JobStatus.RUNNING:
                job.token += 1  # its pending step or save never happens
                self.note(f"{job.submission_id} hangs")

    def _fault_transient(self, _arg: float) -> None:
        """The attempt fails on its own (an NCCL timeout, a flaky read): no node is lost."""
        for job in list(self.jobs.values()):
            if job.kind != protocol.SUPERVISOR and job.status in LIVE:
                # An NCCL watchdog's timeout: its collective's sequence number grows with the
                # run, so two such faults never read alike, as a bad config's error does.
                self._fail(job, job.token, transient_error(int(self.now - T0)))

    def _fault_sigterm(self, _arg: float) -> None:
        """Something other than `rl-jobs stop` terminates the supervisor (a head pod deleted)."""
        job = self._live_supervisor()
        if job is not None and job.sup is not None:
            job.sup.stopping.set()
            runner = job.runner
            self.at(self.now + STOP_GRACE_S, lambda: setattr(runner, "killed", True))

    def _fault_sigkill(self, _arg: float) -> None:
        job = self._live_supervisor()
        if job is not None and job.runner is not None:
            job.runner.killed = True

    def _fault_rearmer_down(self, seconds: float) -> None:
        self.rearmer_up = False

        def back() -> None:
            self.rearmer_up, self.rearmer_back_at = True, self.now

        self.at(self.now + seconds, back)

    def _fault_head_loss(self, seconds: float) -> None:
        """The head pod is lost: every driver dies, Ray's job table with it; the GPU nodes'
        raylets rejoin the new head under new ids."""
        self.head_up = False
        self.head_losses += 1
        loss = self.head_losses
        for job in self.jobs.values():
            if job.runner is not None:
                job.runner.killed = True
            if job.status in LIVE:
                job.token += 1
                job.status = JobStatus.FAILED
                job.nodes = ()
        self.note("head lost")

        def back() -> None:
            if loss != self.head_losses:
                return  # lost again while down: the later loss brings it back (seed 543)
            self.jobs = {}
            self.asked, self.kv = [], DictKV()  # the GCS is new: no request, an empty KV
            gpu_alive = [n for n in self.nodes if n.alive and n.gpus]
            self.nodes = []
            self._add_node(0, head=True)
            for old in gpu_alive:  # their pods rejoin the new head; their VMs keep their end
                self._add_node(GPUS_PER_NODE, ends_at=old.ends_at)
            self.head_up = True
            self.rearmer_back_at = self.now
            self.sessions[self.primary] = f"session_{self.primary}_{loss}"
            self.note("head back (new cluster)")

        self.at(self.now + seconds, back)

    def _as_user(self, action: Callable[[], None]) -> None:
        """A CLI command: an error from the dashboard fails it, and the user tries again a
        minute later."""
        try:
            action()
        except (RuntimeError, OSError, ValueError) as e:
            self.note(f"user's command failed ({type(e).__name__}); retried in 60 s")
            retry = lambda: self._as_user(action)  # noqa: E731
            retry.user = True  # type: ignore[attr-defined]
            self.at(self.now + 60, retry)

    def _fault_stop(self, _arg: float) -> None:
        self._as_user(self.user_stop)

    def _fault_resume(self, _arg: float) -> None:
        self._as_user(self.submit_run)

    def _fault_torn_lease(self, _arg: float) -> None:
        """A taker killed between the O_EXCL create of the next lease and its write."""
        store = self.store()
        lease = store.lease()
        if lease is None:
            return
        self.heads.quietly(
            lambda: self.files.create_exclusive(store.dir / f"lease.{lease.gen + 1}")
        )

    def _fault_twin_rearm(self, _arg: float) -> None:
        self.sweep(twin=True)

    def _fault_race(self, _arg: float) -> None:
        self.heads.arm_twin()

    def _fault_rival_union(self, _arg: float) -> None:
        """Two runs ask Ray's autoscaler at once (after a head loss the re-armer re-arms every
        run in one sweep): the next request that grows the cluster's is overwritten at once by
        the other run's union, which lacks it (tests/jobs/head/sim/world.py `_request_resources`)."""
        self.rival_union = True

    def _fault_two_heads(self, seconds: float) -> None:
        self.heads.two_heads(seconds)

    # ------------------------------------------------------------------ invariants

    def note(self, what: str) -> None:
        self.history.append(f"t+{self.now - T0:>8.0f}s {what}")

    def fail(self, what: str) -> None:
        """An invariant broke: the schedule halts at once (the first violation is reported)."""
        self.note(f"VIOLATION {what}")
        if self.violation is None:
            self.violation = what

    def over(self) -> bool:
        """Nothing can happen any more: succeeded or stopped, and nothing runs."""
        if not (self.succeeded or self.stop_at is not None) or self.queue_has_user():
            return False
        if self.in_flight:
            return False  # a submit Ray has yet to take
        if self.schedule.on_demand and (self.asked or any(n.alive and n.gpus for n in self.nodes)):
            return False  # the idle GPU nodes still have to go (or the run leaks them)
        if any(j.status in LIVE for j in self.jobs.values()):
            return False
        # A trainer that finished while no supervisor held the run: the re-armed one has yet
        # to record the end (the final check wants it: an unrecorded success reads as a run
        # still to drive).
        return self.stop_at is not None or ev.outcome(self.store().events()) is not None

    def queue_has_user(self) -> bool:
        return any(getattr(fn, "user", False) for _, _, fn in self.queue)

    def _stale_holders(self) -> None:
        """A live supervisor whose lease has a newer generation on the runs root (the run was
        taken over: a re-armer or another head drives it now) must find out at its next renewal
        and leave the run: one that renews the older lease all the same drives the run beside
        its new holder. (Judged by its renewals, not by time: the simulation renews the lease
        in the supervisor's waits, and a submit answered late blocks it for minutes.)"""
        holders = [
            j
            for j in self.jobs.values()
            if j.kind == protocol.SUPERVISOR
            and j.status in LIVE
            and j.sup is not None
            and j.sup.leases is not None
            and j.sup.leases.lease is not None
            and not j.sup.lost.is_set()
            and not (j.runner is not None and (j.runner.killed or j.runner.done))
        ]
        if not holders:
            self.stale_since.clear()
            return
        newest = max(self.store()._gens(), default=0)
        for job in holders:
            sid = job.submission_id
            if job.sup.leases.lease.gen >= newest:
                self.stale_since.pop(sid, None)
                continue
            since = self.stale_since.setdefault(sid, self.now)
            lease = job.sup.leases.lease
            if lease.renewed > since:
                self.fail(
                    f"{sid} renewed lease {lease.gen} of the run {lease.renewed - since:.0f} s "
                    f"after lease {newest} was taken"
                )

    def check(self) -> None:
        self._stale_holders()
        live = [
            key
            for key, j in self.jobs.items()
            if j.kind not in (protocol.SUPERVISOR, protocol.STOP) and j.status in LIVE
        ]
        if len(live) > 1:
            self.fail(f"two live attempts of one run: {live}")
        if self.stop_at is not None and live:
            # A stop is carried out by the user's CLI at once, or, when an attempt came after
            # it (a submit answered late), by the re-armer once the killed supervisor's lease
            # lapsed: an attempt running longer than that after the stop is nobody's to stop.
            job = self.jobs[live[0]]
            since = max(self.stop_at, job.submitted_at, self.api_clear_at, self.rearmer_back_at)
            up = self.rearmer_up and self.head_up and not self.api_faults
            if up and self.now - since > STOP_CARRIED_OUT_S:
                self.fail(f"{live[0]} still runs {STOP_CARRIED_OUT_S:.0f} s after the user's stop")
        # Only hygiene.prune deletes checkpoints: the folder is looked at again after a prune
        # or a newer save, not after each of a schedule's hundreds of events.
        seen = (self.newest_complete, _PRUNES[0])
        if self.newest_complete and seen != self._ckpt_seen:
            newest = (
                f"global_step_{self.newest_complete}/actor/{VERL_WEIGHTS}"
                if self.schedule.framework == "verl"
                else f"step_{self.newest_complete}"
            )
            if not os.path.exists(f"{self.ckpt}/{newest}"):
                self.fail(f"the newest complete checkpoint {newest} was pruned")
            self._ckpt_seen = seen
        if self.error is not None:
            self.fail(f"the supervisor raised {type(self.error).__name__}: {self.error}")

    def final_check(self) -> None:
        """After the quiet tail: the run succeeded, or it is stopped because the user said so;
        on demand, nothing asks for GPUs any more and no GPU node is left up."""
        self.check()
        if self.schedule.on_demand:
            up = [n.node_id for n in self.nodes if n.alive and n.gpus]
            if self.asked or up:
                raise Violation(
                    f"the run is over, yet the cluster still asks for {len(self.asked)} GPU "
                    f"node(s) and {up} are up, billed"
                )
        recs = self.store().events()
        end = ev.outcome(recs)
        if self.stop_at is not None:
            live = [j.submission_id for j in self.jobs.values() if j.status in LIVE]
            if live:
                raise Violation(f"stopped by the user, but {live} still run")
            return
        if self.succeeded:
            # The trainer reached its target: the record must say so, and nothing else (a
            # supervisor that gave the run up while its attempt went on to finish would have
            # passed here unseen).
            if end is None or end.get("event") != ev.FINISHED:
                why = json.dumps(end, sort_keys=True) if end else "no end recorded"
                raise Violation(f"the trainer finished but the record ends otherwise: {why}")
            self._every_attempt_has_its_end(ev.life(recs))
            self._goodput_is_what_the_trainers_did(ev.life(recs))
            return
        if end is not None and self._an_end_the_user_accepts(end):
            return
        why = json.dumps(end, sort_keys=True) if end else "no end recorded, nothing running"
        raise Violation(f"the run did not finish (no user stop): {why}")

    def _an_end_the_user_accepts(self, end: dict[str, Any]) -> bool:
        """A run given up ends by a spent budget or the deadline the user set, nothing else: a
        "crash at start-up" after transient faults is the supervisor's mistake to avoid (telling
        a bad config from transient faults is its job, not the user's)."""
        reason = end.get("reason")
        if reason in ("restarts_exhausted", "preemptions_exhausted"):
            return True
        return reason == "deadline" and self.schedule.capacity_deadline_s > 0

    def _goodput_is_what_the_trainers_did(self, recs: list[dict]) -> None:
        """Goodput (jobs/runs/goodput.py), read from Ray's job records, the trainers' step lines
        and the supervisor's records as `rl-jobs goodput` reads them, against what the simulated
        trainers did: every step computed once is productive, every step computed again is
        redone, every save finished is a save, and the buckets add up to the run's life, from its
        first record to its end."""
        if _GOODPUT_UNCHECKED & {f.kind for f in self.schedule.faults}:
            return
        traces = attempt_traces(self)
        spent = goodput.account(traces, recs, int(self.now * 1000), NODES * GPUS_PER_NODE)
        logged = [e for j in self.jobs.values() if j.kind != protocol.SUPERVISOR for e in j.logged]
        first = len({int(e[0]) for e in logged})
        truth = {
            "productive": first * STEP_S,
            "redone": (len(logged) - first) * STEP_S,
            "saves": sum(1 for e in logged if e[2]) * SAVE_S,
        }
        stamps = [t for t in map(goodput.record_ms, recs) if t]
        life_ms = (goodput.record_ms(ev.outcome(recs) or {}) or 0) - min(
            [*stamps, *(t.start_ms for t in traces if t.start_ms)]
        )
        wrong = {
            b: (spent.seconds[b], s) for b, s in truth.items() if abs(spent.seconds[b] - s) > 1
        }
        if abs(spent.total_s - life_ms / 1000) > 1:
            wrong["total"] = (spent.total_s, life_ms / 1000)
        wrong.update({b: (s, 0.0) for b, s in spent.seconds.items() if s < 0})
        if wrong:
            raise Violation(f"goodput is not what the trainers did (goodput, truth): {wrong}")

    def _every_attempt_has_its_end(self, recs: list[dict]) -> None:
        """Each attempt submitted in the run's last life has its end on the record (goodput and the
        restart count are read from these records)."""
        submitted = {r["submission_id"] for r in recs if r["event"] == ev.SUBMITTED}
        ended = {r["submission_id"] for r in recs if r["event"] == ev.ATTEMPT_ENDED}
        if missing := sorted(submitted - ended):
            raise Violation(f"attempts submitted without an end on the record: {missing}")


# Faults after which Ray's job table no longer holds every attempt of the run (a new head), or
# the run has more than one life: goodput is checked against the trainers without them.
_GOODPUT_UNCHECKED = frozenset({"head_loss", "two_heads", "stop", "resume"})


def _override(entrypoint: str, key: str) -> str | None:
    """The value of a `key=value` override on the trainer's command line (None: absent)."""
    for word in entrypoint.split():
        name, eq, value = word.partition("=")
        if eq and name.lstrip("+~") == key:
            return value
    return None


def sweep_schedule(seed: int) -> Schedule:
    """The sweep's schedule for a seed: one seed in four runs `run` without --gpus (Ray's usual
    shape: the driver needs none, its workers sit on GPU nodes), one in three trains veRL, one
    in four runs on flex-start GPUs, each drawn from a generator of its own so that `random_schedule(seed)` still replays every seed
    a regression test names."""
    return random_schedule(
        seed,
        no_gpus=random.Random(seed + 4_000_003).random() < 0.25,
        slow_submits=True,
        races=True,
        verl=True,
        flex=True,
    )


def _race_faults(seed: int, horizon: float) -> list[Fault]:
    """The lease's race (tests/jobs/head/sim/heads.py), from a generator of its own: a rival
    re-armer armed at the next lease create, after a SIGKILL of the supervisor so that a re-arm
    comes; or a head loss with a second head on the runs root racing the first one's re-armer."""
    rng = random.Random(seed + 6_000_003)
    faults: list[Fault] = []
    roll = rng.random()
    at = round(rng.uniform(FIRST_LOOK_S, max(FIRST_LOOK_S, horizon)))
    if roll < 0.15:
        faults += [Fault(at, "race"), Fault(at, "sigkill")]
    elif roll < 0.35:
        faults.append(Fault(at, "two_heads", round(rng.uniform(60, 600))))
    return faults


def random_schedule(
    seed: int,
    no_gpus: bool = False,
    slow_submits: bool = False,
    races: bool = False,
    verl: bool = False,
    flex: bool = False,
) -> Schedule:
    rng = random.Random(seed)
    faults: list[Fault] = []
    t = 0.0
    horizon = rng.choice([1, 2, 3]) * 3600.0
    kinds = [
        ("preempt", 10),
        ("api", 6),
        ("sigkill", 3),
        ("sigterm", 3),
        ("rearmer_down", 2),
        ("head_loss", 2),
        ("stop", 1),
        ("torn_lease", 2),
        ("twin_rearm", 2),
        ("transient", 3),
    ]
    names = [k for k, w in kinds for _ in range(w)]
    while True:
        t += rng.expovariate(1 / rng.choice([300.0, 900.0, 1800.0]))
        if t > horizon:
            break
        kind = rng.choice(names)
        arg = {
            "preempt": rng.choice([60.0, 600.0, 1800.0, 3 * 3600.0, 6 * 3600.0]),
            "api": float(rng.randint(1, 6)),
            "rearmer_down": rng.uniform(60, 3600),
            "head_loss": rng.uniform(60, 600),
        }.get(kind, 0.0)
        faults.append(Fault(round(t), kind, round(arg)))
        if kind == "stop" and rng.random() < 0.7:
            faults.append(Fault(round(t + rng.uniform(60, 7200)), "resume"))
    keep = rng.choice([0, 1, 2])
    # Faults added later draw from their own generator, so every earlier seed (and its named
    # regression test) still replays the schedule it was found with.
    more = random.Random(seed + 1_000_003)
    t = 0.0
    while True:
        t += more.expovariate(1 / 3600.0)
        if t > horizon:
            break
        faults.append(Fault(round(t), more.choice(["hang", "spare_lost"])))
    slow = random.Random(seed + 5_000_003)  # slow submits, and a stop during one, later still
    if slow_submits and slow.random() < 0.3:
        at = round(slow.uniform(0, horizon))
        faults.append(Fault(at, "api", 1, "slow@submit_job"))
        if slow.random() < 0.5:
            faults.append(Fault(round(at + slow.uniform(0, 900)), "stop"))
    if races:
        faults += _race_faults(seed, horizon)
    faults.sort(key=lambda f: f.at)
    stall_timeout_s = more.choice([0.0, 7200.0])
    if not stall_timeout_s:  # without a watchdog a hang is forever (the user's to notice)
        faults = [f for f in faults if f.kind != "hang"]
    # `no_gpus`: after a preemption the run waits for the GPUs its attempt's workers were seen
    # on. Before its first attempt is seen running the supervisor knows of none (a stockout
    # then reads as the same placement error twice, a crash; docs/supervision.md), so its
    # faults begin once the first supervisor has looked (its first polls).
    if no_gpus:
        faults = [f for f in faults if f.at >= FIRST_LOOK_S]
    # `verl`: one seed in three trains veRL, with a keep rule the product accepts (null or >= 2).
    trainer = random.Random(seed + 7_000_003)
    framework, verl_keep = "nemo-rl", 0
    if verl and trainer.random() < 1 / 3:
        framework, verl_keep = "verl", trainer.choice([0, 2, 3])
    # `flex`: one seed in four runs on flex-start GPUs of a 3, 6 or 12-hour life, the nodes up
    # at the submit of any age.
    flex_draw = random.Random(seed + 9_000_003)
    node_max_run_s, flex_age = 0.0, 0.0
    if flex and flex_draw.random() < 0.25:
        node_max_run_s = flex_draw.choice([3, 6, 12]) * 3600.0
        flex_age = round(flex_draw.random(), 2)
    return Schedule(
        seed,
        faults,
        keep=keep,
        from_seed=True,
        framework=framework,
        verl_keep=verl_keep,
        node_max_run_s=node_max_run_s,
        flex_age=flex_age,
        declare_gpus=not no_gpus,
        slow_submits=slow_submits,
        races=races,
        spare_nodes=more.choice([0, 0, 1]),
        stall_timeout_s=stall_timeout_s,
        reserve_gpus=random.Random(seed + 2_000_003).choice([0.0, 0.0, 16.0]),
        probe_capacity=random.Random(seed + 3_000_003).random() < 0.8,
    )


_PRUNES = [0]  # calls of hygiene.prune in this process, counted while a schedule runs


def _counted_prune(directory: str, keep: int, held: bool) -> list[str]:
    _PRUNES[0] += 1
    return _REAL_PRUNE(directory, keep, held)


_REAL_PRUNE = hygiene.prune


def simulate(
    schedule: Schedule, base: Path, tail_s: float = 48 * 3600.0, files: Files | None = None
) -> World:
    """Run one schedule: submit at t=0, the faults, then a quiet tail with capacity back.
    `files`: the runs root's file system (default: in memory; `jobs.head.files.LOCAL` for
    real files under `base`)."""
    base.mkdir(parents=True, exist_ok=True)
    world = World(schedule, base, files)
    hygiene.prune = _counted_prune  # the real prune, counted (see World.check)
    try:
        world.at(T0, lambda: world._as_user(world.submit_run))
        for f in schedule.faults:

            def fault(f: Fault = f) -> None:
                world.apply(f)

            fault.user = f.kind in ("stop", "resume")  # type: ignore[attr-defined]
            world.at(T0 + f.at, fault)
        last = max((f.at for f in schedule.faults), default=0.0)

        def sweeps() -> None:
            world.sweep()
            world.at(world.now + REARM_INTERVAL_S, sweeps)

        world.at(T0 + REARM_INTERVAL_S, sweeps)
        if schedule.on_demand:

            def ticks() -> None:
                world.autoscale()
                world.at(world.now + AUTOSCALE_TICK_S, ticks)

            world.at(T0 + AUTOSCALE_TICK_S, ticks)
        world.run(T0 + last + tail_s)
        world.final_check()
    finally:
        world.shutdown()
        hygiene.prune = _REAL_PRUNE
    return world


def attempt_traces(world: World) -> list[goodput.AttemptTrace]:
    """The run's attempts as goodput reads them (Ray's start and end, the steps they logged)."""
    return [
        goodput.AttemptTrace(
            submission_id=job.submission_id,
            start_ms=job.start_time,
            end_ms=int(job.ended_at * 1000) if job.ended_at is not None else None,
            steps={int(n): goodput.Step(compute, save) for n, compute, save in job.logged},
        )
        for job in sorted(world.jobs.values(), key=lambda j: j.submitted_at)
        if job.kind != protocol.SUPERVISOR
    ]
