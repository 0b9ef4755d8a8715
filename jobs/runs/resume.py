"""Continuing a run from its record: the preconditions, then the same path as a submit.

A resumed run keeps the recipe, overrides, size and checkpoint directory its latest attempt
recorded in Ray's job metadata (jobs/runs/metadata.py); only what the user cannot change is
checked here, everything else is `recipe_run.plan_recipe`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

from jobs.client.dashboard import Dashboard
from jobs.client.types import JobDetails, JobStatus
from jobs.common import commands
from jobs.common.errors import UsageError
from jobs.head import protocol
from jobs.recipes import overrides
from jobs.recipes.catalogue import RECIPES, Recipe
from jobs.runs import listing, plan
from jobs.runs.metadata import RecipeRun
from jobs.runs.recipe_run import Ask, Place, Planned, plan_recipe


@dataclass
class Resumed:
    """The next attempt of a run, and the attempt it follows."""

    planned: Planned
    recipe: Recipe
    after: JobDetails
    next_attempt: int


def recorded_run(latest: JobDetails, run: str, where: str) -> RecipeRun:
    """The recipe run recorded by a run's latest attempt, if it can be continued at all."""
    job_id = latest.submission_id or run
    if not latest.status.is_terminal():
        raise UsageError(
            f"run {run} is still {latest.status.value} ({job_id})",
            f"follow it with {commands.command('logs', job_id, '--follow', where=where)}"
            ", or stop it first",
        )
    if latest.status == JobStatus.SUCCEEDED:
        raise UsageError(
            f"run {run} already SUCCEEDED ({job_id}); nothing to resume",
            "start a new run with another --name",
        )
    kind = listing.metadata_of(latest).kind
    if kind != protocol.RECIPE:
        raise UsageError(
            f"run {run} was started with {commands.started_with(kind)}"
            "; --resume continues recipe runs",
            f"start the command again with {commands.command('run', where=where)} -- COMMAND ...",
        )
    recorded = RecipeRun.of_job(latest.metadata)
    if recorded is None:
        raise UsageError(
            f"{job_id} has unreadable or incomplete metadata, so it cannot be resumed",
            f"start a new run with {commands.command('submit', 'RECIPE', where=where)}",
        )
    return recorded


def recipe_named(name: str) -> Recipe:
    import difflib

    if name in RECIPES:
        return RECIPES[name]
    close = difflib.get_close_matches(name, list(RECIPES), n=2, cutoff=0.4)
    hint = f"did you mean {' or '.join(close)}?" if close else f"known: {', '.join(RECIPES)}"
    raise UsageError(f"unknown recipe {name!r}", hint)


def resume(
    dashboard: Dashboard,
    run: str,
    recipe_name: str | None,
    framework: str | None,
    allow_unsandboxed: bool,
    place: Place,
    where: str,
) -> Resumed:
    """The next attempt of `run` exactly as its metadata records it."""
    plan.check_run_name(run)
    latest = listing.latest_attempt(dashboard, run, where)
    recorded = recorded_run(latest, run, where)
    recipe = recipe_named(recorded.recipe)
    if recipe_name is not None and recipe_name != recipe.name:
        raise UsageError(
            f"run {run} is a {recipe.name} run, not {recipe_name}",
            f"drop RECIPE or pass {recipe.name}",
        )
    # The run's checkpoints already exist on Lustre: its size is reported, never refused.
    ask = Ask(
        recipe,
        run,
        overrides.parse([str(i) for i in recorded.overrides]),
        nodes=recorded.nodes,
        gpus_per_node=recorded.gpus_per_node,
        framework=framework,
        force=True,
        force_reason="resumed: its checkpoints are already on Lustre",
        allow_unsandboxed=allow_unsandboxed,
    )
    planned = plan_recipe(ask, place)
    if planned.checkpoint_dir != recorded.checkpoint_dir:
        raise UsageError(
            f"run {run} checkpointed to {recorded.checkpoint_dir} but this version "
            f"of recipe {recipe.name} would use {planned.checkpoint_dir}",
            "resume with the rl-on-gke commit in its jobs_commit metadata",
        )
    return Resumed(planned, recipe, latest, recorded.attempt + 1)
