"""Continuing a run from its record: the preconditions, then the same path as a submit.

A resumed run keeps the recipe, overrides, size and checkpoint directory its latest attempt
recorded in Ray's job metadata (jobs/runs/metadata.py), with the `--set` changes and node count
its checkpoints still load under (jobs/runs/resume_changes.py; whether it saved one is read on
the head, jobs/runs/run_checkpoints.py, only when a change would be refused); only what the user
cannot change is checked here, everything else is `recipe_run.plan_recipe`'s.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from jobs.client.dashboard import Dashboard
from jobs.client.types import JobDetails
from jobs.common.errors import UsageError
from jobs.recipes import overrides
from jobs.recipes.catalogue import RECIPES, Recipe
from jobs.recipes.overrides import Override
from jobs.runs import (
    follow,
    handoff,
    plan,
    resume_changes,
    run_checkpoints,
    run_goodput,
    save_choice,
    state,
)
from jobs.runs.metadata import RecipeRun
from jobs.runs.recipe_run import Ask, Place, Planned, plan_recipe
from jobs.runs.state import Run


@dataclass
class Resumed:
    """The next attempt of a run, and the attempt it follows."""

    planned: Planned
    recipe: Recipe
    after: JobDetails
    next_attempt: int


def recorded_run(found: Run | None, run: str, where: str) -> RecipeRun:
    """The recipe run recorded by the run's latest attempt (or, when its supervisor died before
    attempt 1, by the hand-off), if it can be continued at all (state.not_resumable)."""
    refusal = state.not_resumable(found, run, where)
    if refusal is not None:
        raise refusal
    assert found is not None
    recorded = RecipeRun.of_job(found.attempt_metadata())
    assert recorded is not None  # not_resumable checked it
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
    every: save_choice.Every | None = None,
    changes: list[Override] | None = None,
    nodes: int | None = None,
    found: Run | None = None,
    watcher: follow.Watcher | None = None,
) -> Resumed:
    """The next attempt of `run` as its metadata records it, with the save period `every`
    (--checkpoint-every) asks when given, and the `--set` changes and node count the run's
    checkpoints still load under (jobs/runs/resume_changes.py; refused by name otherwise). With
    `watcher`, a run with no checkpoint saved (read on the head) may change them; without it, the
    run is taken to have one."""
    plan.check_run_name(run)
    if found is None:  # the caller may have listed the cluster's jobs already
        found = state.find(dashboard.jobs(), run)
    recorded = recorded_run(found, run, where)
    assert found is not None
    latest = found.latest
    recipe = recipe_named(recorded.recipe)
    if recipe_name is not None and recipe_name != recipe.name:
        raise UsageError(
            f"run {run} is a {recipe.name} run, not {recipe_name}",
            f"drop RECIPE or pass {recipe.name}",
        )
    saved = (
        functools.partial(_has_checkpoint, dashboard, recorded, watcher)
        if watcher is not None
        else _assume_saved
    )
    changes_note = resume_changes.check_changes(
        run, recipe, changes or [], recorded.nodes, nodes, saved
    )
    given, save_note = _with_save_period(dashboard, found, recorded, recipe, every, place)
    given = resume_changes.merged(given, changes or [])
    # The run's checkpoints already exist on Lustre: its size is reported, never refused.
    ask = Ask(
        recipe,
        run,
        given,
        nodes=nodes or recorded.nodes,
        gpus_per_node=recorded.gpus_per_node,
        framework=framework,
        force=True,
        force_reason="resumed: its checkpoints are already on Lustre",
        allow_unsandboxed=allow_unsandboxed,
    )
    planned = plan_recipe(ask, place)
    planned.notes.extend(note for note in (save_note, changes_note) if note)
    if planned.checkpoint_dir != recorded.checkpoint_dir:
        raise UsageError(
            f"run {run} checkpointed to {recorded.checkpoint_dir} but this version "
            f"of recipe {recipe.name} would use {planned.checkpoint_dir}",
            "resume with the rl-on-gke commit in its jobs_commit metadata",
        )
    if latest is None:  # the supervisor died before it sent attempt 1: that one comes now
        return Resumed(planned, recipe, found.supervisors[-1], recorded.attempt)
    return Resumed(planned, recipe, latest, recorded.attempt + 1)


def _with_save_period(
    dashboard: Dashboard,
    found: Run,
    recorded: RecipeRun,
    recipe: Recipe,
    every: save_choice.Every | None,
    place: Place,
) -> tuple[list[Override], str]:
    """The recorded overrides with the save period --checkpoint-every asks; `auto` reads what the
    run's attempts logged and its supervisors recorded (as `status` does)."""
    given = overrides.parse([str(i) for i in recorded.overrides])
    advice = None
    if every == save_choice.AUTO:
        records = handoff.events(dashboard, list(found.supervisors))
        spent, curves = run_goodput.of_run(found.attempts, records, dashboard.logs)
        provisioning = place.outputs.gpu_provisioning if place.outputs else None
        saves = run_goodput.save_advice(found.attempts, spent, curves, provisioning)
        advice = saves["young_daly"] if saves else None
    return save_choice.choose(recipe, given, every, advice, recorded.run)


def _assume_saved() -> bool:
    return True


def _has_checkpoint(dashboard: Dashboard, recorded: RecipeRun, watcher: follow.Watcher) -> bool:
    """Whether the run's checkpoint directory on the head holds the step a resume loads."""
    view = run_checkpoints.inventory(
        dashboard, recorded.run, recorded.checkpoint_dir, recorded.framework, watcher
    )
    return view.get("resume_step") is not None


def runs_root_kept(found: Run, asked: str, unsupervised: bool = False) -> tuple[str, str]:
    """The runs root the next attempt is supervised under, and what the resume says of it: the
    one the run's latest supervisor recorded unless --runs-root names another, or none when the
    resume is asked unsupervised (--max-preemptions 0, no restarts: a runs root is a supervisor's).
    A run refused for a runs root missing on the head is then refused the same way while it is
    missing, never sent without the records it asked for unless the user says so."""
    recorded = next(
        (spec.runs_root for s in reversed(found.supervisors) if (spec := state.spec_of(s))),
        "",
    )
    if not recorded or asked == recorded:
        return asked, ""
    if asked:
        return asked, f"runs root {asked} (run {found.name} was started with {recorded})"
    if unsupervised:
        return "", (
            f"run {found.name} was started with the runs root {recorded}: resumed unsupervised, "
            "its next attempt keeps no record there"
        )
    return recorded, f"keeping the runs root run {found.name} was started with: {recorded}"
