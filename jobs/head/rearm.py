"""The re-armer: gives every supervised, unfinished run whose supervisor is gone a new one.

`python -m jobs.head.rearm --address URL --runs-root DIR` keeps running beside the Ray head
(a sidecar container of the head pod, components/k8s/raycluster.py). Every interval it reads
the run records on the runs root (jobs/head/run_store.py) and re-arms a run whose record is
not finished and whose lease has lapsed (its supervisor was killed, or the head it ran on was
lost with the whole cluster), unless a live supervisor of the run is already on this cluster.
Before submitting it takes the run's next lease generation in the new supervisor's name
(O_EXCL): two re-armers, or two heads, never arm one run twice. The new supervisor
(jobs/head/run_restore.py `restore`) adopts the run's live attempt, or counts an attempt lost with
the head as a preemption, and goes on from the last complete checkpoint with the budgets the
record says are left. Ray's own client uploads the supervisor's code (this `jobs` package) and
the attempts' working dir kept beside the record, since gcs:// packages die with the GCS.
Standard library and Ray: it runs in the head's image.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobs.client.api import JobsAPI
from jobs.head import events as ev
from jobs.head import protocol
from jobs.head.clock import REAL, Clock
from jobs.head.files import LOCAL, Files
from jobs.head.run_store import Lease, RunStore, runs

JOBS_DIR = Path(__file__).resolve().parents[1]
# How long the lease taken for a new supervisor lasts before it renews it itself: a driver
# starts in a few seconds (reference §4.3), a minute means the head is in trouble.
HANDOFF_S = 120.0
# How long after a lease of another Ray head lapsed this head's re-armer leaves the run to that
# head's (which sweeps every 10 s). Its supervisor may have been killed with the head still up and
# the run's attempt running there: only that head's Ray knows the attempt, so only its re-armer's
# supervisor adopts it; one re-armed here would take it for lost with the head (404) and start
# the next attempt beside it. After a head loss a new head's pod takes longer than this to start.
OTHER_HEAD_GRACE_S = 60.0


def _number(sid: str | None) -> int:
    return protocol.supervisor_number(sid or "")


def _supervisor_env(store: RunStore) -> dict[str, Any]:
    env_vars = {k: v for k, v in os.environ.items() if k.startswith("JOBS_SUPERVISOR_")}
    env_vars["PYTHONSAFEPATH"] = "1"  # a jobs/ folder in the user's code must not shadow ours
    runtime_env: dict[str, Any] = {"py_modules": [str(JOBS_DIR)], "env_vars": env_vars}
    kept = store.dir / "working_dir"
    if store.files.is_dir(kept):
        runtime_env["working_dir"] = str(kept)
    return runtime_env


@dataclass(eq=False)
class Rearmer:
    client: Any
    root: str
    write: Any = print
    clock: Clock = REAL
    files: Files = LOCAL
    # This head's Ray session, written into the hand-off lease: a supervisor on another head
    # then knows its own Ray cannot tell whether the new supervisor lives (run_store.py `Lease`).
    head: str | None = None
    # `OTHER_HEAD_GRACE_S` unless the re-armer was started with --other-head-grace.
    other_head_grace_s: float = OTHER_HEAD_GRACE_S
    _stores: dict[str, RunStore] = field(default_factory=dict, init=False)

    def store(self, run: str) -> RunStore:
        store = self._stores.get(run)
        if store is None:
            store = self._stores[run] = RunStore(self.root, run, self.clock, self.files)
        return store

    def live_supervisor(self, jobs: list[Any], run: str) -> str | None:
        live = protocol.live_job_ids(jobs, protocol.SUPERVISOR, run)
        return live[0] if live else None

    def unended(self) -> tuple[list[str], list[str]]:
        """The unfinished supervised runs whose lease lapsed, read once per sweep: (those to
        re-arm, those a user stopped whose supervisor died before it wrote the end: the stop
        job saw its lease still held, so nobody wrote the end or released the run's GPU
        request, and a stopped run is never re-armed)."""
        rearm: list[str] = []
        stopped: list[str] = []
        for run in runs(self.root, self.files):
            store = self.store(run)
            # The lease first: it is one small file, while the record grows all the run long
            # (a "still waiting" line a minute through a stockout of hours), and a run whose
            # lease is alive is never a candidate, whatever its record says.
            if self._held(store.lease()) or store.spec() is None:
                continue
            recs = store.events()
            if ev.outcome(recs) is None:
                (stopped if ev.stop_requested(recs) else rearm).append(run)
        return rearm, stopped

    def _held(self, lease: Lease | None) -> bool:
        """Alive, or lapsed a moment ago on another head (`other_head_grace_s`)."""
        if lease is None:
            return False
        now = self.clock.time()
        if lease.head is None or self.head is None or lease.head == self.head:
            return lease.alive(now)
        return now < lease.renewed + lease.ttl_s + self.other_head_grace_s

    def candidates(self) -> list[str]:
        """Runs whose record is supervised, unfinished, not asked to stop, and whose lease
        lapsed."""
        return self.unended()[0]

    def unended_stops(self) -> list[str]:
        """Runs a user stopped whose supervisor died before it wrote the end (`unended`)."""
        return self.unended()[1]

    def end_stop(self, run: str, jobs: list[Any]) -> str | None:
        """Submit the run's stop job again (jobs/head/stop.py), which now finds no supervisor
        and writes the end and drops the GPU request; its id, or None while a job of the run's
        supervisor or stop still runs."""
        if self.live_supervisor(jobs, run) is not None:
            return None
        stops = [
            j
            for j in jobs
            if (j.metadata or {}).get("run") == run
            and (j.metadata or {}).get("kind") == protocol.STOP
        ]
        if any(not j.status.is_terminal() for j in stops):
            return None
        sid = f"{run}-stop{1 + len(stops)}"
        self.client.submit_job(
            entrypoint=f"python -m {protocol.STOP_MODULE} {run} --runs-root {self.root} "
            "--by re-armer",
            runtime_env={"py_modules": [str(JOBS_DIR)], "env_vars": {"PYTHONSAFEPATH": "1"}},
            metadata={
                "run": run,
                "kind": protocol.STOP,
                "submitted_by": "python -m jobs.head.rearm",
            },
            submission_id=sid,
        )
        return sid

    def stop_orphans(self, jobs: list[Any]) -> list[str]:
        """Stop the live attempts of runs the user stopped that no supervisor holds: an attempt
        Ray took after the user's CLI had stopped the run's attempts (a submit answered late,
        its supervisor SIGKILLed 3 s after the stop while it waited for the answer: found by
        the simulation) is nobody else's to stop, also once the stop job wrote the end."""
        stopped = []
        for job in jobs:
            meta = job.metadata or {}
            run = str(meta.get("run") or "")
            if meta.get("kind") not in (protocol.RECIPE, protocol.COMMAND) or not run:
                continue
            if job.status.is_terminal() or self.live_supervisor(jobs, run) is not None:
                continue
            store = self.store(run)
            if store.spec() is None or store.alive(store.lease()):
                continue
            if ev.stop_requested(store.events()):
                self.client.stop_job(job.submission_id)
                self.write(f"rearm: {run}: stopped {job.submission_id}, which came after the stop")
                stopped.append(job.submission_id)
        return stopped

    def rearm(self, run: str, jobs: list[Any]) -> str | None:
        """Submit the run's next supervisor; its id, or None when someone else has the run."""
        if self.live_supervisor(jobs, run) is not None:
            return None
        store = self.store(run)
        spec = store.spec()
        assert spec is not None
        seen = [_number(r.get("supervisor")) for r in store.events()]
        seen += [_number(j.submission_id) for j in jobs if (j.metadata or {}).get("run") == run]
        sid = f"{run}-s{1 + max(seen, default=0)}"
        if store.acquire(sid, HANDOFF_S, self.head) is None:
            return None  # another re-armer (or a supervisor) took it first
        meta = protocol.supervisor_metadata(
            spec, _number(sid), "python -m jobs.head.rearm", rearmed=True
        )
        self.client.submit_job(
            entrypoint=protocol.supervisor_entrypoint(sid),
            runtime_env=_supervisor_env(store),
            metadata=meta,
            submission_id=sid,
        )
        store.append(
            ev.record(
                ev.REARMED,
                run,
                f"re-armed by the re-armer as {sid}: the previous supervisor's lease had lapsed",
                at=self.clock.time(),
                supervisor=sid,
            )
        )
        return sid

    def sweep(self) -> list[str]:
        todo, stops = self.unended()
        jobs = self.client.list_jobs()
        self.stop_orphans(jobs)
        if not todo and not stops:
            return []
        self._each(
            stops,
            lambda run: self.end_stop(run, jobs),
            "ended (stopped while its supervisor was gone) by",
        )
        return self._each(todo, lambda run: self.rearm(run, jobs), "re-armed as")

    def _each(self, todo: list[str], act: Any, done: str) -> list[str]:
        """`act` on each run (an error is written and the next run taken); the jobs submitted."""
        submitted = []
        for run in todo:
            try:
                sid = act(run)
            except (RuntimeError, OSError, ValueError) as e:
                self.write(f"rearm: {run}: {type(e).__name__}: {e}")
                continue
            if sid:
                self.write(f"rearm: {run} {done} {sid}")
                submitted.append(sid)
        return submitted


