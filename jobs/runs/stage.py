"""The stage job of a model: what `jobs stage` sends, decided before anything is contacted.

A model is staged once per stack (jobs/staging/ does the work on the cluster: the CLI's machine
cannot see Lustre). Given a recipe name, the model, the Hub datasets and whether NeMo RL's
Megatron conversion is needed come from the recipe; given a model id, from every recipe that
uses it. The download runs on the head (no reservation, so no spot GPU node can take it down
with it); a conversion reserves a GPU node's GPUs for its driver, in NeMo RL's image.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from components.contract import HF_HOME_ENV, HF_HOME_PATH
from jobs.client.dashboard import AlreadySubmitted, Dashboard
from jobs.client.types import Submission
from jobs.common.errors import UsageError
from jobs.recipes import compose
from jobs.recipes.catalogue import RECIPES, Recipe
from jobs.runs import plan
from jobs.runs.metadata import StageRun
from jobs.runs.plan import provenance
from jobs.staging import layout

if TYPE_CHECKING:
    from collections.abc import Callable

    from components.stack_outputs import StackOutputs

# Forwarded when the caller sets it: a Hub mirror or proxy the cluster reaches too.
FORWARDED_ENV = ("HF_ENDPOINT",)


@dataclass(frozen=True)
class Target:
    """What to stage: a model, the datasets its recipes load, and whether to convert it."""

    model: str
    datasets: tuple[str, ...]
    megatron_recipes: tuple[Recipe, ...]

    @property
    def converts(self) -> bool:
        return bool(self.megatron_recipes)


def target_of(name: str) -> Target:
    """A recipe name or a Hugging Face model id, as the user typed it."""
    if name in RECIPES:
        recipe = RECIPES[name]
        return Target(recipe.model, recipe.hub_datasets, (recipe,) if recipe.megatron else ())
    if not layout.is_model_id(name):
        raise UsageError(
            f"MODEL {name!r} is neither a recipe nor a Hugging Face model id",
            "give org/name as the Hub spells it, or a recipe from `rl-jobs recipes`",
        )
    users = [r for r in RECIPES.values() if r.model == name]
    datasets = tuple(dict.fromkeys(d for r in users for d in r.hub_datasets))
    return Target(name, datasets, tuple(r for r in users if r.megatron))


def stage_run(model: str) -> str:
    """The run name a model's stage jobs are grouped under: `stage-<model as a job id>`."""
    slug = re.sub(r"[^a-z0-9._-]+", "-", model.lower().replace("/", "--")).strip("-.")
    return f"stage-{slug[:48]}"


def stage_id(model: str, number: int) -> str:
    return f"{stage_run(model)}-{number}"


def next_number(submission_ids: list[str], model: str) -> int:
    prefix = f"{stage_run(model)}-"
    numbers = [
        int(s[len(prefix) :])
        for s in submission_ids
        if s.startswith(prefix) and s[len(prefix) :].isdigit()
    ]
    return max(numbers, default=0) + 1


def conversion_gpus(gpus: int | None, outputs: StackOutputs | None, stack: str | None) -> int:
    if outputs is not None and outputs.ray_framework not in ("", "nemo-rl"):
        raise UsageError(
            f"the Megatron conversion runs NeMo RL's code, and stack {stack} runs "
            f"{outputs.ray_framework}",
            "pass --no-convert to stage the snapshot only",
        )
    if gpus is None:
        return outputs.gpus_per_node if outputs is not None and outputs.gpus_per_node else 8
    if outputs is not None and gpus > outputs.gpus_per_node:
        raise UsageError(
            f"--gpus {gpus} but stack {stack}'s nodes have {outputs.gpus_per_node} GPU(s)",
            "the conversion runs on one node",
        )
    return gpus


def precision(recipe: Recipe) -> str:
    # The dtype NeMo RL passes as pipeline_dtype (`${policy.precision}`, grpo_math_1B_megatron
    # .yaml L90 @v0.4.0).
    return str(
        compose.value(compose.base_config(recipe.framework, recipe.config_file), "policy.precision")
        or "bfloat16"
    )


@dataclass(frozen=True)
class Ask:
    target: Target
    revision: str
    convert: bool
    gpus: int
    hf_home: str | None
    number: int


def for_stage(ask: Ask, stack: str | None) -> Submission:
    t = ask.target
    argv = ["python3", "-m", "jobs.staging.stage", "--model", t.model, "--revision", ask.revision]
    for spec in t.datasets:
        argv += ["--dataset", spec]
    if ask.convert:
        argv += ["--convert", "--gpus", str(ask.gpus), "--dtype", precision(t.megatron_recipes[0])]
    env = {HF_HOME_ENV: ask.hf_home or HF_HOME_PATH}
    env.update({k: os.environ[k] for k in FORWARDED_ENV if os.environ.get(k)})
    runtime_env = plan.shipped_env(env)
    meta = StageRun(
        run=stage_run(t.model),
        **provenance(stack, plan.git_commit()),
        model=t.model,
        revision=ask.revision,
        convert=ask.convert,
    )
    return Submission(
        submission_id=stage_id(t.model, ask.number),
        entrypoint=shlex.join(argv),
        runtime_env=runtime_env,
        metadata=meta.to_ray(),
        entrypoint_num_gpus=float(ask.gpus) if ask.convert else None,
    )


def ask(
    name: str,
    revision: str,
    convert: bool | None,
    gpus: int | None,
    hf_home: str | None,
    outputs: StackOutputs | None,
    stack: str | None,
    number: int,
) -> Ask:
    """What `stage NAME` asks for, checked: a conversion only where a Megatron recipe reads one,
    and on no more GPUs than one of the stack's nodes has."""
    target = target_of(name)
    if convert and not target.converts:
        raise UsageError(
            f"--convert: no Megatron recipe uses {target.model}, so there is no "
            "conversion NeMo RL would read",
            "stage it without --convert",
        )
    converting = target.converts if convert is None else convert
    n = conversion_gpus(gpus, outputs, stack) if converting else 0
    return Ask(target, revision, converting, n, hf_home, number)


def submit(
    dashboard: Dashboard, name: str, stack: str | None, ask_numbered: Callable[[int], Ask]
) -> tuple[str, Ask]:
    """Send the next stage job of NAME's model, as `ask_numbered` (`ask` but for the job's
    number) asks; two stages of one model racing for the same number collide, and the loser is
    told so."""
    model = target_of(name).model  # a bad NAME is refused before the cluster is asked
    number = next_number([j.submission_id or "" for j in dashboard.jobs()], model)
    the_ask = ask_numbered(number)
    sub = for_stage(the_ask, stack)
    try:
        return dashboard.submit(sub), the_ask
    except AlreadySubmitted:
        raise UsageError(
            f"{sub.submission_id} already exists on this cluster",
            "another stage of this model started at the same time",
        ) from None
