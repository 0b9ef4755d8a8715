"""Supervised runs from the caller's side: hand a run to its supervisor, read its story, follow, stop.

The supervisor (jobs/head/supervisor.py) is a Ray job `<run>-s<N>` with metadata `kind=supervisor`
(the ids, kinds, spec and settings both sides share are jobs/head/protocol.py).
Its submission id is deterministic (N = 1 + the run's supervisors so far), so two commands
arming the same run at once collide on Ray's unique submission id and only one wins; a live
supervisor makes any further hand-off refuse, and a supervisor that finds an older live one
leaves (jobs/head/supervisor.py `other_supervisor`): two supervisors never drive the same run.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jobs
from components.contract import RUNS_ROOT
from jobs.client.dashboard import AlreadySubmitted, Dashboard
from jobs.client.types import JobDetails, JobStatus, Submission
from jobs.common import commands
from jobs.common.errors import NotFound, Unreachable, UsageError
from jobs.common.redact import redact
from jobs.head import events as run_events
from jobs.head import protocol
from jobs.runs import follow, listing, state
from jobs.runs.metadata import SUBMITTED_BY
from jobs.runs.plan import jobs_commit
from jobs.runs.report import Reporter
from jobs.runs.supervisor_start import (
    SupervisorNeverRan,
    ray_lost_the_job_supervisor,
    submit_until_armed,
)
from jobs.runs.workdir import DEFAULT_EXCLUDES

JOBS_DIR = Path(jobs.__file__).resolve().parent
DEFAULT_MAX_PREEMPTIONS = protocol.DEFAULT_MAX_PREEMPTIONS
RECIPE_STALL_TIMEOUT_S = protocol.RECIPE_STALL_TIMEOUT_S


@dataclass(frozen=True)
class Options:
    """What `run`/`submit` ask of the supervisor beyond --max-restarts."""

    max_preemptions: int | None = None
    stall_timeout_s: float | None = None
    runs_root: str = ""
    keep: int = 0  # complete checkpoints kept between attempts (veRL recipes); 0: no pruning
    capacity_deadline_s: float | None = None  # None: no deadline (protocol.Spec)
    # Flex-start GPUs: each node's maximum run duration, and the recipe's framework, whose
    # attempts are told to save before it (jobs/head/node_end.py); 0 / "": none.
    node_max_run_s: float = 0.0
    save_before_node_end: str = ""
    # GPU nodes that scale on demand: the supervisor asks Ray's autoscaler for the run's nodes
    # of `gpus_per_node` GPUs (jobs/head/scale_up.py).
    request_gpus: bool = False
    gpus_per_node: int = 0
    # Whether the hand-off waits until the supervisor has the run (its `armed` record), so a
    # supervisor that cannot start (a runs root missing on the head, a head whose `python` has
    # no Ray) fails the command that caused it. None (the default): wait unless a supervisor
    # of this same code already took a run under this runs root on this cluster, which is
    # what a wait would find out (`vouching_supervisor`); then return at submit, as `ray job
    # submit --no-wait` does. `--wait` / `--no-wait` decide it either way.
    wait_armed: bool | None = None
    # `submit --eval-at-end`: the eval job the supervisor sends once the run succeeded
    # (jobs/runs/eval_at_end.py `for_spec`, its local files uploaded at the hand-off); None: none.
    eval_job: dict[str, Any] | None = None

    def supervised(self, max_restarts: int) -> bool:
        return (
            self.eval_job is not None  # only a supervisor sees the run succeed
            or max_restarts > 0
            or bool(self.max_preemptions)
            or bool(self.stall_timeout_s)
            or bool(self.runs_root)
            or bool(self.capacity_deadline_s)
        )


# Starting the supervisor's driver takes a few seconds (reference §4.3: ~2-3 s to RUNNING);
# a minute means the head is in trouble.
HANDOFF_TIMEOUT_S = 120.0
POLL_S = 0.5


def supervisors(jobs_: list[JobDetails], run: str) -> list[JobDetails]:
    """The run's supervisor jobs, oldest first."""
    found = [j for j in jobs_ if listing.is_supervisor(j) and listing.run_of(j) == run]
    return sorted(found, key=lambda j: protocol.supervisor_number(j.submission_id or ""))


