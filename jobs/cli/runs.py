"""The commands that start work on the cluster: `submit`, `run` and `export`, and how their results are shown."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from components.contract import FRAMEWORK_NAMES, RUNS_ROOT
from jobs.cli import options as opt
from jobs.cli.console import ConsoleReporter, detached, emit_json, err, handled, out
from jobs.common import commands
from jobs.common.errors import ExitCode, UsageError
from jobs.runs import address, follow, handoff, plan, stack, state
from jobs.runs.address import Dashboard
from jobs.runs.plan import Submission
from jobs.runs.start import Started, start

# Recipe runs, resumes and exports import the recipe machinery in the functions that plan them:
# `run -- COMMAND`, and the commands that import this module, start without it (issue 29).
if TYPE_CHECKING:
    from components.stack_outputs import StackOutputs
    from jobs.recipes.catalogue import Recipe
    from jobs.runs import save_choice
    from jobs.runs.recipe_run import Ask

app = typer.Typer()


# ----------------------------------------------------------------------- after the start


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
    if as_json:
        emit_json(
            {
                "run": started.run,
                "submission_id": job_id,
                "status": "SUBMITTED",
                "attempts": [{"submission_id": job_id, "status": "SUBMITTED"}],
            }
        )
    else:
        out().print(job_id, markup=False)
        err().print(
            f"follow: {commands.command('logs', job_id, '--follow', where=flags)}\n"
            f"stop:   {opt.stop_hint(job_id, where)}",
            markup=False,
        )
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


def _follow_supervised(
    dashboard: Dashboard, where: address.Where, started: Started, as_json: bool
) -> int:
    run, sid = started.run, started.supervisor or ""
    try:
        done, recs = handoff.follow_run(
            dashboard, run, sid, opt.watcher(dashboard, where), ConsoleReporter(), to_stderr=as_json
        )
    except KeyboardInterrupt as stop:
        err().print(
            f"detached; the supervisor {sid} keeps driving run {run}, restarts "
            "included. Stop it with: "
            f"{commands.command('stop', run, where=opt.where_flags(where))}",
            markup=False,
        )
        if as_json:
            emit_json({"run": run, "supervisor": sid, "status": "DETACHED"})
        return detached(stop)
    return report_run(run, sid, done, recs, as_json)


def _follow_attempt(
    dashboard: Dashboard, where: address.Where, started: Started, as_json: bool
) -> int:
    job_id = started.submission_id
    try:
        status = opt.watcher(dashboard, where).follow(job_id, to_stderr=as_json)
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
    follow_logs: bool,
    max_restarts: int,
    as_json: bool,
    gpus: int = 0,
    checkpoint_dir: str = "",
    options: handoff.Options = handoff.Options(),
    stall_default_s: float = 0.0,
    check_name_free: bool = True,
) -> int:
    """Start the attempt (or hand the run over) and, with --follow, follow it to its end."""
    started = start(
        dashboard,
        sub,
        max_restarts=max_restarts,
        gpus=gpus,
        checkpoint_dir=checkpoint_dir,
        where=opt.where_flags(where),
        options=options,
        stall_default_s=stall_default_s,
        check_name_free=check_name_free,
    )
    err().print(_started_line(started, sub.attempt, max_restarts, gpus), markup=False)
    if not follow_logs:
        return _announce(started, where, as_json)
    if started.supervisor is not None:
        return _follow_supervised(dashboard, where, started, as_json)
    return _follow_attempt(dashboard, where, started, as_json)


def _print_dry_run(sub: Submission, as_json: bool, notes: list[str]) -> None:
    view = sub.model_dump()
    if as_json:
        emit_json(view)
        return
    out().print_json(json.dumps(view, default=str))
    for note in notes:
        err().print(note, markup=False)


def _warn_if_short(dashboard: Dashboard, needed: int, on_request: bool = False) -> None:
    """Say so when the cluster has fewer GPUs than the attempt needs: it is submitted anyway
    (a GPU pool may be scaling up), but then waits for them instead of training. On GPUs that
    scale on demand that is the normal start, said as such."""
    from jobs.runs import capacity  # start-up time (issue 29): recipe runs only

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


def _check_ray_version(recipe: Recipe, dashboard: Dashboard, where: address.Where) -> None:
    from jobs.runs.recipe_run import check_ray_version  # start-up time (issue 29)

    err().print(check_ray_version(recipe, dashboard, where.address or dashboard.url), markup=False)


# --------------------------------------------------------------------------------- submit


def _refuse_with_resume(resume_run: str, given: dict[str, object]) -> None:
    flags = [flag for flag, value in given.items() if value]
    if flags:
        raise UsageError(
            f"--resume {resume_run} cannot be combined with {', '.join(flags)}",
            "a resumed run keeps the recipe, overrides and size recorded in its "
            "metadata; start a new run (another --name) to change them",
        )


def _for_capacity(
    options: handoff.Options,
    max_restarts: int,
    outputs: StackOutputs | None,
    where: address.Where,
    recipe: Recipe,
    gpus_needed: int,
) -> tuple[handoff.Options, list[str]]:
    """A recipe run's supervision for the stack's GPUs: supervised on spot and flex-start, and
    saving before flex-start nodes end, and asking for GPUs that scale on demand; with the notes
    that say what was chosen."""
    options, supervised = handoff.surviving_defaults(
        options, max_restarts, outputs.gpu_provisioning if outputs else None, where.stack or ""
    )
    options, asked = _on_request(options, max_restarts, outputs, where, gpus_needed)
    options, saves = handoff.saves_before_node_end(
        options, max_restarts, outputs.gpu_max_run_hours if outputs else None, recipe.framework
    )
    return options, [note for note in (supervised, asked, saves) if note]


def _on_request(
    options: handoff.Options,
    max_restarts: int,
    outputs: StackOutputs | None,
    where: address.Where,
    gpus_needed: int,
) -> tuple[handoff.Options, str]:
    if outputs is None:
        return options, ""
    return handoff.gpus_on_request(
        options,
        max_restarts,
        outputs.gpu_scaling,
        outputs.gpus_per_node,
        gpus_needed,
        where.stack or "",
    )


def _resume(
    run: str,
    recipe_name: str | None,
    framework: str | None,
    follow_logs: bool,
    max_restarts: int,
    as_json: bool,
    addr: str | None,
    stack_name: str | None,
    allow_unsandboxed: bool,
    options: handoff.Options = handoff.Options(),
    every: save_choice.Every | None = None,
    dry_run: bool = False,
    sets: list[str] | None = None,
    nodes: int | None = None,
) -> int:
    """`submit --resume RUN`: its next attempt as its record has it; with `dry_run`, what would be
    submitted (the run's record is read from the cluster; nothing is submitted)."""
    # Start-up time (issue 29): the recipe machinery only when a run is resumed.
    from jobs.recipes import overrides
    from jobs.runs.recipe_run import Place
    from jobs.runs.resume import resume

    where = address.choose(addr, stack_name)
    outputs = stack.read(where.stack) if where.stack else None
    source = f"stack {where.stack}" if outputs is not None else where.describe().strip()
    with address.reach(where, outputs, spinner=opt.spinner) as dashboard:
        found = state.find(dashboard.jobs(), plan.check_run_name(run))
        if found is not None and found.kind == plan.COMMAND:
            if sets or nodes or recipe_name:
                raise UsageError(
                    f"run {run} was started with `run -- COMMAND`: it is resumed as it ran",
                    "drop RECIPE, --set and --nodes (they change recipe runs), or start the "
                    "command again with `run` and another --name",
                )
            return _resume_command(
                dashboard, found, where, outputs, follow_logs, max_restarts, as_json, options,
                dry_run,
            )  # fmt: skip
        resumed = resume(
            dashboard,
            run,
            recipe_name,
            framework,
            allow_unsandboxed,
            Place(where.stack, outputs, source),
            opt.where_flags(where),
            every,
            changes=overrides.parse(sets or []),
            nodes=nodes,
            found=found,
        )
        planned = resumed.planned
        if outputs is None and framework is None:
            _check_ray_version(resumed.recipe, dashboard, where)
        # A resume on spot or flex-start GPUs is supervised by default too (issue 24).
        options, capacity_notes = _for_capacity(
            options, max_restarts, outputs, where, resumed.recipe, planned.gpus_needed
        )
        for note in [*planned.notes, *capacity_notes]:
            err().print(note, markup=False)
        after = resumed.after
        sub = plan.for_attempt(planned.submission, resumed.next_attempt)
        if dry_run:
            supervised = options.supervised(max_restarts)
            err().print(
                f"dry run: would resume run {run} after {after.submission_id} "
                f"{after.status.value}, as {sub.submission_id}, from {planned.checkpoint_dir}"
                + (", handed to a supervisor" if supervised else "")
                + "; nothing was submitted",
                markup=False,
            )
            _print_dry_run(sub, as_json, [])
            return 0
        err().print(
            f"resuming run {run} after {after.submission_id} {after.status.value}, "
            f"from {planned.checkpoint_dir}",
            markup=False,
        )
        _warn_if_short(dashboard, planned.gpus_needed, options.request_gpus)
        return drive(
            dashboard,
            where,
            sub,
            follow_logs,
            max_restarts,
            as_json,
            gpus=planned.gpus_needed,
            checkpoint_dir=planned.checkpoint_dir,
            options=dataclasses.replace(options, keep=planned.keep),
            stall_default_s=handoff.RECIPE_STALL_TIMEOUT_S,
            check_name_free=False,
        )


def _resume_command(
    dashboard: Dashboard,
    found: state.Run,
    where: address.Where,
    outputs: StackOutputs | None,
    follow_logs: bool,
    max_restarts: int,
    as_json: bool,
    options: handoff.Options,
    dry_run: bool,
) -> int:
    """`submit --resume RUN` of a `run` run: its next attempt as Ray recorded the last one."""
    from jobs.runs import resume_command  # start-up time (issue 29): resumes only

    refusal = state.not_resumable(found, found.name, opt.where_flags(where))
    if refusal is not None:
        raise refusal
    nxt = resume_command.next_attempt(dashboard, found, opt.where_flags(where))
    options, note = handoff.surviving_defaults(
        options, max_restarts, outputs.gpu_provisioning if outputs else None, where.stack or ""
    )
    options, asked = _on_request(options, max_restarts, outputs, where, nxt.gpus)
    for line in (note, asked):
        if line:
            err().print(line, markup=False)
    saves = f", saving to {nxt.checkpoint_dir}" if nxt.checkpoint_dir else ""
    if dry_run:
        err().print(
            f"dry run: would resume run {found.name} after {nxt.after} {nxt.after_status}, "
            f"as {nxt.submission.submission_id}{saves}; nothing was submitted",
            markup=False,
        )
        _print_dry_run(nxt.submission, as_json, [])
        return 0
    err().print(
        f"resuming run {found.name} after {nxt.after} {nxt.after_status}{saves}", markup=False
    )
    return drive(
        dashboard,
        where,
        nxt.submission,
        follow_logs,
        max_restarts,
        as_json,
        gpus=nxt.gpus,
        checkpoint_dir=nxt.checkpoint_dir,
        options=options,
        check_name_free=False,
    )


@app.command("submit")
@handled
def submit_cmd(
    recipe_name: Annotated[
        str | None,
        typer.Argument(
            metavar="RECIPE", help="A recipe from `rl-jobs recipes` (not with --resume)."
        ),
    ] = None,
    sets: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="Override key=value (+key=value adds a key the config lacks, ++key=value adds or overrides); with --resume, a change the run's checkpoints still load under.",
        ),
    ] = None,
    name: opt.NameOpt = None,
    nodes: Annotated[
        int | None,
        typer.Option(
            "--nodes",
            min=1,
            metavar="N",
            help="GPU nodes (default: the stack's gpuNodeCount); with --resume, a new size where the framework reshards its checkpoints.",
        ),
    ] = None,
    gpus_per_node: Annotated[
        int | None,
        typer.Option(
            "--gpus-per-node",
            min=1,
            metavar="G",
            help="GPUs per node (default: the stack's gpusPerNode).",
        ),
    ] = None,
    framework: Annotated[
        str | None,
        typer.Option(
            "--framework",
            metavar="nemo-rl|verl",
            help="With a bare address: the framework the cluster runs (nemo-rl or verl), to check the recipe against.",
        ),
    ] = None,
    resume_run: Annotated[
        str | None,
        typer.Option(
            "--resume",
            metavar="RUN",
            help="Continue a FAILED or STOPPED run: submit its next attempt with the recipe, overrides, size and checkpoint dir recorded in its metadata.",
        ),
    ] = None,
    follow_logs: opt.FollowOpt = False,
    wait: opt.WaitOpt = None,
    max_restarts: opt.RestartsOpt = 0,
    max_preemptions: opt.PreemptionsOpt = None,
    stall_timeout: opt.StallOpt = None,
    capacity_deadline: opt.DeadlineOpt = None,
    runs_root: opt.RunsRootOpt = None,
    checkpoint_every: opt.CheckpointEveryOpt = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", metavar="", help="Print what would be submitted; contact nothing."
        ),
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            metavar="",
            help="Submit even when the checkpoints the run keeps would not fit the stack's Lustre.",
        ),
    ] = False,
    allow_unsandboxed: opt.UnsandboxedOpt = False,
    as_json: opt.JsonOpt = False,
    addr: opt.AddressOpt = None,
    stack_name: opt.StackOpt = None,
) -> None:
    """Submit a recipe as a run, or --resume a run.

    The run starts as attempt 1; --max-restarts hands it to a supervisor that restarts it."""
    # Start-up time (issue 29): the recipe machinery only when this command runs.
    from jobs.recipes import overrides
    from jobs.runs import save_choice
    from jobs.runs.recipe_run import Ask, Place, plan_recipe
    from jobs.runs.resume import recipe_named

    options = opt.supervision(
        max_preemptions,
        stall_timeout,
        runs_root,
        capacity_deadline,
        wait=wait,
        follow_logs=follow_logs,
    )
    every = save_choice.parse_flag(checkpoint_every)
    if framework is not None and framework not in FRAMEWORK_NAMES:
        raise UsageError(
            f"--framework {framework!r} is unknown", f"use {' or '.join(FRAMEWORK_NAMES)}"
        )
    if resume_run is not None:
        # --set and --nodes are changes the run's checkpoints are checked against
        # (jobs/runs/resume_changes.py); a name or a node size is the run itself.
        _refuse_with_resume(resume_run, {"--name": name, "--gpus-per-node": gpus_per_node})
        raise typer.Exit(
            _resume(
                resume_run,
                recipe_name,
                framework,
                follow_logs,
                max_restarts,
                as_json,
                addr,
                stack_name,
                allow_unsandboxed,
                options,
                every,
                dry_run,
                sets or [],
                nodes,
            )
        )
    if recipe_name is None:
        raise UsageError(
            "no recipe given",
            f"pass a RECIPE (see {commands.command('recipes')}), or --resume RUN to continue a run",
        )
    recipe = recipe_named(recipe_name)
    run = plan.check_run_name(name or plan.default_run_name(recipe.name))
    parsed, save_note = save_choice.choose(
        recipe, save_choice.not_twice(recipe, overrides.parse(sets or []), every), every, None, run
    )
    if save_note:
        err().print(save_note, markup=False)
    ask = Ask(
        recipe,
        run,
        parsed,
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        framework=framework,
        force=force,
        allow_unsandboxed=allow_unsandboxed,
    )
    if dry_run:
        planned = plan_recipe(ask, Place(stack_name, None, "a dry run", dry_run=True))
        _print_dry_run(planned.submission, as_json, planned.notes)
        return
    raise typer.Exit(
        _submit_new(ask, framework, follow_logs, max_restarts, as_json, addr, stack_name, options)
    )