def _seconds(text: str) -> float:
    """A grace in seconds: a negative one would take another head's lease while it lives."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give 0 or more seconds")
    return value


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jobs.head.rearm", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--address", required=True, help="the Ray dashboard URL")
    parser.add_argument("--runs-root", required=True, help="where run records live")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between sweeps")
    parser.add_argument(
        "--other-head-grace",
        type=_seconds,
        default=OTHER_HEAD_GRACE_S,
        metavar="SECONDS",
        help="how long a lapsed lease of another Ray head stays that head's to re-arm",
    )
    args = parser.parse_args(argv)
    from ray.job_submission import JobSubmissionClient

    stop = threading.Event()
    client: Any = None
    head: str | None = None
    while not stop.is_set():
        try:
            if client is None:  # the head may not answer yet: it starts with us
                client = JobSubmissionClient(args.address)
                head = JobsAPI(args.address).session_name()
            Rearmer(
                client, args.runs_root, head=head, other_head_grace_s=args.other_head_grace
            ).sweep()
        except (RuntimeError, OSError, ConnectionError, ValueError) as e:
            print(f"rearm: {type(e).__name__}: {e}", flush=True)
            client = None
        sys.stdout.flush()
        stop.wait(args.interval)
    return 0


def run(argv: list[str]) -> int:
    """`main`, ended by Ctrl-C (a person trying the re-armer in a terminal) with one line and
    exit 130, not a traceback that reads as a crash."""
    try:
        return main(argv)
    except KeyboardInterrupt:
        print("rearm: interrupted; runs stay as recorded (start it again to go on)", flush=True)
        return 130


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
