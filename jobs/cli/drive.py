"""Starting a run on a reached cluster for the commands that submit, and showing it: the line said
once it starts, following it to its end, and a dry run's view."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from jobs.cli import options as opt
from jobs.cli.console import ConsoleReporter, detached, emit_json, err, out
from jobs.common import commands
from jobs.common.errors import ExitCode
from jobs.common.redact import redact
from jobs.runs import address, follow, handoff
from jobs.runs.address import Dashboard
from jobs.runs.plan import Submission
from jobs.runs.start import Started, start

if TYPE_CHECKING:
    from collections.abc import Sequence

    from components.stack_outputs import StackOutputs
    from jobs.recipes.catalogue import Recipe
    from jobs.runs import save_choice
    from jobs.runs.recipe_run import Planned
    from jobs.runs.supervision import Supervision


@dataclass(frozen=True)
class Submitting:
    """What a command that submits was asked besides its own work, checked: how to reach the
    cluster, whether to follow the run, how to show it, and what its supervisor is asked."""

    follow_logs: bool
    max_restarts: int
    as_json: bool
    addr: str | None
    stack_name: str | None
    supervision: handoff.Options

    @classmethod
    def checked(
        cls,
        *,
        follow_logs: bool,
        wait: bool | None,
        max_restarts: int,
        max_preemptions: int | None,
        stall_timeout: float | None,
        capacity_deadline: float | None,
        runs_root: str | None,
        as_json: bool,
        addr: str | None,
        stack_name: str | None,
    ) -> Submitting:
        supervision = opt.supervision(
            max_preemptions,
            stall_timeout,
            runs_root,
            capacity_deadline,
            wait=wait,
            follow_logs=follow_logs,
        )
        return cls(follow_logs, max_restarts, as_json, addr, stack_name, supervision)

    def defaults_on(
        self,
        outputs: StackOutputs | None,
        stack: str | None,
        gpus_needed: int,
        framework: str = "",
        notes: Sequence[str] = (),
    ) -> Supervision:
        """The supervision this run gets on the stack's GPUs (`supervision_defaults`), said on
        stderr after `notes` (the plan's), one line a note."""
        from jobs.runs.supervision import supervision_defaults

        chosen = supervision_defaults(
            outputs,
            stack or "",
            self.supervision,
            self.max_restarts,
            gpus_needed,
            framework=framework,
        )
        for note in [*notes, *chosen.notes]:
            err().print(note, markup=False)
        return chosen


# The flags every command that submits a run shares, as (parameter, option, default), in their
# order on its --help: the supervision flags stand where the command has its `submitting`
# parameter, the output and reach flags come last.
_SUPERVISION_FLAGS: tuple[tuple[str, object, object], ...] = (
    ("follow_logs", opt.FollowOpt, False),
    ("wait", opt.WaitOpt, None),
    ("max_restarts", opt.RestartsOpt, 0),
    ("max_preemptions", opt.PreemptionsOpt, None),
    ("stall_timeout", opt.StallOpt, None),
    ("capacity_deadline", opt.DeadlineOpt, None),
    ("runs_root", opt.RunsRootOpt, None),
)
_REACH_FLAGS: tuple[tuple[str, object, object], ...] = (
    ("as_json", opt.JsonOpt, False),
    ("addr", opt.AddressOpt, None),
    ("stack_name", opt.StackOpt, None),
)


def takes_submitting(command: Callable[..., None]) -> Callable[..., None]:
    """`command` with its keyword-only `submitting` parameter filled from the flags every
    submitting command shares: typer sees those flags in its place (and --json, --address and
    --stack last), and `command` gets them checked, as one `Submitting`."""
    own = inspect.signature(command, eval_str=True)
    shared = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=hint, default=default)
        for name, hint, default in _SUPERVISION_FLAGS
    ]
    params: list[inspect.Parameter] = []
    for param in own.parameters.values():
        params += shared if param.name == "submitting" else [param]
    params += [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=hint, default=default)
        for name, hint, default in _REACH_FLAGS
    ]
    names = [name for name, _, _ in (*_SUPERVISION_FLAGS, *_REACH_FLAGS)]

    @functools.wraps(command)
    def with_submitting(*args: Any, **kwargs: Any) -> None:
        flags = {name: kwargs.pop(name) for name in names}
        command(*args, submitting=Submitting.checked(**flags), **kwargs)

    # typer reads a command's flags from its signature (inspect.signature honours __signature__).
    with_submitting.__signature__ = own.replace(parameters=params)  # type: ignore[attr-defined]
    with_submitting.__annotations__ = {p.name: p.annotation for p in params}
    return with_submitting