def _submit_new(
    ask: Ask,
    framework: str | None,
    follow_logs: bool,
    max_restarts: int,
    as_json: bool,
    addr: str | None,
    stack_name: str | None,
    options: handoff.Options,
) -> int:
    """A new run: planned (refusals cost nothing), then the cluster reached and the run
    submitted or handed to its supervisor. Returns the exit code."""
    from jobs.runs.recipe_run import Place, plan_recipe  # start-up time (issue 29)

    where = address.choose(addr, stack_name)
    outputs = stack.read(where.stack) if where.stack else None
    source = f"stack {where.stack}" if outputs is not None else where.describe().strip()
    # Planned (size, overrides, payload checked) before the port-forward: a refusal costs nothing.
    planned = plan_recipe(ask, Place(where.stack, outputs, source))
    options, capacity_notes = _for_capacity(
        options, max_restarts, outputs, where, ask.recipe, planned.gpus_needed
    )
    for note in [*planned.notes, *capacity_notes]:
        err().print(note, markup=False)
    with address.reach(where, outputs, spinner=opt.spinner) as dashboard:
        if outputs is None and framework is None:
            _check_ray_version(ask.recipe, dashboard, where)
        _warn_if_short(dashboard, planned.gpus_needed, options.request_gpus)
        code = drive(
            dashboard,
            where,
            planned.submission,
            follow_logs,
            max_restarts,
            as_json,
            gpus=planned.gpus_needed,
            checkpoint_dir=planned.checkpoint_dir,
            options=dataclasses.replace(options, keep=planned.keep),
            stall_default_s=handoff.RECIPE_STALL_TIMEOUT_S,
        )
    return code