def live(sups: list[JobDetails]) -> JobDetails | None:
    alive = [s for s in sups if not s.status.is_terminal()]
    return alive[0] if alive else None


def hand_off(
    cluster: Dashboard,
    sub: Submission,
    *,
    max_restarts: int,
    gpus: int,
    checkpoint_dir: str,
    hint_where: str,
    options: Options = Options(),
    stall_default_s: float = 0.0,
    cluster_jobs: list[JobDetails] | None = None,
    supervised_as: str | None = None,
) -> HandedOff:
    """Submit the run's supervisor and, unless the cluster vouches for it, wait until it has the
    run. `cluster_jobs`: the cluster's job list if the caller just read it. `supervised_as`: the
    name supervised when the job is not an attempt of its run (an eval job `RUN-eval-N`, whose
    tries are `RUN-eval-N-aK`, its supervisor `RUN-eval-N-s1`); its tries start at 1."""
    run = supervised_as or sub.run
    existing = cluster.jobs() if cluster_jobs is None else cluster_jobs
    sups = _refuse_if_taken(existing, run, hint_where)
    # The attempt's working dir is uploaded now, from here: the supervisor submits attempts
    # from the head, where the caller's files are not. Ray's client turns the local path into
    # a gcs:// package URI (dashboard_sdk.py `_upload_working_dir_if_needed`, Ray 2.60).
    attempt_env = cluster.upload_working_dir(sub.runtime_env)
    spec = protocol.Spec(
        run=run,
        first_attempt=1 if supervised_as else sub.attempt,
        max_restarts=max_restarts,
        gpus_needed=gpus,
        checkpoint_dir=checkpoint_dir,
        entrypoint=sub.entrypoint,
        runtime_env=attempt_env,
        metadata=dict(sub.metadata),
        max_preemptions=(
            DEFAULT_MAX_PREEMPTIONS if options.max_preemptions is None else options.max_preemptions
        ),
        stall_timeout_s=(
            stall_default_s if options.stall_timeout_s is None else options.stall_timeout_s
        ),
        runs_root=options.runs_root,
        create_runs_root=options.runs_root == RUNS_ROOT,
        keep=options.keep,
        capacity_deadline_s=options.capacity_deadline_s or 0.0,
        node_max_run_s=options.node_max_run_s,
        save_before_node_end=options.save_before_node_end,
        request_gpus=options.request_gpus,
        gpus_per_node=options.gpus_per_node,
        entrypoint_num_cpus=sub.entrypoint_num_cpus,
        entrypoint_num_gpus=sub.entrypoint_num_gpus,
        entrypoint_resources=sub.entrypoint_resources,
        eval_at_end=options.eval_job is not None,
        eval_job=_uploaded(cluster, options.eval_job),
    )
    # Uploaded before the submit (which then uploads nothing) so its package URI, a hash of
    # the code, can be compared with earlier supervisors'.
    sup_env = cluster.upload_working_dir(_supervisor_env(attempt_env))
    wait = options.wait_armed
    vouched_by = None
    if wait is None:
        vouched_by = vouching_supervisor(cluster, existing, sup_env, options.runs_root)
        wait = vouched_by is None
    first = 1 + max((protocol.supervisor_number(s.submission_id or "") for s in sups), default=0)

    def submit(n: int) -> str:
        sid = protocol.supervisor_id(run, n)
        meta = protocol.supervisor_metadata(
            spec.to_dict(), n, SUBMITTED_BY, jobs_commit=jobs_commit()
        )
        try:
            cluster.submit(
                Submission(
                    submission_id=sid,
                    entrypoint=protocol.supervisor_entrypoint(sid),
                    runtime_env=sup_env,
                    metadata=meta,
                )
            )
        except AlreadySubmitted:
            raise UsageError(
                f"{sid} already exists on this cluster",
                f"another command armed run {run} first; follow it with "
                f"{commands.command('logs', run, '--follow', where=hint_where)}",
            ) from None
        return sid

    if not wait:
        return HandedOff(submit(first), armed=False, vouched_by=vouched_by)
    sid = submit_until_armed(first, submit, lambda sid: _wait_armed(cluster, sid, hint_where))
    return HandedOff(sid, armed=True, vouched_by=vouched_by)


