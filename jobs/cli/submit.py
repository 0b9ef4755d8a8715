"""`submit`: a recipe as a new run, or `--resume RUN` (jobs/cli/resume.py) to continue one."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Annotated

import typer

from components.contract import FRAMEWORK_NAMES
from jobs.cli import options as opt
from jobs.cli import resume
from jobs.cli.console import emit_json, err, handled, out
from jobs.cli.drive import (
    SubmitOptions,
    Submitting,
    check_ray_version,
    drive,
    dry_run_lines,
    print_dry_run,
    recipe_attempt,
    takes_submitting,
)
from jobs.common import commands
from jobs.common.errors import UsageError
from jobs.runs import address, plan

# The recipe machinery is imported in the functions that plan a recipe run, so the commands that
# import this module start without it (tests/jobs/cli/test_startup.py).
if TYPE_CHECKING:
    from jobs.runs.plan import Submission
    from jobs.runs.recipe_run import Ask, Planned

app = typer.Typer()


@app.command("submit")
@handled
@takes_submitting
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
    *,
    submitting: Submitting,
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
    eval_at_end: Annotated[
        bool,
        typer.Option(
            "--eval-at-end",
            metavar="",
            help="When the run succeeds, its supervisor queues the eval of its newest complete step (pass@1 on the recipe's held-out split; `rl-jobs eval`).",
        ),
    ] = False,
) -> None:
    """Submit a recipe as a run, or --resume a run.

    The run starts as attempt 1; --max-restarts hands it to a supervisor that restarts it."""
    # Start-up time: the recipe machinery only when this command runs.
    from jobs.runs import save_choice

    every = save_choice.parse_flag(checkpoint_every)
    if framework is not None and framework not in FRAMEWORK_NAMES:
        raise UsageError(
            f"--framework {framework!r} is unknown", f"use {' or '.join(FRAMEWORK_NAMES)}"
        )
    asked = SubmitOptions(
        submitting,
        recipe_name=recipe_name,
        sets=tuple(sets or ()),
        name=name,
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        framework=framework,
        every=every,
        dry_run=dry_run,
        force=force,
        allow_unsandboxed=allow_unsandboxed,
        eval_at_end=eval_at_end,
    )
    if resume_run is not None:
        # --set and --nodes are changes the run's checkpoints are checked against
        # (jobs/runs/resume_changes.py); a name or a node size is the run itself.
        _refuse_with_resume(resume_run, {"--name": name, "--gpus-per-node": gpus_per_node})
        if eval_at_end:
            raise UsageError(
                f"--resume {resume_run} cannot be combined with --eval-at-end",
                f"it is asked when a run is first submitted; once the resumed run succeeded, "
                f"evaluate it with {commands.command('eval', resume_run)}",
            )
        raise typer.Exit(resume.resume(resume_run, asked))
    _submit(asked)


def _refuse_with_resume(resume_run: str, given: dict[str, object]) -> None:
    flags = [flag for flag, value in given.items() if value]
    if flags:
        raise UsageError(
            f"--resume {resume_run} cannot be combined with {', '.join(flags)}",
            "a resumed run keeps the recipe, overrides and size recorded in its "
            "metadata; start a new run (another --name) to change them",
        )


def _submit(asked: SubmitOptions) -> None:
    """A new run: its recipe, name and save period chosen, then printed (--dry-run) or submitted."""
    from jobs.recipes import overrides
    from jobs.runs import save_choice
    from jobs.runs.recipe_run import Ask, Place, plan_recipe
    from jobs.runs.resume import recipe_named

    if asked.recipe_name is None:
        raise UsageError(
            "no recipe given",
            f"pass a RECIPE (see {commands.command('recipes')}), or --resume RUN to continue a run",
        )
    recipe = recipe_named(asked.recipe_name)
    if asked.eval_at_end:
        from jobs.runs import eval_at_end

        eval_at_end.check(recipe)  # before anything is planned
    run = plan.check_run_name(asked.name or plan.default_run_name(recipe.name))
    every = asked.every
    parsed, save_note = save_choice.choose(
        recipe,
        save_choice.not_twice(recipe, overrides.parse(list(asked.sets)), every),
        every,
        None,
        run,
    )
    if save_note:
        err().print(save_note, markup=False)
    ask = Ask(
        recipe,
        run,
        parsed,
        nodes=asked.nodes,
        gpus_per_node=asked.gpus_per_node,
        framework=asked.framework,
        force=asked.force,
        allow_unsandboxed=asked.allow_unsandboxed,
    )
    if asked.dry_run:
        stack_name = asked.submitting.stack_name
        planned = plan_recipe(ask, Place(stack_name, None, "a dry run", dry_run=True))
        root = asked.submitting.supervision.runs_root
        at_end = _eval_job(ask, planned, root, stack_name) if asked.eval_at_end else None
        _print_dry_run(planned, asked.submitting.as_json, at_end)
        return
    raise typer.Exit(_submit_new(ask, asked))


def _submit_new(ask: Ask, asked: SubmitOptions) -> int:
    """A new run: planned (refusals cost nothing), then the cluster reached and the run
    submitted or handed to its supervisor. Returns the exit code."""
    from jobs.runs.recipe_run import Place, plan_recipe  # start-up time: recipe runs only

    submitting = asked.submitting
    where = address.choose(submitting.addr, submitting.stack_name)
    outputs = where.outputs()
    source = f"stack {where.stack}" if outputs is not None else where.describe().strip()
    # Planned (size, overrides, payload checked) before the port-forward: a refusal costs nothing.
    planned = plan_recipe(ask, Place(where.stack, outputs, source))
    chosen = submitting.defaults_on(
        outputs, where.stack, planned.gpus_needed, ask.recipe.framework, planned.notes
    )
    options = chosen.options
    if asked.eval_at_end:
        from jobs.runs import eval_at_end  # start-up time: only with the flag

        eval_at_end.check_gpus(options.request_gpus, where.stack)
        at_end = _eval_job(ask, planned, options.runs_root, where.stack)
        options = replace(options, eval_job=eval_at_end.for_spec(at_end))
    with address.reach(where, spinner=opt.spinner) as dashboard:
        if outputs is None and asked.framework is None:
            check_ray_version(ask.recipe, dashboard, where)
        attempt = recipe_attempt(dashboard, planned, options)
        code = drive(dashboard, where, planned.submission, submitting, attempt)
    return code


def _eval_job(ask: Ask, planned: Planned, runs_root: str, stack: str | None) -> Submission:
    """`--eval-at-end`: the eval job the run's supervisor sends once the run succeeded."""
    from jobs.runs import eval_at_end

    return eval_at_end.job(
        ask.recipe, planned.submission, runs_root, stack, plan.git_commit(), planned.sandbox_url
    )


def _print_dry_run(planned: Planned, as_json: bool, at_end: Submission | None) -> None:
    """The run's first attempt, then (with --eval-at-end) the eval its supervisor would queue."""
    if at_end is None:
        print_dry_run(planned.submission, as_json, planned.notes)
        return
    from jobs.runs import eval_at_end

    shown = eval_at_end.shown(at_end)
    if as_json:
        emit_json({**planned.submission.model_dump(), "eval_at_end": shown.model_dump()})
        return
    print_dry_run(planned.submission, False, [])
    out().print(
        f"when the run succeeds, its supervisor queues ({eval_at_end.STEP}: the newest "
        "complete step):",
        markup=False,
    )
    for line in dry_run_lines(shown):
        out().print(line, markup=False)
    for note in planned.notes:
        err().print(note, markup=False)