@dataclass(frozen=True)
class SubmitOptions:
    """`submit`'s flags, checked: the recipe (or the run resumed), its changes and size, its save
    period, and how it is submitted."""

    submitting: Submitting
    recipe_name: str | None = None
    sets: tuple[str, ...] = ()
    name: str | None = None
    nodes: int | None = None
    gpus_per_node: int | None = None
    framework: str | None = None
    every: save_choice.Every | None = None
    dry_run: bool = False
    force: bool = False
    allow_unsandboxed: bool = False
    eval_at_end: bool = False


@dataclass(frozen=True)
class Attempt:
    """What the attempt about to start needs: its GPUs, where it checkpoints, the supervision
    chosen for it, its stall default, and whether its run's name must still be checked free."""

    supervision: handoff.Options
    gpus: int = 0
    checkpoint_dir: str = ""
    stall_default_s: float = 0.0
    check_name_free: bool = True


def recipe_attempt(
    dashboard: Dashboard, planned: Planned, options: handoff.Options, check_name_free: bool = True
) -> Attempt:
    """A recipe run's attempt as planned (its GPUs, checkpoint dir and kept checkpoints, the
    recipes' stall default) under `options`; says first when the cluster lacks its GPUs."""
    warn_if_short(dashboard, planned.gpus_needed, options.request_gpus)
    return Attempt(
        replace(options, keep=planned.keep),
        gpus=planned.gpus_needed,
        checkpoint_dir=planned.checkpoint_dir,
        stall_default_s=handoff.RECIPE_STALL_TIMEOUT_S,
        check_name_free=check_name_free,
    )


def _started_line(started: Started, attempt: int, max_restarts: int, gpus: int) -> str:
    if started.supervisor is not None:
        need = f", {gpus} GPU(s) needed before each attempt" if gpus else ""
        return (
            f"run {started.run} handed to its supervisor {started.supervisor} on the Ray "
            f"head: attempt {started.submission_id} next, up to {max_restarts} "
            f"restart(s){need}"
        )
    return f"submitted {started.submission_id} (run {started.run}, attempt {attempt})"


def _announce(started: Started, where: address.Where, as_json: bool) -> int:
    """What a command that does not follow prints once the run is started."""
    flags = opt.where_flags(where)
    if started.supervisor is not None:
        if as_json:
            emit_json(
                {
                    "run": started.run,
                    "supervisor": started.supervisor,
                    "status": "SUPERVISED" if started.armed else "SUPERVISOR_SUBMITTED",
                    "attempts": [],
                }
            )
            return int(ExitCode.OK)
        out().print(started.run, markup=False)
        if not started.armed:
            why = (
                f"{started.vouched_by} of the same code took its run here"
                if started.vouched_by
                else "--no-wait"
            )
            err().print(
                f"supervisor {started.supervisor} submitted, not waited for ({why}): "
                f"{commands.command('status', started.run, where=flags)} says whether it took "
                "the run",
                markup=False,
            )
        err().print(
            f"follow: {commands.command('logs', started.run, '--follow', where=flags)}\n"
            f"story:  {commands.command('status', started.run, where=flags)}\n"
            f"stop:   {commands.command('stop', started.run, where=flags)}",
            markup=False,
        )
        return int(ExitCode.OK)
    job_id = started.submission_id
    attempts = [{"submission_id": job_id, "status": "SUBMITTED"}]
    view = {"run": started.run, "submission_id": job_id, "attempts": attempts}
    opt.report_submitted(job_id, where, as_json, view, with_stop=True)
    return int(ExitCode.OK)


