"""The commands that look at runs and end them: `status`, `logs`, `stop` and `list`."""

from __future__ import annotations

import os
import sys
import time
from typing import Annotated, Any

import typer

from jobs.cli import options as opt
from jobs.cli.console import emit_json, err, handled, out
from jobs.cli.drive import follow_supervised
from jobs.common import commands
from jobs.common.errors import ExitCode, UsageError
from jobs.common.redact import redact
from jobs.runs import address, follow, handoff, listing, state
from jobs.runs.address import Dashboard
from jobs.runs.attempt_logs import AttemptLogs
from jobs.runs.listing import JobDetails

app = typer.Typer()


@app.command("status")
@handled
def status_cmd(
    ident: opt.IdArg,
    as_json: opt.JsonOpt = False,
    addr: opt.AddressOpt = None,
    stack_name: opt.StackOpt = None,
    runs_root: opt.RunsRootOpt = None,
) -> None:
    """Show a job's or a run's status.

    Exits 0 whatever the status: this reports, it does not judge."""
    # Imported here, not at the top: only `status` needs a run's records and goodput, and every
    # other command starts faster without them. The same holds for the lazy imports below.
    from jobs.runs import record_view

    if runs_root:
        record_view.check_root(runs_root)
    if runs_root and record_view.has_record(runs_root, ident):
        # The run's record on the runs root: read without the head that wrote it.
        priced_by = address.Where(None, stack_name, "--stack").outputs() if stack_name else None
        view = _recorded_view(runs_root, ident, priced_by)
        if as_json:
            emit_json(view)
            return
        for text in record_view.lines(view):
            out().print(redact(text), markup=False)
        _print_how_it_goes(out(), view)
        return
    where = address.choose(addr, stack_name)
    outputs = where.outputs()  # read once: reach and price
    with address.reach(where, spinner=opt.spinner) as cluster:
        flags = opt.where_flags(where)
        jobs_ = cluster.jobs()
        found = state.find(jobs_, ident)
        if found is not None and found.supervisors:
            view = _supervised_view(found, handoff.events(cluster, list(found.supervisors)))
        else:
            view = listing.describe(listing.find(cluster, ident, flags, jobs_))
        if found is not None:
            _how_it_goes(view, found, AttemptLogs(cluster.logs), outputs, flags)
            view["eval"] = _eval_of_cluster(found, cluster, view.get("history") or [])
    if as_json:
        emit_json(view)
        return
    shown = out()
    for key in (
        "submission_id",
        "run",
        "attempt",
        "status",
        "recipe",
        "stack",
        "git_commit",
        "entrypoint",
        "message",
        "driver_exit_code",
    ):
        if key == "message" and view.get(key):
            # Ray's message of a failed job ends with 20,000 characters of log: its first line,
            # the error it ended on, and where the rest is.
            first, error = listing.why_it_ended(view[key])
            shown.print(f"{key:>16}: {first}", markup=False)
            if error is not None:
                shown.print("{:>16}: {}".format(*listing.labelled(error)), markup=False)
                more = commands.command("logs", view.get("run") or ident, "--tail 50", where=flags)
                shown.print(f"{'':>16}  (the log's end: {more})", markup=False)
        elif view.get(key) not in ("", None):
            shown.print(f"{key:>16}: {view[key]}", markup=False)
    if "supervisor" in view:
        sup = view["supervisor"]
        shown.print(
            f"{'supervisor':>16}: {sup['submission_id']} {_supervisor_state(view)}", markup=False
        )
        if view["outcome"]:
            shown.print(f"{'outcome':>16}: {view['outcome']['message']}", markup=False)
        shown.print(f"{'history':>16}:", markup=False)
        handoff.print_story(lambda text: shown.print(f"  {text}", markup=False), view["history"])
    _print_how_it_goes(shown, view)