@dataclass(frozen=True)
class HandedOff:
    """A submitted supervisor: whether the hand-off saw it take the run, and if it did not
    wait because of an earlier supervisor, which one."""

    supervisor: str
    armed: bool
    vouched_by: str | None = None


def vouching_supervisor(
    cluster: Dashboard, cluster_jobs: list[JobDetails], sup_env: dict[str, Any], runs_root: str
) -> str | None:
    """An earlier supervisor on this cluster, of the same code (its `py_modules` package URI,
    Ray's hash of the uploaded files, is ours) and runs root, that took its run: what a new
    one could refuse or fail at (the runs root, the head's Ray, importing our code) it passed.
    Only the newest such supervisor's log is read, so the check costs one request."""
    modules = sup_env.get("py_modules")
    alike = [
        j
        for j in cluster_jobs
        if listing.is_supervisor(j)
        and j.status != JobStatus.PENDING
        and (j.runtime_env or {}).get("py_modules") == modules
        and _runs_root(j) == runs_root
    ]
    if not modules or not alike:
        return None
    newest = max(alike, key=lambda j: j.start_time or 0)
    try:
        log = cluster.logs(newest.submission_id or "")
    except (NotFound, Unreachable):
        return None
    armed = any(e["event"] == run_events.ARMED for e in run_events.parse(log))
    return newest.submission_id if armed else None


def _refuse_if_taken(cluster_jobs: list[JobDetails], run: str, hint_where: str) -> list[JobDetails]:
    """The run's supervisors so far; refused when one drives it."""
    sups = supervisors(cluster_jobs, run)
    driving = live(sups)
    if driving is not None:
        raise UsageError(
            f"run {run} is already driven by its supervisor "
            f"{driving.submission_id} ({driving.status.value})",
            f"follow it with {commands.command('logs', run, '--follow', where=hint_where)}"
            f", or stop it with {commands.command('stop', run, where=hint_where)}",
        )
    # A new run's name was checked free by the caller (jobs/runs/start.py, state.refuse_taken);
    # a resume continues a run whose jobs are there by design.
    return sups


def _supervisor_env(attempt_env: dict[str, Any]) -> dict[str, object]:
    """The supervisor's runtime env: our jobs package, the forwarded settings, the attempt's files."""
    env_vars = protocol.Settings.forwarded()
    # `python -m` puts the working dir first on sys.path: a `jobs/` folder in the user's code
    # must not shadow ours (PYTHONSAFEPATH, Python 3.11+).
    env_vars["PYTHONSAFEPATH"] = "1"
    sup_env: dict[str, object] = {
        "py_modules": [str(JOBS_DIR)],
        "excludes": list(DEFAULT_EXCLUDES),
        "env_vars": env_vars,
    }
    if attempt_env.get("working_dir"):
        # Ray deletes an uploaded package once no job refers to it (after a 10 min grace,
        # RAY_RUNTIME_ENV_TEMPORARY_REFERENCE_EXPIRATION_S): the supervisor refers to it for
        # as long as it may resubmit, so a restart after a long wait still finds it.
        sup_env["working_dir"] = attempt_env["working_dir"]
    return sup_env


def _uploaded(cluster: Dashboard, job: dict[str, Any] | None) -> dict[str, Any] | None:
    """The eval job with its working dir and py_modules uploaded: the supervisor sends it from
    the head, where the caller's files are not. Its packages are the run's own (the same
    files, so the same gcs:// URIs), which the run's supervisor refers to until it ends."""
    if job is None:
        return None
    return {**job, "runtime_env": cluster.upload_working_dir(dict(job["runtime_env"]))}