def report_run(
    run: str,
    sid: str,
    done: list[tuple[str, follow.JobStatus]],
    recs: list[dict[str, Any]],
    as_json: bool,
) -> int:
    """The end of a followed supervised run: every attempt's status and the outcome."""
    final = handoff.final_reason(recs)
    succeeded = handoff.succeeded(recs)
    if as_json:
        emit_json(
            {
                "run": run,
                "supervisor": sid,
                "status": done[-1][1].value if done else None,
                "attempts": [{"submission_id": i, "status": s.value} for i, s in done],
                "outcome": final,
            }
        )
    else:
        summary = ", ".join(f"{i} {s.value}" for i, s in done) or "no attempt"
        why = f"; {final['message']}" if final else ""
        err().print(f"run {run}: {summary}{why}", markup=False)
    return int(ExitCode.OK if succeeded else ExitCode.JOB_FAILED)


def follow_supervised(
    dashboard: Dashboard,
    where: address.Where,
    run: str,
    sid: str,
    as_json: bool,
    detached_note: str = "",
) -> int:
    """Follow supervisor `sid`'s run to its end and report it; Ctrl-C detaches (the supervisor
    keeps driving the run) and says how to stop it. Returns the exit code."""
    try:
        done, recs = handoff.follow_run(
            dashboard, run, sid, opt.watcher(dashboard, where), ConsoleReporter(), to_stderr=as_json
        )
    except KeyboardInterrupt as stop:
        err().print(
            f"detached; the supervisor {sid} keeps driving run {run}{detached_note}. Stop it with: "
            f"{commands.command('stop', run, where=opt.where_flags(where))}",
            markup=False,
        )
        if as_json:
            emit_json({"run": run, "supervisor": sid, "status": "DETACHED"})
        return detached(stop)
    return report_run(run, sid, done, recs, as_json)


def _follow_attempt(
    dashboard: Dashboard,
    where: address.Where,
    started: Started,
    as_json: bool,
    with_logs: bool = True,
) -> int:
    """The unsupervised attempt to its end: its log streamed (--follow), or only waited for
    (--wait, as `ray job submit` waits by default); the exit code is the job's."""
    job_id = started.submission_id
    watcher = opt.watcher(dashboard, where)
    try:
        if with_logs:
            status = watcher.follow(job_id, to_stderr=as_json)
        else:
            status = watcher.wait_for(job_id, follow.terminal, "waiting for its end")
    except KeyboardInterrupt as stop:
        err().print(
            f"detached; {job_id} keeps running. Stop it with: {opt.stop_hint(job_id, where)}",
            markup=False,
        )
        if as_json:
            emit_json({"run": started.run, "submission_id": job_id, "status": "DETACHED"})
        return detached(stop)
    if as_json:
        emit_json(
            {
                "run": started.run,
                "submission_id": job_id,
                "status": status.value,
                "attempts": [{"submission_id": job_id, "status": status.value}],
            }
        )
    else:
        err().print(f"run {started.run}: {job_id} {status.value}", markup=False)
    return int(ExitCode.OK if follow.succeeded(status) else ExitCode.JOB_FAILED)


