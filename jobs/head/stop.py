"""A user's stop of a supervised run, written into the run's record before its supervisor is stopped.

`rl-jobs stop RUN` on a run with a runs root submits `python -m jobs.head.stop RUN --runs-root DIR`
as a small job on the head (the CLI reaches the cluster only through the Jobs API, never
Lustre), waits for it, then stops the supervisor. The request is what makes the stop final: a
supervisor that gets SIGTERM without one (a head pod deleted by an upgrade sends SIGTERM too)
leaves the run to the re-armer, and the re-armer never takes a run whose current life holds a
request (jobs/head/events.py `stop_requested`). A later `submit --resume` starts a new life.
Standard library only (and Ray, to release the run's GPU request): it runs on the Ray head.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable

from jobs.head import events as ev
from jobs.head import scale_up
from jobs.head.run_store import Lease, RunStore


def request_stop(store: RunStore, by: str) -> None:
    """Record the user's stop in the run's record (appended and fsynced before it returns)."""
    _append_stop(
        store,
        ev.STOP_REQUESTED,
        by,
        f"stop requested by the user ({by}); the run is never re-armed after this",
    )


def record_stop(
    store: RunStore,
    by: str,
    drop_gpu_request: Callable[[str], None],
    supervisor_gone: bool = False,
    end_attempts: Callable[[list[str]], int | None] = lambda _sids: None,
    head: str | None = None,
) -> None:
    """The user's stop on the record; with no supervisor holding the run (killed, or lost with
    its head) none will write its end or release its GPU request, so the request is the end
    (else a re-armer would take the run back), its live attempts are ended here
    (`end_attempts`: stops them and returns when the last one ended, in ms, as Ray recorded it)
    and the GPU request is dropped. `supervisor_gone`: Ray's job table shows no live
    supervisor of the run, so a lease that has not lapsed yet (a supervisor killed a moment
    ago) is nobody's, unless it names another Ray head than ours (`head`): this head's job
    table knows nothing of that head's supervisor, which writes the end itself."""
    if not ev.stop_requested(store.events()):
        request_stop(store, by)
    lease = store.lease()
    if store.alive(lease) and (not supervisor_gone or _on_another_head(lease, head)):
        return
    # The end is recorded once the attempts ended, at Ray's time: the record then tells the
    # run's life as the cluster's job table does (a trainer takes seconds to exit after SIGTERM).
    ended_ms = end_attempts(_unended_attempts(store.events()))
    _append_stop(
        store,
        ev.STOPPED,
        by,
        f"stopped by the user ({by}) while no supervisor held the run",
        **({"ended_ms": ended_ms} if ended_ms else {}),
    )
    spec = store.spec()
    if spec is not None and spec.get("request_gpus"):
        drop_gpu_request(store.run)


def _on_another_head(lease: Lease | None, head: str | None) -> bool:
    return lease is not None and None not in (lease.head, head) and lease.head != head


def _own_head() -> str | None:
    """This head's Ray session (jobs/client/api.py `session_name`); None outside a Ray job or
    when the dashboard does not say."""
    if not os.environ.get("RAY_ADDRESS"):
        return None
    try:
        import ray

        from jobs.client.api import JobsAPI

        ctx = ray.init(log_to_driver=False, ignore_reinit_error=True)
        return JobsAPI(f"http://{ctx.dashboard_url}").session_name()
    except Exception:  # unknown: the stop reads the lease as one of this head's, as before
        return None


def _append_stop(store: RunStore, kind: str, by: str, message: str, **fields: object) -> None:
    """One record of the user's stop, naming who asked (`by`)."""
    store.append(
        ev.record(kind, store.run, message, at=store.clock.time(), requested_by=by, **fields)
    )


def _unended_attempts(recs: list[dict[str, object]]) -> list[str]:
    """The run's attempts whose end is not on the record (the supervisor that sent them is gone)."""
    sent = [
        str(r["submission_id"])
        for r in recs
        if r.get("event") == ev.SUBMITTED and r.get("submission_id")
    ]
    ended = {r.get("submission_id") for r in recs if r.get("event") == ev.ATTEMPT_ENDED}
    return [sid for sid in sent if sid not in ended]


# Ray sends SIGKILL 3 s after SIGTERM (job_supervisor.py RAY_JOB_STOP_WAIT_TIME_S): a job not
# ended well after that is not going to end by our wait.
END_WAIT_S = 30.0


def _end_on_ray(sids: list[str]) -> int | None:
    """Stop the attempts Ray still runs (the head's Jobs API) and wait for their end; the
    latest end Ray recorded, in ms (None: none known to this cluster, or not on a cluster)."""
    if not sids or not os.environ.get("RAY_ADDRESS"):
        return None
    try:
        import ray

        from jobs.client.api import JobsAPI

        ctx = ray.init(log_to_driver=False, ignore_reinit_error=True)
        client = JobsAPI(f"http://{ctx.dashboard_url}")
        known = []
        for sid in sids:
            try:
                if not client.get_job_status(sid).is_terminal():
                    client.stop_job(sid)
                known.append(sid)
            except RuntimeError:  # not this cluster's (its head was lost): nothing runs it
                continue
        deadline = time.monotonic() + END_WAIT_S
        while known and time.monotonic() < deadline:
            infos = [client.get_job_info(sid) for sid in known]
            if all(i.status.is_terminal() for i in infos):
                return max((i.end_time or 0 for i in infos), default=0) or None
            time.sleep(0.5)
    except Exception as e:  # the stop stands; its time is the record's own
        print(f"could not wait for the run's attempts to end: {type(e).__name__}: {e}", flush=True)
    return None


def _drop_gpu_request(run: str) -> None:
    """The run's request to Ray's autoscaler, left by its dead supervisor: without this the GPU
    nodes it asked for would stay up, billed, until another run's request replaced it."""
    try:
        import ray

        ray.init(log_to_driver=False, ignore_reinit_error=True)
        scale_up.on_ray().drop(run)
        print(f"released run {run}'s GPU request: idle GPU nodes are removed", flush=True)
    except Exception as e:  # the stop stands; say what was left
        print(f"could not release run {run}'s GPU request: {type(e).__name__}: {e}", flush=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jobs.head.stop", description=__doc__.splitlines()[0]
    )
    parser.add_argument("run", help="the run to stop")
    parser.add_argument("--runs-root", required=True, help="where the run's record lives")
    parser.add_argument("--by", default="rl-jobs stop", help="who asked (for the record)")
    parser.add_argument(
        "--supervisor-gone",
        action="store_true",
        help="no supervisor of the run is alive in Ray's job table: the stop is the run's end",
    )
    args = parser.parse_args(argv)
    store = RunStore(args.runs_root, args.run)
    if store.spec() is None:
        print(f"no run record for {args.run} under {args.runs_root}", file=sys.stderr)
        return 1
    recs = store.events()
    ended = ev.outcome(recs)
    if ended is not None:  # a finished run's record is never rewritten
        print(f"run {args.run} already ended: {ended.get('message', '')}", flush=True)
        return 0
    record_stop(
        store,
        args.by,
        _drop_gpu_request,
        supervisor_gone=args.supervisor_gone,
        end_attempts=_end_on_ray,
        head=_own_head() if args.supervisor_gone else None,
    )
    print(f"stop of {args.run} recorded in {store.dir}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