def _no_ray_on_head(log: str) -> bool:
    """The supervisor died importing Ray: the head's `python` is not the one Ray runs in."""
    return "ModuleNotFoundError: No module named 'ray'" in log


def _wait_armed(cluster: Dashboard, sid: str, where: str = "") -> None:
    deadline = time.monotonic() + float(os.environ.get("JOBS_HANDOFF_TIMEOUT", HANDOFF_TIMEOUT_S))
    while True:
        status = cluster.status(sid)
        if status != JobStatus.PENDING:
            if any(e["event"] == run_events.ARMED for e in run_events.parse(cluster.logs(sid))):
                return
            if status.is_terminal():
                log = cluster.logs(sid)
                if _no_ray_on_head(log):
                    raise UsageError(
                        f"the supervisor {sid} could not start: the Ray head's `python` has no "
                        f"`ray` module (it runs `{protocol.supervisor_entrypoint(sid)}` there)",
                        "start the head with the Python environment Ray is installed in first "
                        "on PATH (a local `ray start --head` from its virtualenv), or drop "
                        "--max-restarts to submit without a supervisor",
                    )
                refusal = [e for e in run_events.parse(log) if e["event"] == run_events.REFUSED]
                if refusal:
                    # Its own record says why, once: the log's tail held that record, the same
                    # reason on stderr and Ray's banner (a 900-character line).
                    raise UsageError(
                        f"the supervisor {sid} refused the run: {refusal[-1]['message']}",
                        f"its log: {commands.command('logs', sid, where=where)}",
                    )
                # An empty log: Ray failed the job before its driver ran (runtime env setup, the
                # job supervisor actor); Ray's own message says why.
                info = cluster.info(sid)
                tail = " | ".join(log.strip().splitlines()[-3:]) or (
                    f"Ray: {info.message or 'no message'}"
                )
                failed = (
                    SupervisorNeverRan if ray_lost_the_job_supervisor(info, log) else UsageError
                )
                raise failed(
                    f"the supervisor {sid} ended {status.value} before it took the run: {tail}",
                    f"see {commands.command('logs', sid, where=where)}",
                )
        if time.monotonic() > deadline:
            raise Unreachable(
                f"the supervisor {sid} did not start within the hand-off timeout ({status.value})",
                f"check it with {commands.command('status', sid, where=where)}",
            )
        time.sleep(POLL_S)


def events(cluster: Dashboard, sups: list[JobDetails]) -> list[dict[str, Any]]:
    """Every supervisor's records for the run, in order."""
    out: list[dict[str, Any]] = []
    for s in sups:
        out += run_events.parse(cluster.logs(s.submission_id or ""))
    return out


def story(
    cluster: Dashboard, run: str, jobs_: list[JobDetails] | None = None
) -> tuple[list[JobDetails], list[dict[str, Any]]]:
    sups = supervisors(cluster.jobs() if jobs_ is None else jobs_, run)
    return sups, events(cluster, sups)


def annotate(
    cluster: Dashboard, runs: list[dict[str, Any]], jobs_: list[JobDetails] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Add each supervised run's latest decision and its outcome (`finished`, `gave_up`,
    `stopped`, None while it is not over) to `list` rows (one log read per such run); `jobs_`:
    the cluster's jobs the rows were grouped from, else they are listed again. Returns each
    supervised run's records, by run."""
    all_jobs = cluster.jobs() if jobs_ is None else jobs_
    read: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        if "supervisor" not in r:
            continue
        _, recs = story(cluster, r["run"], all_jobs)
        read[r["run"]] = recs
        if recs:
            r["supervisor"]["last_event"] = recs[-1]
        final = final_reason(recs)
        # A supervisor that gave up ends its Ray job SUCCEEDED (it ended as designed): the
        # outcome says what became of the run.
        r["supervisor"]["outcome"] = final["event"] if final else None
        found = state.find(all_jobs, r["run"])
        if found is not None:
            r["status"] = state.shown_status(found, r["supervisor"]["outcome"])
    return read


