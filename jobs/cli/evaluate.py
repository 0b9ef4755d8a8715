"""`eval RUN`: a run's checkpoint (or its base model) scored on its recipe's held-out split by a Ray job."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from components.contract import RUNS_ROOT
from jobs.cli import drive
from jobs.cli import options as opt
from jobs.cli.console import emit_json, err, handled
from jobs.cli.drive import print_dry_run
from jobs.common.errors import UsageError
from jobs.runs import address, plan

if TYPE_CHECKING:
    from jobs.runs.evaluate import Ask

app = typer.Typer()

RunArg = Annotated[str, typer.Argument(metavar="RUN", help="A recipe run (its name).")]
StepOpt = Annotated[
    int | None,
    typer.Option(
        "--step", min=1, metavar="STEP", help="Evaluate this step (default: the newest complete)."
    ),
]
BaseOpt = Annotated[
    bool,
    typer.Option("--base", help="Evaluate the recipe's base model instead, the same way."),
]
MetricOpt = Annotated[str, typer.Option("--metric", metavar="METRIC", help="The metric: pass@k.")]
KOpt = Annotated[int, typer.Option("--k", metavar="K", help="k of pass@k (1: accuracy).")]
NOpt = Annotated[int, typer.Option("--n", metavar="N", help="Samples per problem (n >= k).")]
SeedOpt = Annotated[int, typer.Option("--seed", metavar="SEED", help="The evaluation's seed.")]
OutRootOpt = Annotated[
    str | None,
    typer.Option(
        "--runs-root",
        metavar="DIR",
        help=f"Runs root the results go under, as the head sees it (default: {RUNS_ROOT}).",
    ),
]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Print the eval job; submit nothing.")]
EveryOpt = Annotated[
    int | None,
    typer.Option(
        "--every",
        metavar="K",
        help="Evaluate every complete step that is a multiple of K and has no result yet, "
        "one supervised eval each (not with --step, --base, --follow).",
    ),
]


@app.command("eval")
@handled
def eval_cmd(
    run: RunArg,
    step: StepOpt = None,
    base: BaseOpt = False,
    every: EveryOpt = None,
    metric: MetricOpt = "pass@k",
    k: KOpt = 1,
    n: NOpt = 1,
    seed: SeedOpt = 42,
    runs_root: OutRootOpt = None,
    dry_run: DryRunOpt = False,
    allow_unsandboxed: opt.UnsandboxedOpt = False,
    follow_logs: opt.FollowOpt = False,
    as_json: opt.JsonOpt = False,
    addr: opt.AddressOpt = None,
    stack_name: opt.StackOpt = None,
) -> None:
    """Score a checkpoint on held-out data (pass@k).

    The framework's own evaluation runs as a Ray job (RUN-eval-N); the result is kept with the
    run, in <runs root>/RUN/eval/step_N.json."""
    from jobs.recipes import evals
    from jobs.runs import eval_every, evaluate  # start-up time: only this command

    plan.check_run_name(run)
    eval_every.check_flags(every, step, base, follow_logs)
    if base and step is not None:
        raise UsageError("--step and --base together", "give one: a step, or the base model")
    ask = evaluate.Ask(
        run,
        step,
        base,
        evals.request(metric, k, n, seed),
        runs_root or RUNS_ROOT,
        allow_unsandboxed,
        dry_run,
    )
    where = address.choose(addr, stack_name)
    if every is not None:
        _every(ask, every, where, as_json)
        return
    with address.reach(where, spinner=opt.spinner) as dashboard:
        prepared = evaluate.prepare(dashboard, ask, where, opt.watcher(dashboard, where))
        for note in prepared.notes:
            err().print(note, markup=False)
        sub, chosen = prepared.sub, prepared.step
        if dry_run:
            print_dry_run(sub, as_json, [])
            return
        # The eval is supervised under its own name: its supervisor sends it again after a lost
        # node, and the new try resumes from the shards the cut one kept.
        name = sub.submission_id
        sid = evaluate.supervise(dashboard, sub, prepared.gpus, opt.where_flags(where))
        what = "the base model" if chosen is None else f"step {chosen}"
        err().print(
            f"submitted {name} (eval of run {run}, {what}, {metric} k={k} n={n}), "
            f"supervised by {sid}",
            markup=False,
        )
        if not follow_logs:
            view = {"run": run, "submission_id": name, "supervisor": sid, "step": chosen}
            opt.report_submitted(sid, where, as_json, view)
            return
        code = drive.follow_supervised(dashboard, where, name, sid, as_json)
    raise typer.Exit(code)


def _every(ask: Ask, every: int, where: address.Where, as_json: bool) -> None:
    """`--every K`: one supervised eval per chosen step, what was skipped and why."""
    from jobs.runs import eval_every, evaluate

    with address.reach(where, spinner=opt.spinner) as dashboard:
        chosen = eval_every.prepare(dashboard, ask, every, where, opt.watcher(dashboard, where))
        for note in chosen.notes:
            err().print(note, markup=False)
        queued: list[dict[str, object]] = []
        for step, sub in chosen.queued:
            if ask.dry_run:
                if not as_json:
                    print_dry_run(sub, False, [])
                queued.append({"step": step, "submission_id": sub.submission_id})
                continue
            sid = evaluate.supervise(dashboard, sub, chosen.gpus, opt.where_flags(where))
            queued.append({"step": step, "submission_id": sub.submission_id, "supervisor": sid})
            err().print(
                f"queued step {step}: {sub.submission_id}, supervised by {sid}", markup=False
            )
        for step, why in chosen.skipped:
            err().print(f"skipped step {step}: {why}", markup=False)
    if as_json:
        emit_json(
            {
                "run": ask.run,
                "every": every,
                "dry_run": ask.dry_run,
                "queued": queued,
                "skipped": [{"step": s, "why": why} for s, why in chosen.skipped],
            }
        )