def _how_it_goes(
    view: dict[str, Any], found: state.Run, logs: AttemptLogs, outputs: Any, flags: str
) -> None:
    """The run's progress, goodput, save period and next steps into `view`, read from its
    attempts' logs (those lost with their node listed in `unreadable_logs`)."""
    from jobs.runs import goodput, metrics, run_goodput, run_step  # lazy: status only

    history = view.get("history") or []
    spent, curves = run_goodput.of_run(found.attempts, history, logs, found.ended)
    view["unreadable_logs"] = logs.unreadable
    view["progress"] = run_step.reached(metrics.progress(curves), history)
    view["goodput"] = goodput.priced(spent.as_json(), outputs)
    view["save_period"] = run_goodput.save_advice(
        found.attempts, spent, curves, outputs.gpu_provisioning if outputs else None
    )
    # What will work next, by the rule `submit --resume` itself follows, so the advice never
    # names a step that command would refuse.
    view["next"] = state.next_steps(found, view.get("outcome"), flags)


def _print_how_it_goes(shown: Any, view: dict[str, Any]) -> None:
    """status's lines on the attempts whose log is gone, the run's progress, its goodput, its
    save period and what to do next."""
    from jobs.runs import goodput, metrics, save_period  # lazy: status only

    for n, why in enumerate((view.get("unreadable_logs") or {}).values()):
        shown.print(f"{'logs' if n == 0 else '':>16}{':' if n == 0 else ' '} {why}", markup=False)
    if view.get("progress"):
        # An ended run has nothing left to wait for: no ETA (it showed one after the end).
        ended = view.get("outcome") is not None or view.get("status") in ("SUCCEEDED", "STOPPED")
        progress = {k: v for k, v in view["progress"].items() if not (ended and k == "eta_s")}
        shown.print(f"{'progress':>16}: {metrics.progress_line(progress)}", markup=False)
        if spark := view["progress"].get("reward_sparkline"):
            low, high = view["progress"]["reward_range"]
            shown.print(f"{'reward':>16}: {spark} ({low:.3g} to {high:.3g})", markup=False)
    if summary := (view.get("eval") or {}).get("summary"):
        shown.print(f"{'eval':>16}: {summary}", markup=False)
    if queued := (view.get("eval") or {}).get("at_end"):
        shown.print(f"{'eval at end':>16}: {queued['message']}", markup=False)
    for n, text in enumerate(goodput.lines_of(view.get("goodput"))):
        shown.print(
            f"{'goodput' if n == 0 else '':>16}{':' if n == 0 else ' '} {text}", markup=False
        )
    if saves := view.get("save_period"):
        if line := save_period.line_of(saves["young_daly"], saves["configured_steps"]):
            shown.print(f"{'save period':>16}: {line}", markup=False)
    for n, step in enumerate(view.get("next") or []):
        shown.print(f"{'next' if n == 0 else '':>16}{':' if n == 0 else ' '} {step}", markup=False)


def _recorded_view(runs_root: str, run: str, priced_by: Any) -> dict[str, Any]:
    """The run as its record tells it, with its goodput and the held-out scores kept beside it
    (`rl-jobs eval`)."""
    from jobs.runs import eval_results, record_view  # lazy: status only

    view = record_view.with_goodput(record_view.view(runs_root, run), runs_root, priced_by)
    evals = eval_results.as_json(*eval_results.read(runs_root, run))
    return {**view, "eval": {**evals, "at_end": eval_results.at_end(view.get("history") or [])}}


def _eval_of_cluster(
    found: state.Run, cluster: Dashboard, history: list[dict[str, Any]]
) -> dict[str, Any]:
    """The run's held-out scores, from its succeeded eval jobs' logs, and the eval its
    supervisor queued at its end (`submit --eval-at-end`), if any."""
    from jobs.runs import eval_results  # lazy: status only

    evals = eval_results.as_json(eval_results.of_jobs(found.others, cluster.logs), {})
    return {**evals, "at_end": eval_results.at_end(history)}


def _supervisor_state(view: dict[str, Any]) -> str:
    """The supervisor job's Ray status read with its records: a supervisor that gave up ended as
    designed (never a bare FAILED); one that ended without a final record left the run
    unsupervised."""
    status: str = view["supervisor"]["status"]
    outcome = view["outcome"]
    if handoff.gave_up(outcome):
        return f"{status} (ended as designed: it gave up, see outcome)"
    if outcome is None and status in ("FAILED", "STOPPED", "SUCCEEDED"):
        return f"{status}: unsupervised, the supervisor ended without finishing the run"
    return status


