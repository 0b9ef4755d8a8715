"""Two takers of one lease, and two heads on one runs root, in the simulated world.

The lease's one-winner rule (jobs/head/run_store.py `acquire`: read the newest lease, then create
the next generation with O_EXCL) only shows when a second taker acts between a first taker's read
and its create, and only costs something when the two takers sit on two clusters: on one, Ray
refuses the second supervisor's id (both takers name the same next supervisor) and hides the race.
So the world can:
- switch to a rival taker at that point: the in-memory runs root calls `hook` just before each
  create (tests/jobs/head/sim/memfs.py `before_create`); an armed rival (a re-armer's sweep of the
  run) runs there, to completion, then the first taker's create goes on and meets the rival's file;
- run a second head "B" with a job table of its own (`ClusterView`) beside the primary one, whose
  re-armer is such a rival after a head loss. Both heads see one node table (a simplification:
  what the lease decides is which job table drives the run). Once the race is over the head that
  drives nothing is retired and the other is the cluster from then on; a run driven from both
  (two live supervisors) is left as it is for the invariants to see.
Deterministic: the rival runs at the first lease create after it is armed, whichever actor that is.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobs.client.types import JobStatus
from jobs.head.rearm import Rearmer

if TYPE_CHECKING:
    from tests.jobs.head.sim.world import Job, World

SECOND = "B"
LIVE = (JobStatus.PENDING, JobStatus.RUNNING)


class ClusterView:
    """One cluster's Jobs API: the world's jobs that this cluster's Ray holds."""

    def __init__(self, world: World, cluster: str) -> None:
        self.world = world
        self.cluster = cluster

    def get_job_status(self, sid: str) -> Any:
        return self.world.get_job_status(sid, self.cluster)

    def get_job_info(self, sid: str) -> Job:
        return self.world.get_job_info(sid, self.cluster)

    def list_jobs(self) -> list[Job]:
        return self.world.list_jobs(self.cluster)

    def get_job_logs(self, sid: str) -> str:
        return self.world.get_job_logs(sid, self.cluster)

    def stop_job(self, sid: str) -> bool:
        return self.world.stop_job(sid, self.cluster)

    def submit_job(self, **kw: Any) -> str:
        return self.world.submit_job(cluster=self.cluster, **kw)


class SecondHead:
    """The rival taker the world may arm, and the second head it may bring up."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.rival: Callable[[], None] | None = None
        self.second: str | None = None  # a second head is up (its name), until retired
        self._quiet = False

    # ------------------------------------------------------------------ the race

    def hook(self, path: Path) -> None:
        """Before any create on the runs root: a lease create runs the armed rival first."""
        if self.rival is None or self._quiet or not path.name.startswith("lease."):
            return
        rival, self.rival = self.rival, None
        self.world.note(
            f"race: a rival taker acts between a lease read and its create ({path.name})"
        )
        rival()

    def quietly(self, action: Callable[[], None]) -> None:
        """`action` with no race (a fault that creates a lease file itself)."""
        self._quiet = True
        try:
            action()
        finally:
            self._quiet = False

    def rearmer(self, cluster: str) -> Rearmer:
        w = self.world
        client = ClusterView(w, cluster)
        return Rearmer(
            client,
            str(w.root),
            write=lambda _l: None,
            clock=w.clock,
            files=w.files,
            head=w.sessions[cluster],
        )

    def rival_sweep(self, cluster: str) -> Callable[[], None]:
        """A re-armer of `cluster` re-arming whatever it finds lapsed, as its sweep would."""
        rearmer = self.rearmer(cluster)

        def sweep() -> None:
            rearmer.head = self.world.sessions[cluster]  # its head now (a head back is new)
            try:
                listing = rearmer.client.list_jobs()
                for run in rearmer.candidates():
                    if sid := rearmer.rearm(run, listing):
                        self.world.note(f"rival re-armer ({cluster}) submits {sid}")
            except (RuntimeError, OSError, ConnectionError, ValueError):
                pass

        return sweep

    def arm_twin(self) -> None:
        """Fault "race": the next lease create meets a second re-armer of the same cluster."""
        self.rival = self.rival_sweep(self.world.primary)

    def two_heads(self, seconds: float) -> None:
        """Fault "two_heads": the primary head is lost for `seconds` and a second head "B" comes
        up on the same runs root; the next re-arm is a race between the two heads' re-armers,
        the one that goes first picked by the seed."""
        w = self.world
        w._fault_head_loss(seconds)
        self.second = SECOND
        w.sessions[SECOND] = f"session_{SECOND}_{w.head_losses}"
        first_is_b = w.rng.random() < 0.5
        self.rival = self.rival_sweep(w.primary if first_is_b else SECOND)
        if first_is_b:
            w.at(w.now + seconds + 1, self.rival_sweep(SECOND))

    # ------------------------------------------------------------------ after the race

    def settle(self) -> None:
        """Once the race ran: retire the head that drives nothing, and make the other the
        cluster (the user's commands and the world's re-armer act on it from then on)."""
        w = self.world
        if self.second is None or self.rival is not None:
            return
        jobs: dict[str, list[Job]] = {w.primary: [], self.second: []}
        for job in w.jobs.values():
            jobs.setdefault(job.cluster, []).append(job)
        live = {c: [j for j in js if j.status in LIVE] for c, js in jobs.items()}
        if live[w.primary] and live[self.second]:
            return  # a run driven from both heads: the invariants' to judge
        if jobs[self.second] and not live[w.primary]:
            kept = {j.submission_id: j for j in jobs[self.second]}
            w.primary = self.second
            w.jobs = kept
            w.note(f"head {self.second} won the run; the other head is retired")
        elif not live[self.second]:
            w.jobs = {w.key(w.primary, j.submission_id): j for j in jobs[w.primary]}
            w.note(f"head {self.second} retired (it took nothing)")
        else:
            return
        self.second = None
