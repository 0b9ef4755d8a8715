"""The one path from a recipe to the Submission of its attempt: used by submit, resume and --dry-run alike.

Every check happens here, before anything is contacted: the framework the cluster runs, the size
the stack has, where model-written code runs, the composition through the framework's own config
code (jobs/recipes/prepare.py), and whether the kept checkpoints fit Lustre. A resume goes through
the same steps with what the run recorded, so it is refused or warned exactly like a submit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from jobs.client.dashboard import Dashboard
from jobs.client.types import Submission
from jobs.common.errors import UsageError
from jobs.recipes import ckpt_size, compose, frameworks, overrides, prepare, reward_placement
from jobs.recipes.catalogue import Recipe, RunContext
from jobs.recipes.overrides import Override
from jobs.runs import plan
from jobs.runs import stack as stack_module

if TYPE_CHECKING:
    from components.stack_outputs import StackOutputs


@dataclass(frozen=True)
class Ask:
    """What the user asked for: a recipe, its overrides and size, and what they accept."""

    recipe: Recipe
    run: str
    overrides: list[Override]
    nodes: int | None = None
    gpus_per_node: int | None = None
    framework: str | None = None  # --framework: the framework the cluster runs
    force: bool = False  # submit although the kept checkpoints would not fit Lustre
    force_reason: str = "submitted with --force"
    allow_unsandboxed: bool = False


@dataclass(frozen=True)
class Place:
    """Where it would run, as far as known before contacting it."""

    stack: str | None
    outputs: StackOutputs | None  # None on a dry run or with a bare address
    source: str  # "a dry run", "stack dev", "--address http://..."
    dry_run: bool = False


@dataclass
class Planned:
    """An attempt ready to send, with the notes that explain what was chosen."""

    submission: Submission
    notes: list[str] = field(default_factory=list)
    # Complete checkpoints the supervisor keeps between attempts (jobs/head/hygiene.py): veRL's
    # keep-N forgets earlier attempts' saves; NeMo RL prunes across attempts itself. 0: none.
    keep: int = 0
    # Where model-written code is judged (the stack's sandbox service), for an eval of the run.
    sandbox_url: str | None = None

    @property
    def gpus_needed(self) -> int:
        meta = self.submission.metadata
        return int(meta["nodes"]) * int(meta["gpus_per_node"])

    @property
    def checkpoint_dir(self) -> str:
        return self.submission.metadata["checkpoint_dir"]


def check_stack_nodes(nodes: int | None, outputs: StackOutputs, stack: str | None) -> None:
    stack_module.require_gpus(stack or "", outputs)  # a new attempt: refused on a parked stack
    if nodes is not None and nodes > outputs.gpu_node_count:
        raise UsageError(
            f"--nodes {nodes} but stack {stack} has {outputs.gpu_node_count} GPU node(s)",
            "lower --nodes or grow the stack's GPU pool",
        )


def _size(ask: Ask, place: Place, notes: list[str]) -> tuple[int, int]:
    recipe, outputs = ask.recipe, place.outputs
    if outputs is not None:
        frameworks.check_named(
            recipe.name, recipe.framework, outputs.ray_framework, f"stack {place.stack}"
        )
        check_stack_nodes(ask.nodes, outputs, place.stack)
        return ask.nodes or outputs.gpu_node_count, ask.gpus_per_node or outputs.gpus_per_node
    if place.dry_run and ask.nodes is None:
        notes.append(
            f"note: {recipe.default_nodes} node(s) is the recipe default; a dry run "
            "does not read the stack, pass --nodes to set it"
        )
    return ask.nodes or recipe.default_nodes, ask.gpus_per_node or recipe.default_gpus_per_node


def _check_lustre(ask: Ask, place: Place, composed: prepare.Composed, notes: list[str]) -> None:
    recipe = ask.recipe
    lustre_gib = place.outputs.lustre_capacity_gib if place.outputs is not None else None
    fits, message = ckpt_size.check(
        ckpt_size.footprint(recipe, composed.config), lustre_gib, place.source
    )
    if not fits and not ask.force:
        raise UsageError(
            f"recipe {recipe.name} would not fit Lustre: {message}",
            f"keep fewer checkpoints (--set {recipe.keep_key}=N), grow the "
            "stack's Lustre, or pass --force",
        )
    notes.append(message if fits else f"warning: {message} ({ask.force_reason})")


def plan_recipe(ask: Ask, place: Place) -> Planned:
    """The attempt-1 Submission of `ask` on `place`, or the UsageError that refuses it."""
    recipe = ask.recipe
    checked = overrides.check(recipe, ask.overrides, ask.run)
    frameworks.check_named(recipe.name, recipe.framework, ask.framework, "--framework")
    notes: list[str] = []
    nodes, gpus = _size(ask, place, notes)
    sandbox = reward_placement.decide(
        recipe, place.outputs, ask.allow_unsandboxed, place.source, dry_run=place.dry_run
    )
    notes.extend(sandbox.notes)
    wandb = place.outputs is not None and place.outputs.wandb_enabled
    composed = prepare.compose_run(
        recipe, RunContext(run=ask.run, nodes=nodes, gpus_per_node=gpus, wandb=wandb), checked
    )
    notes.extend(composed.notes)
    _check_lustre(ask, place, composed, notes)
    sub = plan.for_recipe(
        recipe,
        ask.run,
        nodes,
        gpus,
        ask.overrides,
        checked,
        place.stack,
        plan.git_commit(),
        wandb=wandb,
        composed=composed,
        code_sandbox_url=sandbox.url,
    )
    keep = compose.value(composed.config, recipe.keep_key)
    return Planned(
        sub,
        notes,
        keep=keep if recipe.framework == "verl" and isinstance(keep, int) else 0,
        sandbox_url=sandbox.url,
    )


def check_ray_version(recipe: Recipe, dashboard: Dashboard, address: str) -> str:
    """With a bare address and no --framework: judge by the Ray version the cluster runs.
    Returns what to tell the user, or raises when the recipe's framework cannot be there."""
    verdict = frameworks.by_ray_version(
        recipe.name, recipe.framework, dashboard.ray_version(), address
    )
    if verdict.refuse:
        raise UsageError(verdict.message, verdict.hint)
    return verdict.message
