"""`export RUN`: a run's checkpoint converted to Hugging Face format by a Ray job on the cluster."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from jobs.cli import options as opt
from jobs.cli.console import emit_json, err, handled
from jobs.cli.drive import print_dry_run
from jobs.common.errors import ExitCode, UsageError
from jobs.runs import address, follow, plan
from jobs.runs.address import Dashboard
from jobs.runs.plan import Submission

if TYPE_CHECKING:
    from jobs.recipes.catalogue import Recipe

app = typer.Typer()


def _submit_export(
    dashboard: Dashboard,
    where: address.Where,
    sub: Submission,
    run: str,
    recipe: Recipe,
    out_template: str,
) -> str:
    from jobs.runs import export  # start-up time: exports only

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
    best: Annotated[
        bool,
        typer.Option(
            "--best",
            help="Export the step with the highest held-out score (rl-jobs eval); never one without a score.",
        ),
    ] = False,
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
    from jobs.runs import export  # start-up time: only this command

    plan.check_run_name(run)
    if best and step is not None:
        raise UsageError("--step and --best together", "give one: a step, or --best")
    out_template = export.check_out(run, out_dir)
    where = address.choose(addr, stack_name)
    with address.reach(where, spinner=opt.spinner) as dashboard:
        sub, recipe = export.prepare(
            dashboard, run, step, out_template, where.stack, opt.where_flags(where), best
        )
        if dry_run:
            print_dry_run(sub, as_json, [])
            return
        job_id = _submit_export(dashboard, where, sub, run, recipe, out_template)
        if not follow_logs:
            view = {"run": run, "submission_id": job_id, "out": out_template}
            opt.report_submitted(job_id, where, as_json, view)
            return
        status = opt.follow_or_detach(dashboard, where, job_id, to_stderr=as_json)
    if as_json:
        emit_json(
            {"run": run, "submission_id": job_id, "status": status.value, "out": out_template}
        )
    raise typer.Exit(int(ExitCode.OK if follow.succeeded(status) else ExitCode.JOB_FAILED))