# ------------------------------------------------------------------------------------ run


@app.command("run", context_settings={"allow_interspersed_args": False})
@handled
def run_cmd(
    command: Annotated[
        list[str],
        typer.Argument(metavar="-- COMMAND ...", help="The command to run on the cluster."),
    ],
    working_dir: Annotated[
        Path | None,
        typer.Option(
            "--working-dir",
            metavar="DIR",
            help="Upload this directory (checked against Ray's 100 MiB cap first).",
        ),
    ] = None,
    name: opt.NameOpt = None,
    follow_logs: opt.FollowOpt = False,
    wait: opt.WaitOpt = None,
    max_restarts: opt.RestartsOpt = 0,
    max_preemptions: opt.PreemptionsOpt = None,
    stall_timeout: opt.StallOpt = None,
    capacity_deadline: opt.DeadlineOpt = None,
    runs_root: opt.RunsRootOpt = None,
    gpus: Annotated[
        int,
        typer.Option(
            "--gpus",
            min=0,
            metavar="N",
            show_default=False,
            help="GPUs the command gets (Ray's entrypoint_num_gpus, as `ray job submit --entrypoint-num-gpus`): it starts on a node that has them, with CUDA_VISIBLE_DEVICES set, and waits PENDING until one does. Supervised (--max-restarts, --max-preemptions), every attempt reserves them, and the supervisor waits until the cluster reports them before each one.",
        ),
    ] = 0,
    cluster_gpus: Annotated[
        int | None,
        typer.Option(
            "--cluster-gpus",
            min=1,
            metavar="N",
            help="GPUs the command's Ray workers need in the cluster (its driver reserves none unless --gpus): supervised, the run waits until the cluster reports N GPUs before each attempt, and a failure with all N present is a crash (default: --gpus).",
        ),
    ] = None,
    cpus: Annotated[
        float | None,
        typer.Option(
            "--cpus",
            min=0,
            metavar="N",
            help="CPUs the command reserves (entrypoint_num_cpus); 1 or more keeps it off a head started with 0 CPUs.",
        ),
    ] = None,
    resources: Annotated[
        list[str] | None,
        typer.Option(
            "--resource",
            metavar="NAME=AMOUNT",
            help="A custom resource the command reserves (entrypoint_resources); repeat for more.",
        ),
    ] = None,
    checkpoint_dir: Annotated[
        str,
        typer.Option(
            "--checkpoint-dir",
            metavar="DIR",
            show_default=False,
            help=f"Where the command checkpoints, as seen on the Ray head (e.g. {RUNS_ROOT}/RUN/checkpoints): a new entry there since the previous attempt tells a crash from progress.",
        ),
    ] = "",
    as_json: opt.JsonOpt = False,
    addr: opt.AddressOpt = None,
    stack_name: opt.StackOpt = None,
) -> None:
    """Run any command on the cluster.

    For example `rl-jobs run --stack dev --gpus 1 -- nvidia-smi` runs nvidia-smi on a GPU
    node, with one GPU."""
    options = opt.supervision(
        max_preemptions,
        stall_timeout,
        runs_root,
        capacity_deadline,
        wait=wait,
        follow_logs=follow_logs,
    )
    if checkpoint_dir and not checkpoint_dir.startswith("/"):
        raise UsageError(
            f"--checkpoint-dir {checkpoint_dir!r} is not an absolute path",
            f"give the directory as the Ray head sees it, e.g. {RUNS_ROOT}/RUN/checkpoints",
        )
    reserve = plan.Reserve(
        cpus, float(gpus) if gpus else None, plan.parse_resources(resources or [])
    )
    run = plan.check_run_name(name or plan.default_run_name("run"))
    # Built (and the working dir measured) before contacting anything: an oversize dir is
    # refused without a port-forward or an upload.
    sub = plan.for_command(
        list(command),
        run,
        working_dir,
        stack_name,
        plan.git_commit(),
        reserve,
        checkpoint_dir or "",
    )
    where = address.choose(addr, stack_name)
    outputs = stack.read(where.stack) if where.stack else None
    options, supervision_note = handoff.surviving_defaults(
        options, max_restarts, outputs.gpu_provisioning if outputs else None, where.stack or ""
    )
    options, asked_note = _on_request(
        options, max_restarts, outputs, where, max(gpus, cluster_gpus or 0)
    )
    for note in (supervision_note, asked_note):
        if note:
            err().print(note, markup=False)
    with opt.reach(addr, stack_name, outputs) as (dashboard, where):
        code = drive(
            dashboard,
            where,
            sub,
            follow_logs,
            max_restarts,
            as_json,
            gpus=max(gpus, cluster_gpus or 0),
            checkpoint_dir=checkpoint_dir,
            options=options,
            # A name given may be an old run's (issue 29 item 1: a supervisor alone takes it),
            # so the cluster's jobs are listed to check it; a generated one is new by
            # construction (its millisecond and letters), and a clash of its attempt 1 is still
            # refused by Ray's unique submission id. Listing costs more the more jobs a cluster has.
            check_name_free=name is not None,
        )
    raise typer.Exit(code)