def _supervised_view(found: state.Run, recs: list[dict[str, Any]]) -> dict[str, Any]:
    """A supervised run: its latest attempt, its supervisor and every decision recorded."""
    if found.latest is not None:
        view = listing.describe(found.latest)
    else:  # armed and waiting for GPUs before attempt 1, or its supervisor died before it
        view = {"run": found.name, "submission_id": None, "attempt": None, "status": found.status}
    latest = found.supervisors[-1]
    view["supervisor"] = {"submission_id": latest.submission_id, "status": latest.status.value}
    view["outcome"] = handoff.final_reason(recs)
    view["status"] = state.shown_status(found, (view["outcome"] or {}).get("event"))
    view["history"] = recs
    return view


@app.command("logs")
@handled
def logs_cmd(
    ident: opt.IdArg,
    follow_logs: opt.FollowOpt = False,
    tail: opt.TailOpt = None,
    addr: opt.AddressOpt = None,
    stack_name: opt.StackOpt = None,
    runs_root: opt.RunsRootOpt = None,
) -> None:
    """Print a job's logs, or every attempt's of a run.

    With --follow, stream them until it ends (^C detaches)."""
    if tail is not None and follow_logs:
        raise UsageError(
            "--tail cannot be combined with --follow yet",
            "use --tail N to see the end, or --follow to stream the whole log",
        )
    if runs_root:
        from jobs.runs import record_view  # lazy: --runs-root only

        record_view.check_root(runs_root)
    if tail is not None:
        with opt.reach(addr, stack_name) as (cluster, where):
            job = listing.find(cluster, ident, opt.where_flags(where))
            logs = AttemptLogs(cluster.logs)
            lines = logs(job.submission_id or ident).splitlines(keepends=True)
            sys.stdout.write(redact("".join(lines[-tail:])))
        _say_unreadable(logs.unreadable)
        return
    if runs_root and not follow_logs and record_view.has_record(runs_root, ident):
        # The supervisor's decisions from the run's record: readable without the head.
        for rec in record_view.view(runs_root, ident)["history"]:
            sys.stdout.write(redact(f"[supervisor] {handoff.human(rec)}\n"))
        return
    with opt.reach(addr, stack_name) as (cluster, where):
        jobs_ = cluster.jobs()
        found = state.find(jobs_, ident)
        if found is not None and found.supervisors:
            sups = list(found.supervisors)
            recs = handoff.events(cluster, sups)
            _supervised_logs(cluster, where, found, recs, follow_logs)
        job_id = listing.find(cluster, ident, opt.where_flags(where), jobs_).submission_id or ident
        if not follow_logs:
            tried = list(found.attempts) if found is not None and job_id != ident else []
            if len(tried) > 1:  # a run resumed by hand: every attempt, each under a header
                _write_attempt_logs(cluster, tried)
            else:
                logs = AttemptLogs(cluster.logs)
                sys.stdout.write(redact(logs(job_id)))
                _say_unreadable(logs.unreadable)
            return
        status = opt.follow_or_detach(cluster, where, job_id, to_stderr=False)
    raise typer.Exit(int(ExitCode.OK if follow.succeeded(status) else ExitCode.JOB_FAILED))


def _write_attempt_logs(cluster: Dashboard, tried: list[JobDetails]) -> None:
    """Each attempt's whole log under a `==> ID (STATUS) <==` header, first to last: the
    failed ones are the ones a user needs."""
    logs = AttemptLogs(cluster.logs)
    for job in tried:
        job_id = job.submission_id or ""
        sys.stdout.write(f"==> {job_id} ({job.status.value}) <==\n")
        text = redact(logs(job_id))
        if job_id in logs.unreadable:
            text = f"({logs.unreadable[job_id]})\n"
        sys.stdout.write(text if text.endswith("\n") or not text else f"{text}\n")


def _say_unreadable(unreadable: dict[str, str]) -> None:
    """The attempts whose log Ray could not give, said on stderr: the command still answers."""
    for why in unreadable.values():
        err().print(why, markup=False)