def drive(
    dashboard: Dashboard,
    where: address.Where,
    sub: Submission,
    asked: Submitting,
    attempt: Attempt,
) -> int:
    """Start the attempt (or hand the run over) and, with --follow, follow it to its end."""
    started = start(
        dashboard,
        sub,
        max_restarts=asked.max_restarts,
        gpus=attempt.gpus,
        checkpoint_dir=attempt.checkpoint_dir,
        where=opt.where_flags(where),
        options=attempt.supervision,
        stall_default_s=attempt.stall_default_s,
        check_name_free=attempt.check_name_free,
    )
    err().print(_started_line(started, sub.attempt, asked.max_restarts, attempt.gpus), markup=False)
    if not asked.follow_logs:
        if started.supervisor is None and asked.supervision.wait_armed:
            return _follow_attempt(dashboard, where, started, asked.as_json, with_logs=False)
        return _announce(started, where, asked.as_json)
    if started.supervisor is not None:
        return follow_supervised(
            dashboard,
            where,
            started.run,
            started.supervisor or "",
            asked.as_json,
            ", restarts included",
        )
    return _follow_attempt(dashboard, where, started, asked.as_json)


def print_dry_run(sub: Submission, as_json: bool, notes: list[str]) -> None:
    view = sub.model_dump()
    if as_json:
        emit_json(view)
        return
    for line in dry_run_lines(sub):
        out().print(line, markup=False)
    for note in notes:
        err().print(note, markup=False)


def dry_run_lines(sub: Submission) -> list[str]:
    """What a dry run would send, for a person (it printed the raw JSON that --json prints):
    the id, the command, what it reserves, where its code comes from, its environment's names
    (their values with --json) and its metadata."""
    env = sub.runtime_env
    reserves = [
        f"{value:g} {what}"
        for what, value in (("CPU", sub.entrypoint_num_cpus), ("GPU", sub.entrypoint_num_gpus))
        if value
    ] + [f"{value:g} {name}" for name, value in (sub.entrypoint_resources or {}).items()]
    env_vars = env.get("env_vars")
    lines = [
        f"would submit {sub.submission_id}",
        f"  {'entrypoint:':<12} {sub.entrypoint}",
        f"  {'reserves:':<12} {', '.join(reserves) or 'nothing (the driver runs on the head)'}",
    ]
    for key in ("working_dir", "py_modules", "pip", "uv", "conda", "image_uri"):
        if env.get(key):
            lines.append(f"  {key + ':':<12} {env[key]}")
    if isinstance(env_vars, dict) and env_vars:
        lines.append(f"  {'env vars:':<12} {', '.join(sorted(env_vars))} (values: --json)")
    lines.append(f"  {'metadata:':<12} {', '.join(f'{k}={v}' for k, v in sub.metadata.items())}")
    return [redact(line) for line in lines]


def warn_if_short(dashboard: Dashboard, needed: int, on_request: bool = False) -> None:
    """Say so when the cluster has fewer GPUs than the attempt needs: it is submitted anyway
    (a GPU pool may be scaling up), but then waits for them instead of training. On GPUs that
    scale on demand that is the normal start, said as such."""
    # Start-up time: recipe runs only (tests/jobs/cli/test_startup.py).
    from jobs.runs import capacity

    have = capacity.alive_gpus(dashboard)
    if have is not None and have < needed and on_request:
        err().print(
            f"scaling up: the cluster has {have:g} GPU(s) now and this run needs {needed}; its "
            "supervisor asks Ray's autoscaler for them (a new GPU node boots and pulls the "
            "image first: expect several minutes before the first step; `status RUN` shows the "
            "wait)",
            markup=False,
        )
    elif have is not None and have < needed:
        err().print(
            f"warning: the cluster has {have:g} GPU(s) now and this run needs {needed}; "
            "it is submitted, and its trainer waits until they are there (check the "
            "GPU node pool, or lower --nodes)",
            markup=False,
        )


def check_ray_version(recipe: Recipe, dashboard: Dashboard, where: address.Where) -> None:
    from jobs.runs import recipe_run  # start-up time: recipe runs only

    err().print(
        recipe_run.check_ray_version(recipe, dashboard, where.address or dashboard.url),
        markup=False,
    )
