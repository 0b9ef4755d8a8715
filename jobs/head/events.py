"""The supervisor's decision records: one JSON line each in its own job log, and how to read them.

Why the job log and not Ray's internal KV: the CLI reaches the cluster only through the
dashboard's Jobs API (often over a port-forward), which serves job logs (`get_job_logs`) but has
no KV endpoint; a log also outlives the supervisor (Ray keeps a finished job's log with its
record) and reads as the run's story with `ray job logs` too. Standard library only: this
module is imported on the Ray head by the supervisor.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

PREFIX = "JOBS-SUPERVISOR "

# Events, in the order a run meets them.
ARMED = "armed"  # the supervisor has the run
SUBMITTED = "submitted"  # attempt N submitted (N > first: a resubmit)
ATTEMPT_ENDED = "attempt_ended"  # attempt N ended: SUCCEEDED / FAILED / STOPPED
WAITING = "waiting"  # waiting for N GPUs since T
STILL_WAITING = "still_waiting"  # periodic progress while waiting
GPUS_BACK = "gpus_back"
SETTLING = "settling"  # after a failure: waiting for the cluster to settle before judging it
PREEMPTED = "preempted"  # the attempt ended while a node that could host its GPU workers died
STALLED = "stalled"  # the watchdog stopped an attempt silent for longer than its stall timeout
ERROR = "error"  # an unexpected error in the supervisor: recorded, retried with backoff
HELD = "held"  # an export of the run is running: no pruning, no attempt until it ends
PRUNED = "pruned"  # checkpoints beyond keep-N removed between attempts
REARMED = "rearmed"  # the re-armer gave the run a new supervisor (its lease had lapsed)
LEFT = "left"  # this supervisor leaves the run to another one (not the run's end)
ADOPTED = "adopted"  # a re-armed supervisor took over the run's live attempt
FINISHED = "finished"  # the run succeeded
GAVE_UP = "gave_up"  # no further attempt, and why (reason: jobs.head.restart_policy.Reason)
STOPPED = "stopped"  # `stop RUN`: the supervisor was stopped
FINAL = (FINISHED, GAVE_UP, STOPPED)


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def record(event: str, run: str, message: str, **fields: Any) -> dict[str, Any]:
    return {"t": now_iso(), "event": event, "run": run, "message": message, **fields}


def line(event: str, run: str, message: str, **fields: Any) -> str:
    return PREFIX + json.dumps(record(event, run, message, **fields), sort_keys=True)


def parse(log: str) -> list[dict[str, Any]]:
    """Every record in a supervisor log, in order; other lines (Ray's own) are skipped."""
    out = []
    for raw in log.splitlines():
        at = raw.find(PREFIX)
        if at < 0:
            continue
        try:
            record = json.loads(raw[at + len(PREFIX) :])
        except ValueError:
            continue  # a line cut by a log rotation or a crash mid-write
        if isinstance(record, dict) and "event" in record:
            out.append(record)
    return out


def human(record: dict[str, Any]) -> str:
    attempt = f" a{record['attempt']}" if record.get("attempt") else ""
    return (
        f"{record.get('t', '?')} {record.get('event', '?')}{attempt}: {record.get('message', '')}"
    )