def _supervised_logs(
    cluster: Dashboard,
    where: address.Where,
    found: state.Run,
    recs: list[dict[str, Any]],
    follow_logs: bool,
) -> None:
    """A supervised run's logs: the supervisor's decisions, then every attempt's log under its
    own header (no attempt yet: the supervisors' own logs, which say why); with --follow, every
    attempt in turn and the decisions as they come (stderr)."""
    run = found.name
    if not follow_logs:
        for rec in recs:
            sys.stdout.write(redact(f"[supervisor] {handoff.human(rec)}\n"))
        _write_attempt_logs(cluster, list(found.attempts or found.supervisors))
        raise typer.Exit(int(ExitCode.OK))
    sid = found.supervisors[-1].submission_id or ""
    raise typer.Exit(follow_supervised(cluster, where, run, sid, as_json=False))


@app.command("stop")
@handled
def stop_cmd(
    ident: opt.IdArg,
    as_json: opt.JsonOpt = False,
    addr: opt.AddressOpt = None,
    stack_name: opt.StackOpt = None,
    runs_root: Annotated[
        str | None,
        typer.Option(
            "--runs-root",
            metavar="DIR",
            help="Record the stop in the run's record there (as the Ray head sees it), also when no job of the run is on this cluster: the re-armer never takes the run back.",
        ),
    ] = None,
) -> None:
    """Stop a job, or a run: its supervisor, then its attempt.

    A stopped job is never restarted."""
    with opt.reach(addr, stack_name) as (cluster, where):
        found = state.find(cluster.jobs(), ident)
        if runs_root or (found is not None and found.supervisors):
            recs = handoff.events(cluster, list(found.supervisors)) if found else []
            stopped = handoff.stop_run(
                cluster,
                ident,
                opt.watcher(cluster, where),
                runs_root=runs_root or "",
                ended=handoff.final_reason(recs) is not None,
            )
            if as_json:
                emit_json(
                    {
                        "run": ident,
                        "stopped": [{"submission_id": i, "status": s.value} for i, s in stopped],
                    }
                )
            else:
                for i, s in stopped:
                    out().print(f"{i} {s.value}", markup=False)
                if not stopped:
                    out().print(f"run {ident}: nothing was running", markup=False)
            return
        job = listing.find(cluster, ident, opt.where_flags(where))
        job_id = job.submission_id or ident
        if not job.status.is_terminal():
            cluster.stop(job_id)
            # Ray sends SIGTERM, then SIGKILL after RAY_JOB_STOP_WAIT_TIME_S (3 s default, §4.4).
            status = opt.watcher(cluster, where).wait_for(
                job_id, follow.terminal, "stopping", limit_s=_stop_wait_s()
            )
            if not status.is_terminal():
                _say_stop_pending(job_id, status, where)
        else:
            status = job.status
    if as_json:
        emit_json({"submission_id": job_id, "status": status.value})
    else:
        out().print(f"{job_id} {status.value}", markup=False)


STOP_WAIT_S = 30.0


def _stop_wait_s() -> float:
    return float(os.environ.get("JOBS_STOP_WAIT_S", STOP_WAIT_S))


def _say_stop_pending(job_id: str, status: follow.JobStatus, where: address.Where) -> None:
    # Ray stops a job through its supervisor actor (job_manager.py stop_job): a job still
    # waiting for resources has none yet, so it stays PENDING until it is placed, or until
    # RAY_JOB_START_TIMEOUT_SECONDS (15 min by default) fails it.
    err().print(
        f"{job_id} is still {status.value} {_stop_wait_s():.0f} s after the stop request: "
        "Ray stops a job that is waiting for resources once it is placed, or fails it "
        "when its start times out (RAY_JOB_START_TIMEOUT_SECONDS, 15 min by default); "
        f"check it with: {commands.command('status', job_id, where=opt.where_flags(where))}",
        markup=False,
    )


