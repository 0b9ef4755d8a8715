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
# GPUs that scale on demand: the run's request to Ray's autoscaler (jobs/head/scale_up.py).
GPUS_REQUESTED = "gpus_requested"
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
EVAL_QUEUED = "eval_queued"  # `submit --eval-at-end`: the run's eval job sent after its success
EVAL_NOT_QUEUED = "eval_not_queued"  # ...or why it could not be (the run stays a success)
GAVE_UP = "gave_up"  # no further attempt, and why (reason: jobs.head.restart_policy.Reason)
STOPPED = "stopped"  # `stop RUN`: the supervisor was stopped
# The supervisor refused to start (a runs root missing on the head, protocol.runs_root_refusal):
# it never took the run and nothing was submitted; the record is only in its own job log.
REFUSED = "refused"
STOP_REQUESTED = "stop_requested"  # `stop RUN` asked for the run's end (jobs/head/stop.py)
GPUS_RELEASED = "gpus_released"  # the run's end released its GPU request
INTERRUPTED = "interrupted"  # the supervisor got SIGTERM without a stop request: not the end
# On flex-start GPUs: when the attempt about to be submitted is told to save (jobs/head/node_end.py).
SAVE_BEFORE_NODE_END = "save_before_node_end"
# The GPUs of the nodes a running attempt's workers reached, learnt while it runs (its end may
# be lost with the head): what a run that declares fewer waits for after a preemption.
GPUS_USED = "gpus_used"
FINAL = (FINISHED, GAVE_UP, STOPPED, REFUSED)


def _life_start(recs: list[dict[str, Any]]) -> int | None:
    """The index of the current life's first record (None when the run never had a fresh
    hand-off). Read backwards: the record grows all the run long and is read at every poll."""
    for i in range(len(recs) - 1, -1, -1):
        r = recs[i]
        if r.get("event") == ARMED and r.get("fresh"):
            return i
    return None


def life(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records of the run's current life: from its last fresh hand-off (an `armed` record
    with `fresh`, written by a supervisor the CLI started, never by a re-armed one) on. A run
    resumed after it ended starts a new life: the old end and an old stop request are history."""
    start = _life_start(recs)
    return recs if start is None else recs[start:]


def outcome(recs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The final record of the run's current life, or None while it is not over."""
    rec: dict[str, Any]
    for rec in reversed(recs):
        event = rec.get("event")
        if event in FINAL:
            return rec
        if event == ARMED and rec.get("fresh"):
            return None  # the life began after every final record
    return None


def stop_requested(recs: list[dict[str, Any]]) -> bool:
    """A user asked the run's current life to stop: it is never re-armed, and a supervisor that
    gets SIGTERM (or finds the request) ends it."""
    for r in reversed(recs):
        event = r.get("event")
        if event == STOP_REQUESTED:
            return True
        if event == ARMED and r.get("fresh"):
            return False
    return False


def now_iso(at: float | None = None) -> str:
    """`at` (seconds since the epoch; now when None) as the records' UTC timestamp."""
    moment = datetime.now(UTC) if at is None else datetime.fromtimestamp(at, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def record(
    event: str, run: str, message: str, at: float | None = None, **fields: Any
) -> dict[str, Any]:
    """A record stamped `at` (the writer's clock: a simulated one in tests), else now."""
    return {"t": now_iso(at), "event": event, "run": run, "message": message, **fields}


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
