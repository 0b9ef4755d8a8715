"""A run as its record on the runs root tells it: attempts, supervision, outcome (no head needed).

`status`, `list` and `logs` with `--runs-root` read the record the supervisor keeps on shared
storage (jobs/head/run_store.py), so a run's story outlives the head that wrote it. A run whose
record is not finished and whose lease has lapsed is "unsupervised": its supervisor is gone (an
out-of-memory kill, a head lost) and the re-armer (jobs/head/rearm.py) takes it back.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from components.contract import RUNS_ROOT
from jobs.common.errors import UsageError
from jobs.head import events as run_events
from jobs.head.run_store import RunStore, runs
from jobs.runs import goodput, metrics, run_goodput, run_step
from jobs.runs.state import UNSUPERVISED, WAITING

RUNNING = "RUNNING"


def check_root(root: str | Path) -> None:
    """A runs root that is not a directory is a typo, never an empty list: the supervisor records
    runs only where it was told, and the re-armer watches only its own root."""
    if not Path(root).is_dir():
        raise UsageError(
            f"--runs-root {root}: no such directory",
            f"give the runs root the runs were submitted with (the stack's is {RUNS_ROOT}, "
            "as the Ray head sees it)",
        )


def has_record(root: str | Path, run: str) -> bool:
    return bool(RunStore(root, run).events())


def view(root: str | Path, run: str, now: float | None = None) -> dict[str, Any]:
    """The run's attempts (id -> last known status and cause), supervision and outcome."""
    store = RunStore(root, run)
    recs = store.events()
    attempts: dict[str, dict[str, Any]] = {}
    for r in recs:
        sid = r.get("submission_id")
        if r["event"] == run_events.SUBMITTED and sid:
            attempts[sid] = {
                "submission_id": sid,
                "attempt": r.get("attempt"),
                "status": "RUNNING",
                "cause": None,
                "supervisor": r.get("supervisor"),
            }
        elif r["event"] == run_events.ATTEMPT_ENDED and sid in attempts:
            attempts[sid]["status"] = r.get("status")
        elif r["event"] in (run_events.PREEMPTED, run_events.STALLED) and sid in attempts:
            attempts[sid]["cause"] = r["event"]
    final = run_events.outcome(recs)  # the current life's end (a resumed run is not over)
    if final is not None and final["event"] == run_events.STOPPED:
        # A user's stop ends every live attempt (jobs/runs/handoff.py stop_run); one stopped
        # while no supervisor held the run has no attempt_ended record of its own.
        for a in attempts.values():
            if a["status"] == "RUNNING":
                a["status"] = "STOPPED"
    lease = store.lease()
    alive = store.alive(lease) if now is None else lease is not None and lease.alive(now)
    if final is not None:
        # The cluster's words (jobs/runs/state.py shown_status): a run that gave up is FAILED,
        # its outcome says why.
        state = {run_events.FINISHED: "SUCCEEDED", run_events.STOPPED: "STOPPED"}.get(
            final["event"], "FAILED"
        )
    elif alive and _between_attempts(recs, attempts):
        # A live supervisor that has not sent this life's first attempt (waiting for its GPUs),
        # or whose latest attempt ended (settling, waiting for GPUs after a preemption), as the
        # cluster's view says it (jobs/runs/state.py WAITING).
        state = WAITING
    elif alive:
        state = RUNNING  # its latest attempt, as the supervisor last recorded it
    else:
        state = UNSUPERVISED
    holder = lease.holder if lease else None
    return {
        "run": run,
        "status": state,
        "attempts": list(attempts.values()),
        "supervisor": {
            "submission_id": holder,
            "lease_alive": alive,
            "renewed": lease.renewed if lease else None,
        },
        "outcome": final,
        "history": recs,
        "record": str(store.dir),
    }


def _between_attempts(recs: list[dict[str, Any]], attempts: dict[str, dict[str, Any]]) -> bool:
    """No attempt of this life sent yet, or the latest one ended without success."""
    if not any(r.get("event") == run_events.SUBMITTED for r in run_events.life(recs)):
        return True
    latest = list(attempts.values())[-1] if attempts else None
    return latest is not None and latest.get("status") in ("FAILED", "STOPPED")


def with_goodput(v: dict[str, Any], root: str | Path, outputs: Any | None = None) -> dict[str, Any]:
    """`view` with the run's progress and goodput, from the step lines its supervisor kept
    beside the record (jobs/runs/run_goodput.py `of_record`); priced when the stack is known."""
    spent, curves = run_goodput.of_record(RunStore(root, v["run"]), v["history"])
    return {
        **v,
        "progress": run_step.reached(metrics.progress(curves), v["history"]),
        "goodput": goodput.priced(spent.as_json(), outputs),
    }


def lines(v: dict[str, Any], now: float | None = None) -> list[str]:
    """The human view of `view` (the `status` command prints these)."""
    out = [f"{'run':>16}: {v['run']}", f"{'status':>16}: {v['status']}"]
    sup = v["supervisor"]
    if v["status"] == UNSUPERVISED:
        ago = (time.time() if now is None else now) - (sup["renewed"] or 0)
        who = sup["submission_id"] or "no supervisor"
        out.append(
            f"{'supervisor':>16}: unsupervised: {who} last renewed its lease "
            f"{ago:.0f} s ago; the re-armer takes the run back"
        )
    elif sup["submission_id"]:
        out.append(
            f"{'supervisor':>16}: {sup['submission_id']}"
            + (" (alive)" if sup["lease_alive"] else " (ended)")
        )
    for a in v["attempts"]:
        cause = f" ({a['cause']})" if a["cause"] else ""
        out.append(f"{'attempt':>16}: {a['submission_id']} {a['status']}{cause}")
    if v["outcome"]:
        out.append(f"{'outcome':>16}: {v['outcome']['message']}")
    out.append(f"{'record':>16}: {v['record']}")
    out.append(f"{'history':>16}:")
    out += [f"  {run_events.human(r)}" for r in v["history"]]
    return out


def listing(root: str | Path, now: float | None = None) -> list[dict[str, Any]]:
    """One row per recorded run: status, attempts, the last step its latest ended attempt
    logged (from the step lines kept beside the record) and its duration (the `list` rows)."""
    rows = []
    for run in runs(root):
        v = with_goodput(view(root, run, now), root)
        progress = v["progress"]
        rows.append(
            {
                "run": run,
                "status": v["status"],
                # The current life's end, by its event, as the cluster's list names it.
                "outcome": v["outcome"]["event"] if v["outcome"] else None,
                "attempts": v["attempts"],
                "last_event": v["history"][-1] if v["history"] else None,
                "step": progress["step"] if progress else None,
                "of": progress.get("of") if progress else None,
                # Its life as `status`'s goodput counts it (the cluster's `list` too).
                "duration_s": round(sum(v["goodput"]["seconds"].values()), 1),
            }
        )
    return rows
