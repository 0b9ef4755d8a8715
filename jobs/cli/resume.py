"""`submit --resume RUN`: a stopped or failed run's next attempt, as its record has it."""

from __future__ import annotations

from dataclasses import replace

from jobs.cli import options as opt
from jobs.cli.console import err
from jobs.cli.drive import (
    Attempt,
    SubmitOptions,
    check_ray_version,
    drive,
    print_dry_run,
    recipe_attempt,
)
from jobs.common.errors import UsageError
from jobs.runs import address, plan, state
from jobs.runs.address import Dashboard


def resume(run: str, asked: SubmitOptions) -> int:
    """`submit --resume RUN`: its next attempt as its record has it; with --dry-run, what would be
    submitted (the run's record is read from the cluster; nothing is submitted)."""
    # Start-up time: the recipe machinery only when a run is resumed.
    from jobs.recipes import overrides
    from jobs.runs.recipe_run import Place
    from jobs.runs.resume import resume as resume_recipe_run

    where = address.choose(asked.submitting.addr, asked.submitting.stack_name)
    outputs = where.outputs()
    source = f"stack {where.stack}" if outputs is not None else where.describe().strip()
    with address.reach(where, spinner=opt.spinner) as dashboard:
        found = state.find(dashboard.jobs(), plan.check_run_name(run))
        if found is not None:
            asked = _with_runs_root_kept(found, asked)
        submitting = asked.submitting
        if found is not None and found.kind == plan.COMMAND:
            if asked.sets or asked.nodes or asked.recipe_name:
                raise UsageError(
                    f"run {run} was started with `run -- COMMAND`: it is resumed as it ran",
                    "drop RECIPE, --set and --nodes (they change recipe runs), or start the "
                    "command again with `run` and another --name",
                )
            return _resume_command(dashboard, found, where, asked)
        resumed = resume_recipe_run(
            dashboard,
            run,
            asked.recipe_name,
            asked.framework,
            asked.allow_unsandboxed,
            Place(where.stack, outputs, source),
            opt.where_flags(where),
            asked.every,
            changes=overrides.parse(list(asked.sets)),
            nodes=asked.nodes,
            found=found,
            watcher=opt.watcher(dashboard, where),
        )
        planned = resumed.planned
        if outputs is None and asked.framework is None:
            check_ray_version(resumed.recipe, dashboard, where)
        # A resume on spot or flex-start GPUs is supervised by default too, as a new run is.
        chosen = submitting.defaults_on(
            outputs, where.stack, planned.gpus_needed, resumed.recipe.framework, planned.notes
        )
        after = resumed.after
        sub = plan.for_attempt(planned.submission, resumed.next_attempt)
        if asked.dry_run:
            supervised = chosen.options.supervised(submitting.max_restarts)
            err().print(
                f"dry run: would resume run {run} after {after.submission_id} "
                f"{after.status.value}, as {sub.submission_id}, from {planned.checkpoint_dir}"
                + (", handed to a supervisor" if supervised else "")
                + "; nothing was submitted",
                markup=False,
            )
            print_dry_run(sub, submitting.as_json, [])
            return 0
        err().print(
            f"resuming run {run} after {after.submission_id} {after.status.value}, "
            f"from {planned.checkpoint_dir}",
            markup=False,
        )
        attempt = recipe_attempt(dashboard, planned, chosen.options, check_name_free=False)
        return drive(dashboard, where, sub, submitting, attempt)


def _with_runs_root_kept(found: state.Run, asked: SubmitOptions) -> SubmitOptions:
    """`asked` with the runs root the run asked for kept (said on stderr when it decides)."""
    from jobs.runs.resume import runs_root_kept

    supervision = asked.submitting.supervision
    unsupervised = supervision.max_preemptions == 0 and asked.submitting.max_restarts == 0
    root, note = runs_root_kept(found, supervision.runs_root, unsupervised)
    if note:
        err().print(note, markup=False)
    if root == supervision.runs_root:
        return asked
    submitting = replace(asked.submitting, supervision=replace(supervision, runs_root=root))
    return replace(asked, submitting=submitting)


def _resume_command(
    dashboard: Dashboard, found: state.Run, where: address.Where, asked: SubmitOptions
) -> int:
    """`submit --resume RUN` of a `run` run: its next attempt as Ray recorded the last one."""
    from jobs.runs import resume_command  # start-up time: resumes only

    refusal = state.not_resumable(found, found.name, opt.where_flags(where))
    if refusal is not None:
        raise refusal
    submitting = asked.submitting
    nxt = resume_command.next_attempt(dashboard, found, opt.where_flags(where))
    # A command has no save to ask for before a node ends: no framework.
    chosen = submitting.defaults_on(where.outputs(), where.stack, nxt.gpus)
    saves = f", saving to {nxt.checkpoint_dir}" if nxt.checkpoint_dir else ""
    if asked.dry_run:
        err().print(
            f"dry run: would resume run {found.name} after {nxt.after} {nxt.after_status}, "
            f"as {nxt.submission.submission_id}{saves}; nothing was submitted",
            markup=False,
        )
        print_dry_run(nxt.submission, submitting.as_json, [])
        return 0
    err().print(
        f"resuming run {found.name} after {nxt.after} {nxt.after_status}{saves}", markup=False
    )
    attempt = Attempt(
        chosen.options,
        gpus=nxt.gpus,
        checkpoint_dir=nxt.checkpoint_dir,
        check_name_free=False,
    )
    return drive(dashboard, where, nxt.submission, submitting, attempt)
