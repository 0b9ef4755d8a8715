"""The typer app behind `rl-jobs` (and its alias `rl-jobs`): its commands in order, `recipes`, and the process's signal handling."""

from __future__ import annotations

import signal
import sys
from typing import TYPE_CHECKING, Any

import typer

from jobs.cli import cost, evaluate, export, inspect, run, run_report, stage, submit
from jobs.cli import options as opt
from jobs.cli.console import Terminated, emit_json, handled, out
from jobs.cli.data import data_app
from jobs.common import commands

if TYPE_CHECKING:
    from jobs.recipes.catalogue import Recipe

app = typer.Typer(
    name="rl-jobs",
    help="Submit, follow and restart GRPO runs (NeMo RL, veRL) on a Ray cluster.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Click's own help layout: it wraps at the terminal's width (COLUMNS), never cuts an
    # option's name, and shows no type placeholders (`<bool>`) for flags, as rich panels did.
    rich_markup_mode=None,
)


def _recipe_view(r: Recipe) -> dict[str, Any]:
    return {
        "name": r.name,
        "framework": r.framework,
        "framework_version": r.spec.version,
        "image": r.spec.image,
        "ray_version": r.spec.ray_version,
        "summary": r.summary,
        "default_nodes": r.default_nodes,
        "default_gpus_per_node": r.default_gpus_per_node,
        "checkpoint_key": r.checkpoint_key,
        "defaults": dict(r.defaults),
        "config": r.config_file,
        "adapts_batch_sizes": r.adapt_batch,
    }


@app.command("recipes")
@handled
def recipes_cmd(as_json: opt.JsonOpt = False) -> None:
    """List recipes: framework, pinned version, defaults."""
    # Lazy, for start-up time: the catalogue and the layout only when this command runs.
    from jobs.cli import render
    from jobs.recipes.catalogue import RECIPES

    views = [_recipe_view(r) for r in RECIPES.values()]
    if as_json:
        emit_json(views)
        return
    out().print(render.recipes(views), soft_wrap=False)


# After `recipes`, in the order a run meets them: start it, then look at it.
app.registered_commands += submit.app.registered_commands
app.registered_commands += run.app.registered_commands
app.registered_commands += export.app.registered_commands
app.registered_commands += evaluate.app.registered_commands
app.registered_commands += stage.app.registered_commands
app.registered_commands += inspect.app.registered_commands
app.registered_commands += cost.app.registered_commands
app.registered_commands += run_report.app.registered_commands
app.add_typer(data_app, name="data")


def main() -> None:
    """Run the app as a program: SIGTERM, SIGHUP (terminal closed) and SIGQUIT unwind the stack,
    so `finally` blocks run and port-forwards are closed; by default they would kill the
    process on the spot and leave kubectl running."""

    def _on_signal(sig: int, _frame: object) -> None:
        raise Terminated(sig)

    for name in ("SIGTERM", "SIGHUP", "SIGQUIT"):
        if hasattr(signal, name):  # SIGHUP and SIGQUIT do not exist on Windows
            signal.signal(getattr(signal, name), _on_signal)
    commands.spelled_as(sys.argv[0])
    app(prog_name=commands.program())