# --------------------------------------------------------------------------------- export


def _submit_export(
    dashboard: Dashboard,
    where: address.Where,
    sub: Submission,
    run: str,
    recipe: Recipe,
    out_template: str,
) -> str:
    from jobs.runs import export  # start-up time (issue 29): exports only

    job_id = export.submit(dashboard, sub, opt.where_flags(where))
    err().print(
        f"submitted {job_id} (export of run {run}, {recipe.framework} "
        f"{sub.metadata['backend']}, to {out_template})",
        markup=False,
    )
    return job_id


@app.command("export")
@handled
def export_cmd(
    run: Annotated[
        str, typer.Argument(metavar="RUN", help="A recipe run (its name, as `list` shows it).")
    ],
    step: Annotated[
        int | None,
        typer.Option(
            "--step",
            min=1,
            metavar="STEP",
            help="Export this step (default: the newest complete checkpoint).",
        ),
    ] = None,
    out_dir: Annotated[
        str | None,
        typer.Option(
            "--out",
            metavar="DIR",
            help="Output folder inside the run's directory; {step} is filled in (default: <run dir>/hf/step_{step}).",
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            metavar="",
            help="Read the run from the cluster and print the export job; submit nothing.",
        ),
    ] = False,
    follow_logs: opt.FollowOpt = False,
    as_json: opt.JsonOpt = False,
    addr: opt.AddressOpt = None,
    stack_name: opt.StackOpt = None,
) -> None:
    """Convert a run's checkpoint to Hugging Face format.

    The run must have finished, failed or been stopped. The framework's own converter runs as a
    Ray job (RUN-export-N) and writes to Lustre."""
    from jobs.runs import export  # start-up time (issue 29): only this command

    plan.check_run_name(run)
    out_template = export.check_out(run, out_dir)
    where = address.choose(addr, stack_name)
    outputs = stack.read(where.stack) if where.stack else None
    with address.reach(where, outputs, spinner=opt.spinner) as dashboard:
        sub, recipe = export.prepare(
            dashboard, run, step, out_template, where.stack, opt.where_flags(where)
        )
        if dry_run:
            _print_dry_run(sub, as_json, [])
            return
        job_id = _submit_export(dashboard, where, sub, run, recipe, out_template)
        if not follow_logs:
            if as_json:
                emit_json(
                    {
                        "run": run,
                        "submission_id": job_id,
                        "status": "SUBMITTED",
                        "out": out_template,
                    }
                )
            else:
                out().print(job_id, markup=False)
                err().print(
                    f"follow: "
                    f"{commands.command('logs', job_id, '--follow', where=opt.where_flags(where))}",
                    markup=False,
                )
            return
        status = opt.follow_or_detach(dashboard, where, job_id, to_stderr=as_json)
    if as_json:
        emit_json(
            {"run": run, "submission_id": job_id, "status": status.value, "out": out_template}
        )
    raise typer.Exit(int(ExitCode.OK if follow.succeeded(status) else ExitCode.JOB_FAILED))