@app.command("list")
@handled
def list_cmd(
    as_json: opt.JsonOpt = False,
    addr: opt.AddressOpt = None,
    stack_name: opt.StackOpt = None,
    runs_root: opt.RunsRootOpt = None,
    status: Annotated[
        str | None,
        typer.Option(
            "--status", metavar="S", help="Only runs in this status (e.g. RUNNING, FAILED)."
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="T",
            help="Only runs started since T: a time ago (2h, 30m, 3d) or a date (2026-12-01T08:00, UTC).",
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option("--limit", min=1, metavar="N", help="At most N runs, newest first."),
    ] = None,
) -> None:
    """List runs with their attempts, newest first."""
    # Lazy: filters, progress and the layout only when this command runs.
    from jobs.cli import render
    from jobs.runs import list_filter, list_progress, run_life

    if runs_root:
        if status or since or limit:
            raise UsageError(
                "--status, --since and --limit read the cluster's job records, not --runs-root",
                "drop --runs-root (with --address or --stack), or the filters",
            )
        _list_records(runs_root, as_json)
        return
    wanted = list_filter.status_of(status, state.STATUSES) if status else None
    after = list_filter.since_ms(since, time.time()) if since else None
    with opt.reach(addr, stack_name) as (cluster, _where):
        jobs_ = cluster.jobs()
        runs = list_filter.apply(state.group(jobs_), None, after, None if wanted else limit)
        # The same listing: a second one costs a round trip that grows with the cluster's jobs.
        # The records decide a supervised run's state, so --status filters after them.
        records = handoff.annotate(cluster, runs, jobs_)
        if wanted:
            runs = list_filter.apply(runs, wanted, None, limit)
        list_progress.with_steps(runs, cluster.logs, records)
        _with_evals(runs, jobs_, cluster)
        for r in runs:
            # The run's life as `status`'s goodput counts it (its total), not its jobs' span.
            found = state.find(jobs_, r["run"])
            life = run_life.life(
                found.attempts if found else (),
                records.get(r["run"], []),
                found.ended if found else None,
            )
            r["duration_s"] = round(life.total_s, 1)
    if as_json:
        emit_json(runs)
        return
    out().print(render.runs(runs), soft_wrap=False)


def _with_evals(rows: list[dict[str, Any]], jobs_: list[JobDetails], cluster: Dashboard) -> None:
    """Each run's held-out score, from its eval jobs' logs (runs without one read nothing)."""
    from jobs.runs import eval_results  # lazy: list only

    for row in rows:
        mine = [j for j in jobs_ if listing.run_of(j) == row["run"]]
        row["eval"] = eval_results.summary(eval_results.of_jobs(mine, cluster.logs))


def _list_records(runs_root: str, as_json: bool) -> None:
    """`list --runs-root`: the runs recorded there, read without the head."""
    from jobs.cli import render  # lazy: list only
    from jobs.runs import record_view  # lazy: --runs-root only

    record_view.check_root(runs_root)
    rows = record_view.listing(runs_root)
    from jobs.runs import eval_results  # lazy: --runs-root only

    for row in rows:
        row["eval"] = eval_results.summary(eval_results.read(runs_root, row["run"])[0])
    if as_json:
        emit_json(rows)
        return
    out().print(render.recorded_runs(rows, runs_root), soft_wrap=False)


@app.command("checkpoints")
@handled
def checkpoints_cmd(
    run: Annotated[str, typer.Argument(metavar="RUN", help="The run whose checkpoints to list.")],
    as_json: opt.JsonOpt = False,
    addr: opt.AddressOpt = None,
    stack_name: opt.StackOpt = None,
) -> None:
    """List a run's checkpoints, and what resume and export take.

    Each step, complete or not, and its size, read on the head by a small job."""
    from jobs.runs import run_checkpoints  # lazy: only this command

    with opt.reach(addr, stack_name) as (cluster, where):
        directory, framework = run_checkpoints.where_saved(
            state.find(cluster.jobs(), run), run, opt.where_flags(where)
        )
        view = run_checkpoints.inventory(
            cluster, run, directory, framework, opt.watcher(cluster, where)
        )
    if as_json:
        emit_json(view)
        return
    for line in run_checkpoints.lines(view):
        out().print(line, markup=False)
