"""`stage`: a model's pinned snapshot (and NeMo RL's Megatron conversion) onto the stack's Lustre, once."""

from __future__ import annotations

from typing import Annotated

import typer

from jobs.cli import options as opt
from jobs.cli.console import emit_json, err, handled, out
from jobs.common.errors import ExitCode

app = typer.Typer()

TargetArg = Annotated[
    str,
    typer.Argument(
        metavar="MODEL",
        help="A Hugging Face model id (org/name), or a recipe name: stage what it loads.",
    ),
]
RevisionOpt = Annotated[
    str,
    typer.Option(
        "--revision",
        metavar="REV",
        help="Branch, tag or commit; resolved to a commit when staged, and runs load that commit.",
    ),
]
ConvertOpt = Annotated[
    bool | None,
    typer.Option(
        "--convert/--no-convert",
        help="Also run NeMo RL's one-time Megatron conversion (default: when a Megatron recipe uses the model).",
    ),
]
GpusOpt = Annotated[
    int | None,
    typer.Option(
        "--gpus",
        min=1,
        metavar="N",
        help="GPUs of one node the conversion spreads the model over (default: the stack's GPUs per node, else 8).",
    ),
]
HfHomeOpt = Annotated[
    str | None,
    typer.Option(
        "--hf-home",
        metavar="DIR",
        help="The model cache as the cluster sees it (default: the stack's, on Lustre).",
    ),
]
FollowStageOpt = Annotated[
    bool,
    typer.Option(
        "--follow/--no-follow",
        help="Show the stage's progress until it ends (default), or only submit it.",
    ),
]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", metavar="", help="Print the stage job; contact nothing.")
]


@app.command("stage")
@handled
def stage_cmd(
    target: TargetArg,
    revision: RevisionOpt = "main",
    convert: ConvertOpt = None,
    gpus: GpusOpt = None,
    hf_home: HfHomeOpt = None,
    dry_run: DryRunOpt = False,
    follow_logs: FollowStageOpt = True,
    as_json: opt.JsonOpt = False,
    addr: opt.AddressOpt = None,
    stack_name: opt.StackOpt = None,
) -> None:
    """Put a model on Lustre once, pinned, so runs load it offline.

    Downloads MODEL at a commit (resumable, with progress), the Hub datasets its recipes load,
    and runs NeMo RL's one-time Megatron conversion where a Megatron recipe uses it. Safe to run
    again: a complete snapshot or conversion is reused, a stopped download resumes and a partial
    conversion is redone. A recipe's first step stages its model when it is not staged; only
    this command converts it once for every attempt."""
    # Lazy: what staging needs is imported only when this command runs, so the others start
    # faster.
    from jobs.runs import address, follow
    from jobs.runs import stage as staging

    if dry_run:
        where = address.choose(addr, stack_name) if (addr or stack_name) else None
        named = where.stack if where else None
        outputs = where.outputs() if where else None
        ask = staging.ask(target, revision, convert, gpus, hf_home, outputs, named, 1)
        sub = staging.for_stage(ask, named)
        if as_json:
            emit_json(sub.model_dump())
        else:
            out().print_json(sub.model_dump_json())
        return
    where = address.choose(addr, stack_name)
    outputs = where.outputs()
    with address.reach(where, spinner=opt.spinner) as dashboard:
        job_id, ask = staging.submit(
            dashboard,
            target,
            where.stack,
            lambda number: staging.ask(
                target, revision, convert, gpus, hf_home, outputs, where.stack, number
            ),
        )
        what = " and its Megatron conversion" if ask.convert else ""
        err().print(f"submitted {job_id}: {ask.target.model}@{revision}{what}", markup=False)
        if not follow_logs:
            opt.report_submitted(job_id, where, as_json, {"submission_id": job_id})
            return
        status = opt.follow_or_detach(
            dashboard,
            where,
            job_id,
            to_stderr=as_json,
            detached_note=" (a stopped stage resumes when run again)",
        )
    if as_json:
        emit_json({"submission_id": job_id, "status": status.value})
    raise typer.Exit(int(ExitCode.OK if follow.succeeded(status) else ExitCode.JOB_FAILED))