def _attempts(cluster: Dashboard, run: str) -> list[JobDetails]:
    """The run's attempts in order; for a job supervised under its own name (an eval job), the
    tries its supervisor sent (`<name>-aK`), which are filed under the run they evaluate."""
    tries = re.compile(rf"^{re.escape(run)}-a(?P<n>[0-9]+)$")

    def number(job: JobDetails) -> int | None:
        if listing.run_of(job) == run and listing.attempt_of(job) is not None:
            return listing.attempt_of(job)
        m = tries.match(job.submission_id or "")
        return int(m["n"]) if m else None

    found = [(n, j) for j in cluster.jobs() if (n := number(j)) is not None]
    return [j for _, j in sorted(found, key=lambda pair: pair[0])]


def follow_run(
    cluster: Dashboard,
    run: str,
    sid: str,
    watcher: follow.Watcher,
    reporter: Reporter,
    to_stderr: bool,
) -> tuple[list[tuple[str, JobStatus]], list[dict[str, Any]]]:
    """Stream every attempt's log in turn and the supervisor's decisions (stderr) until the
    supervisor ends; returns the attempts' final statuses and the records."""
    shown = 0
    followed: dict[str, JobStatus] = {}
    recs: list[dict[str, Any]] = []

    def show_records() -> None:
        nonlocal shown, recs
        recs = run_events.parse(watcher.retrying(sid, lambda: cluster.logs(sid)))
        for rec in recs[shown:]:
            reporter.note(f"[supervisor] {run_events.human(rec)}")
        shown = len(recs)

    while True:
        show_records()
        pending = [
            j
            for j in watcher.retrying(sid, lambda: _attempts(cluster, run))
            if j.submission_id not in followed
        ]
        if pending:
            job_id = pending[0].submission_id or ""
            followed[job_id] = watcher.follow(job_id, to_stderr=to_stderr)
            continue
        if watcher.status(sid).is_terminal():
            # Anything submitted just before the end is listed now.
            if any(j.submission_id not in followed for j in _attempts(cluster, run)):
                continue
            show_records()
            return list(followed.items()), recs
        time.sleep(POLL_S)


def _runs_root(sup: JobDetails) -> str:
    try:
        return protocol.Spec.from_json((sup.metadata or {})[protocol.Spec.METADATA_KEY]).runs_root
    except (KeyError, ValueError, TypeError):
        return ""


def request_stop(
    cluster: Dashboard,
    run: str,
    runs_root: str,
    watcher: follow.Watcher,
    supervisor_gone: bool = False,
) -> tuple[str, JobStatus]:
    """Record the user's stop in the run's record on the runs root (a small job on the head,
    jobs/head/stop.py), so the SIGTERM that follows is final and no re-armer takes the run.
    `supervisor_gone`: no supervisor of the run is alive, so the stop is recorded as its end
    (none would write it: the run read UNSUPERVISED, "the re-armer takes it back", for good)."""
    gone = " --supervisor-gone" if supervisor_gone else ""
    sid = submit_on_head(
        cluster,
        run,
        protocol.STOP,
        "stop",
        f"{protocol.STOP_MODULE} {run} --runs-root {runs_root}{gone}",
    )
    return sid, watcher.wait_for(sid, follow.terminal, "recording the stop")


def next_small_job(jobs: list[JobDetails], run: str, suffix: str) -> int:
    """The next N of the run's `RUN-<suffix>N` jobs: counted within the run (it counted the
    cluster's jobs of that kind, so a run's first stop could be `RUN-stop4`), above any taken."""
    taken = re.compile(rf"{re.escape(run)}-{re.escape(suffix)}(?P<n>[0-9]+)")
    numbers = [int(m["n"]) for j in jobs if (m := taken.fullmatch(j.submission_id or ""))]
    return 1 + max(numbers, default=0)


