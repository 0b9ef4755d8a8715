"""`rl-jobs report`: write a run's curves, attempts and GPU-hours to one self-contained HTML file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from jobs.cli import options as opt
from jobs.cli.console import emit_json, handled, out
from jobs.common.errors import UsageError

app = typer.Typer()

RunArg = Annotated[
    str, typer.Argument(metavar="RUN", help="A run name, or a submission id (its run).")
]
OutOpt = Annotated[
    Path | None,
    typer.Option(
        "--out",
        metavar="FILE",
        help="Where to write the page (default: ./RUN-report.html).",
    ),
]


@app.command("report")
@handled
def report_cmd(
    run: RunArg,
    out_file: OutOpt = None,
    as_json: opt.JsonOpt = False,
    addr: opt.AddressOpt = None,
    stack_name: opt.StackOpt = None,
) -> None:
    """Write a run's curves and attempts to one offline HTML page."""
    from jobs.runs import run_report  # lazy, for start-up time: only this command

    with opt.reach(addr, stack_name) as (cluster, where):
        report = run_report.gather(cluster, run, opt.where_flags(where), where.outputs())
    target = out_file or Path(f"{report.run}-report.html")
    if target.is_dir():
        raise UsageError(
            f"--out {str(target)!r} is a directory", "give a file name, e.g. --out run.html"
        )
    if not target.parent.is_dir():
        raise UsageError(
            f"--out {str(target)!r}: its folder {str(target.parent)!r} does not exist",
            "create it first, or give a path in an existing folder",
        )
    page = run_report.render(report)
    target.write_text(page, encoding="utf-8")
    curves = report.curves.present()
    if as_json:
        emit_json(
            {
                "run": report.run,
                "out": str(target),
                "curves": {m: len(report.curves.series(m)) for m in curves},
                "attempts": len(report.attempts),
                "goodput": report.goodput,
                "unreadable_logs": report.unreadable_logs,
                "eval": [r.model_dump(exclude={"problems"}) for r in report.evals],
            }
        )
        return
    shown = ", ".join(curves) if curves else "no step lines yet"
    out().print(f"wrote {target} ({len(report.attempts)} attempt(s); {shown})", markup=False)
    for why in report.unreadable_logs.values():
        out().print(why, markup=False)
