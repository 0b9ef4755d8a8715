"""`rl-jobs cost`: GPU node-hours and their cost per run, and the stack's idle GPU node-hours."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated

import typer

from jobs.cli import options as opt
from jobs.cli.console import emit_json, handled, out

if TYPE_CHECKING:
    from rich.console import RenderableType
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


# The table's columns besides the run's name need about this many columns to read whole.
_OTHER_COLUMNS = 66


def cost_view(report: cost.CostReport, width: int) -> RenderableType:
    """The table where every run's name fits beside its figures; else one block per run, its
    name on a line of its own (a 63-character name left the table's other columns one letter
    wide at 80 columns, its header a letter per line)."""
    longest = max((len(r.run) for r in report.runs), default=0)
    if longest + _OTHER_COLUMNS <= width:
        return cost_table(report)
    from rich.console import Group
    from rich.padding import Padding
    from rich.text import Text

    lines: list[RenderableType] = [Text("GPU node-hours and cost", style="bold")]
    for r in report.runs:
        lines.append(Text(r.run))
        figures = f"recipe {r.recipe or '-'}  {_hours(r.gpu_hours)} GPU-h (life)  "
        figures += f"{_hours(r.node_hours)} node-h  "
        figures += _money(report.usd(r.node_hours))
        lines.append(Padding(Text(figures), (0, 0, 0, 2)))
        lines.append(Padding(Text(_attempts(r)), (0, 0, 0, 4)))
    for label, hours in (
        ("idle (GPU nodes alive, no run)", report.idle_node_hours),
        ("total", report.total_node_hours),
    ):
        lines.append(Text(f"{label}: {_hours(hours)} node-h  {_money(report.usd(hours))}"))
    lines.append(Text(f"price: {report.price_source}"))
    return Group(*lines)


def _attempts(r: cost.RunUsage) -> str:
    return ", ".join(
        f"a{a.attempt} {a.status} {'?' if a.nodes is None else a.nodes}x"
        f"{a.interval.hours if a.interval else 0:.2f}h"
        for a in r.attempts
    )


def cost_table(report: cost.CostReport) -> Table:
    from rich.table import Table  # lazy, for start-up time: only `cost` draws it

    table = Table(title="GPU node-hours and cost", caption=f"price: {report.price_source}")
    for col in ("run", "recipe", "attempts", "GPU-h (life)", "node-hours", "cost"):
        table.add_column(col, no_wrap=col == "run", overflow="fold")
    for r in report.runs:
        table.add_row(
            r.run,
            r.recipe or "-",
            _attempts(r),
            _hours(r.gpu_hours),
            _hours(r.node_hours),
            _money(report.usd(r.node_hours)),
        )
    table.add_section()
    table.add_row(
        "idle",
        "",
        "GPU nodes alive, no run",
        "",
        _hours(report.idle_node_hours),
        _money(report.usd(report.idle_node_hours)),
    )
    table.add_row(
        "total",
        "",
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
    # Lazy: only this command uses them.
    from jobs.runs import address, cost, handoff, run_life, state

    now_ms = int(time.time() * 1000)
    period = cost.period_since(since, now_ms)
    where = address.choose(addr, stack_name)
    price, source = cost.price_of(where.outputs(), node_hour_usd)
    with address.reach(where, spinner=opt.spinner) as cluster:
        jobs = cluster.jobs()
        nodes = cluster.nodes()
        report = cost.report(jobs, nodes, period, price, source)
        for usage in report.runs:
            # The run's GPU-hours over its life, from its attempts and its supervisors'
            # records: the figure `status` gives (its goodput's total), for `run --gpus N`
            # runs too, whose attempts record no node count.
            found = state.find(jobs, usage.run)
            if found is not None:
                records = handoff.events(cluster, list(found.supervisors))
                usage.gpu_hours = run_life.life_gpu_hours(found, records)
    if as_json:
        emit_json(report.view())
        return
    out().print(cost_view(report, out().width), soft_wrap=False)