def submit_on_head(
    cluster: Dashboard, run: str, kind: protocol.Kind, suffix: str, module: str
) -> str:
    """Submit `python -m MODULE...` as the run's next small job of `kind` on the head
    (`RUN-<suffix>N`, with our jobs package): the CLI's way to Lustre, which it never mounts."""
    sid = f"{run}-{suffix}{next_small_job(cluster.jobs(), run, suffix)}"
    cluster.submit(
        Submission(
            submission_id=sid,
            entrypoint=f"python -m {module}",
            runtime_env={"py_modules": [str(JOBS_DIR)], "env_vars": {"PYTHONSAFEPATH": "1"}},
            metadata={"run": run, "kind": kind, "submitted_by": SUBMITTED_BY},
        )
    )
    return sid


def stop_run(
    cluster: Dashboard,
    run: str,
    watcher: follow.Watcher,
    runs_root: str = "",
    ended: bool = False,
) -> list[tuple[str, JobStatus]]:
    """Record the stop (runs with a runs root), then stop the run's supervisor (so nothing is
    resubmitted), then its live attempts.

    The stop is recorded where a live supervisor keeps the run, and also where a dead one kept
    an unfinished run (`ended` False): the re-armer would take that run back, and its attempt
    with it, after the attempt is stopped here. `runs_root` names a root the
    cluster may know nothing of (a run whose head was lost)."""
    stopped: list[tuple[str, JobStatus]] = []
    sups = supervisors(cluster.jobs(), run)
    roots = {r for s in sups if (not s.status.is_terminal() or not ended) and (r := _runs_root(s))}
    if runs_root:
        roots.add(runs_root)
    gone = not any(not s.status.is_terminal() for s in sups)
    # With no supervisor alive the stop job on the head ends the live attempts itself (so the
    # record's end is Ray's, jobs/head/stop.py): they are reported as this stop's all the same.
    ended_by_record = (
        [j.submission_id or "" for j in _attempts(cluster, run) if not j.status.is_terminal()]
        if gone and roots
        else []
    )
    for root in sorted(roots):
        sid, status = request_stop(cluster, run, root, watcher, supervisor_gone=gone)
        if status != JobStatus.SUCCEEDED:
            raise UsageError(
                f"could not record the stop of run {run} in {root} ({status.value}); "
                "without it the re-armer would restart the run, so nothing was stopped",
                f"see {commands.command('logs', sid)} and try again",
            )
    for s in sups:
        if not s.status.is_terminal():
            sid = s.submission_id or ""
            cluster.stop(sid)
            stopped.append((sid, watcher.wait_for(sid, follow.terminal, "stopping")))
    # The supervisor is gone: no attempt appears after this listing.
    for j in _attempts(cluster, run):
        if not j.status.is_terminal():
            job_id = j.submission_id or ""
            cluster.stop(job_id)
            stopped.append((job_id, watcher.wait_for(job_id, follow.terminal, "stopping")))
    told = {sid for sid, _ in stopped}
    for sid in ended_by_record:
        if sid not in told:
            stopped.append((sid, watcher.wait_for(sid, follow.terminal, "stopping")))
    return stopped


def print_story(write: Callable[[str], object], recs: list[dict[str, Any]]) -> None:
    for rec in recs:
        write(redact(run_events.human(rec)))


def final_reason(recs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The end of the run's current life (a run resumed after it ended is not over)."""
    return run_events.outcome(recs)


def human(record: dict[str, Any]) -> str:
    """One supervisor record as a line for a person."""
    return run_events.human(record)


def succeeded(recs: list[dict[str, Any]]) -> bool:
    final = final_reason(recs)
    return final is not None and final.get("event") == run_events.FINISHED


def gave_up(outcome: dict[str, Any] | None) -> bool:
    """The run's final record says its supervisor gave up as designed."""
    return outcome is not None and outcome.get("event") == run_events.GAVE_UP
