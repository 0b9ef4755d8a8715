"""`rl-jobs cost`: GPU node-hours and their cost per run, and the stack's idle GPU node-hours."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated

import typer

from jobs.cli import options as opt
from jobs.cli.console import emit_json, handled, out

if TYPE_CHECKING:
    from rich.table import Table

    from jobs.runs import cost

app = typer.Typer()

SinceOpt = Annotated[
    str | None,
    typer.Option(
        "--since",
        metavar="T",
        help="Only since T, as `list` takes it: a time ago (36h, 30m, 7d) or a date (2026-12-01T08:00, UTC) (default: all the Ray head remembers).",
    ),
]
PriceOpt = Annotated[
    float | None,
    typer.Option(
        "--node-hour-usd",
        metavar="USD",
        help="Price one GPU node-hour at this (default: the stack's gpuNodeHourUsd output).",
    ),
]


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:,.2f}"


def _hours(value: float | None) -> str:
    return "?" if value is None else f"{value:,.2f}"


def cost_table(report: cost.CostReport) -> Table:
    from rich.table import Table  # lazy, for start-up time: only `cost` draws it

    table = Table(title="GPU node-hours and cost", caption=f"price: {report.price_source}")
    for col in ("run", "recipe", "attempts", "node-hours", "cost"):
        table.add_column(col, no_wrap=col == "run", overflow="fold")
    for r in report.runs:
        attempts = ", ".join(
            f"a{a.attempt} {a.status} {'?' if a.nodes is None else a.nodes}x"
            f"{a.interval.hours if a.interval else 0:.2f}h"
            for a in r.attempts
        )
        table.add_row(
            r.run, r.recipe or "-", attempts, _hours(r.node_hours), _money(report.usd(r.node_hours))
        )
    table.add_section()
    table.add_row(
        "idle",
        "",
        "GPU nodes alive, no run",
        _hours(report.idle_node_hours),
        _money(report.usd(report.idle_node_hours)),
    )
    table.add_row(
        "total",
        "",
        "",
        _hours(report.total_node_hours),
        _money(report.usd(report.total_node_hours)),
    )
    return table


@app.command("cost")
@handled
def cost_cmd(
    as_json: opt.JsonOpt = False,
    addr: opt.AddressOpt = None,
    stack_name: opt.StackOpt = None,
    since: SinceOpt = None,
    node_hour_usd: PriceOpt = None,
) -> None:
    """Show GPU node-hours and cost per run, and idle GPU hours."""
    from jobs.runs import address, cost  # lazy: only this command uses them

    now_ms = int(time.time() * 1000)
    period = cost.period_since(since, now_ms)
    where = address.choose(addr, stack_name)
    price, source = cost.price_of(where.outputs(), node_hour_usd)
    with address.reach(where, spinner=opt.spinner) as cluster:
        jobs = cluster.jobs()
        nodes = cluster.nodes()
    report = cost.report(jobs, nodes, period, price, source)
    if as_json:
        emit_json(report.view())
        return
    out().print(cost_table(report), soft_wrap=False)
